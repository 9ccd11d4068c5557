"""Ops that make new tensors from nothing: init."""
from __future__ import annotations

from typing import Iterable, Literal, Optional

import numpy as np

from workbench.ir import Tensor, TensorSpec, dtypes, get_current_graph

from .registry import OpDef, register

__all__ = ["init"]


def init(shape: Iterable[int], dtype: dtypes.dtype, name: Optional[str] = None,
         init_type: Literal["zero", "undef"] = "zero", meta_shape: Optional[Iterable[int]] = None) -> Tensor:
    """A new tensor of zeros (``init_type='undef'`` promises nothing about its values; here it is
    zeros too)."""
    if init_type not in ("zero", "undef"):
        raise ValueError(f"init: init_type must be 'zero' or 'undef', got {init_type!r}")
    spec = TensorSpec(tuple(shape), dtype, tuple(meta_shape or ()))
    op = get_current_graph()._add_op("init", [], [spec], attrs={"init_type": init_type},
                                     output_names=[name])
    return op.outputs[0]


def _init_kernel(op, env):
    spec = op.outputs[0].spec
    shape, numpy_dtype = spec.shape, spec.dtype.as_numpy()
    return lambda: np.zeros(shape, numpy_dtype)


register(OpDef("init", infer=None, kernel=_init_kernel, fills=True, popart_class="InitOp"))
