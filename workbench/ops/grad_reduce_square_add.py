"""The scaled sum of squares of popxl-addons' ``GradReduceSquareAddOp`` C++ custom op (emulated in
``workbench.popart._internal.custom_ops``): ``scale * sum(t * t)`` over every element, a float32 scalar,
the squares taken and added in float32. popxl-addons passes ``1 / loss_scaling ** 2`` as the scale, for the
norm of a loss-scaled gradient. It has no gradient.
"""
from __future__ import annotations

import numpy as np

from workbench.ir import Tensor, TensorSpec, dtypes

from .registry import OpDef, create_op, register

OP_TYPE = "grad_reduce_square_add"


def _infer(specs, attrs):
    if specs[1].nelms != 1:
        raise ValueError(f"{OP_TYPE}: the scale must be a single value, got shape {specs[1].shape}")
    return [TensorSpec((), dtypes.float32)]


def _kernel(op, env):
    def run(t, scale):
        flat = t.reshape(-1).astype(np.float32)
        return np.float32(scale.reshape(()).astype(np.float32) * np.dot(flat, flat)).reshape(())
    return run


register(OpDef(OP_TYPE, _infer, _kernel, popart_class="GradReduceSquareAddOp"))


def grad_reduce_square_add(t: Tensor, scale: Tensor) -> Tensor:
    """``scale * sum(t * t)``, in float32."""
    return create_op(OP_TYPE, [t, scale], output_names=[t.name + "_square_sum"]).outputs[0]
