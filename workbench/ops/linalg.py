"""Matrix multiplication."""
from __future__ import annotations

from typing import Optional

import numpy as np

from workbench.ir import Tensor, TensorSpec, dtypes

from .registry import OpDef, apply, register

__all__ = ["matmul"]
from .rules import broadcast_shape, check_dtype, same_dtype


def _matmul_infer(specs, attrs) -> list[TensorSpec]:
    lhs, rhs = specs[0], specs[1]
    dtype = same_dtype("matmul", specs[:2])
    check_dtype("matmul", lhs, "number")
    if not lhs.shape or not rhs.shape:
        raise ValueError(f"matmul: operands must have at least one dimension, got {lhs.shape} and "
                         f"{rhs.shape}")
    a = lhs.shape if len(lhs.shape) > 1 else (1, *lhs.shape)
    b = rhs.shape if len(rhs.shape) > 1 else (*rhs.shape, 1)
    if a[-1] != b[-2]:
        raise ValueError(f"matmul: inner dimensions differ: {lhs.shape} @ {rhs.shape} "
                         f"({a[-1]} != {b[-2]})")
    shape = broadcast_shape("matmul", a[:-2], b[:-2]) + (a[-2], b[-1])
    if len(lhs.shape) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(rhs.shape) == 1:
        shape = shape[:-1]
    output_type = attrs.get("output_type")
    return [TensorSpec(shape, output_type or dtype)]


def _matmul_kernel(op, env):
    out = op.outputs[0].dtype.as_numpy()
    if out == op.inputs[0].dtype.as_numpy():
        return np.matmul
    return lambda a, b: np.matmul(a, b).astype(out)


register(OpDef("matmul", _matmul_infer, _matmul_kernel))


def matmul(lhs: Tensor, rhs: Tensor, available_memory_proportion: Optional[float] = None,
           output_type: Optional[dtypes.dtype] = None, partials_type: Optional[dtypes.dtype] = None) -> Tensor:
    """Matrix product with NumPy's rules for vectors and batch broadcasting."""
    return apply("matmul", lhs, rhs, output_type=output_type)
