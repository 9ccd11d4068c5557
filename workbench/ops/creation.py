"""Ops that make new tensors from nothing: init."""
from __future__ import annotations

from typing import Iterable, Literal, Optional

import numpy as np

from workbench.ir import Tensor, TensorSpec, dtypes

from .registry import OpDef, create_op, register

__all__ = ["init"]


def init(shape: Iterable[int], dtype: dtypes.dtype, name: Optional[str] = None,
         init_type: Literal["zero", "undef"] = "zero", meta_shape: Optional[Iterable[int]] = None) -> Tensor:
    """A new tensor of zeros (``init_type='undef'`` promises nothing about its values; here it is
    zeros too)."""
    if init_type not in ("zero", "undef"):
        raise ValueError(f"init: init_type must be 'zero' or 'undef', got {init_type!r}")
    spec = TensorSpec(tuple(shape), dtype, tuple(meta_shape or ()))
    return create_op("init", [], {"init_type": init_type, "spec": spec}, output_names=[name]).outputs[0]


def _init_infer(specs, attrs) -> list[TensorSpec]:
    """The tensor ``attrs["spec"]`` describes."""
    return [attrs["spec"]]


def _init_kernel(op, env):
    spec = op.outputs[0].spec
    shape, numpy_dtype = spec.shape, spec.dtype.as_numpy()
    return lambda: np.zeros(shape, numpy_dtype)


register(OpDef("init", _init_infer, kernel=_init_kernel, fills=True, popart_class="InitOp"))
