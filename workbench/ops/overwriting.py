"""Kernels that write an out-of-place op's result over its input 0, for where that input dies at the op.

The op stays what it is in the IR (``relu``, not ``relu_``); only the runtime, having found that
nothing else will read input 0 (``runtime/execution/reuse.py``), binds one of these instead of the
op's own kernel, saving a fresh array and its first-touch page faults. Each kernel gives the same
values as the op's own kernel, and returns input 0 itself.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from workbench.ir import Op

from . import activations, convolution, elementwise, shape  # noqa: F401 (register the op types below)
from .nn import batch_norm_factors
from .registry import op_def

Kernel = Callable[..., np.ndarray]


def _relu(op: Op, env) -> Kernel:
    """max(x, 0) against rows of zeros (``activations.zero_rows``), into x itself."""
    rows, zeros = activations.zero_rows(op.inputs[0].shape, np.dtype(op.inputs[0].dtype.as_numpy()))

    def relu(x):
        if not x.flags.c_contiguous:  # a reshape would copy, and the result would not land in x
            return np.maximum(x, 0, out=x)
        flat = x.reshape(rows)
        np.maximum(flat, zeros, out=flat)
        return x
    return relu


def _binary(ufunc: np.ufunc) -> Callable[[Op, object], Kernel]:
    def build(op: Op, env) -> Kernel:
        return lambda x, other: ufunc(x, other, out=x)
    return build


def _batch_norm_inference(op: Op, env) -> Optional[Kernel]:
    """None for float16, which the op's own kernel computes in float32 and rounds once."""
    if op.inputs[0].dtype.as_numpy() != np.float32:
        return None
    factors = batch_norm_factors(op)

    def batch_norm(x, scale, bias, mean, var):
        factor, shift = factors(scale, bias, mean, var)
        np.multiply(x, factor, out=x)
        return np.add(x, shift, out=x)
    return batch_norm


OVERWRITING: dict[str, Callable[[Op, object], Optional[Kernel]]] = {
    "relu": _relu,
    "add": _binary(np.add),
    "mul": _binary(np.multiply),
    "batch_norm_inference": _batch_norm_inference,
}
"""Op type -> builder of the kernel writing that op's result over input 0 (of the result's shape and
dtype), or giving None where it cannot."""

FRESH_RESULTS = frozenset({"conv", "batch_norm_inference", "relu", "add", "mul", "max_pool", "average_pool",
                           "concat"})
"""Op types whose kernels return a new array that aliases none of their inputs (or, where the
runtime binds one of the kernels above, their input 0, itself such an array)."""

for _type in (*OVERWRITING, *FRESH_RESULTS):
    op_def(_type)  # a misspelt type fails at import
