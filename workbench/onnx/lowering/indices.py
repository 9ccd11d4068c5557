"""Index inputs as PopART takes them: it does not check their element type, so a model may give a
float tensor of indices (a Gather's, a ScatterReduce's). The workbench takes such indices by value."""
from __future__ import annotations

from workbench import ops
from workbench.ir import Tensor, dtypes


def integer_indices(indices: Tensor) -> Tensor:
    """``indices`` unchanged when integer, else cast to int32 (each value truncated toward zero)."""
    if indices.dtype.is_int:
        return indices
    return ops.cast(indices, dtypes.int32)
