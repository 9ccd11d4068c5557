"""Shared shape and dtype rules for op entries, with the errors popxl gives."""
from __future__ import annotations

from typing import Iterable, Optional, Sequence, Union

import numpy as np

from workbench.ir import TensorSpec, dtypes


def broadcast_shape(op_type: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    first = tuple(shapes[0])
    if all(tuple(shape) == first for shape in shapes[1:]):  # the common case, without NumPy
        return first
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{op_type}: shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be "
                         "broadcast together (NumPy broadcasting rules)") from None


def same_dtype(op_type: str, specs: Sequence[TensorSpec]) -> dtypes.dtype:
    first = specs[0].dtype
    for spec in specs[1:]:
        if spec.dtype is not first:
            raise TypeError(f"{op_type}: inputs must have the same dtype, got "
                            f"{', '.join(s.dtype.name for s in specs)}; cast one with ops.cast")
    return first


def check_dtype(op_type: str, spec: TensorSpec, allowed: str) -> None:
    """``allowed``: 'float', 'int', 'bool', 'number' (int or float) or 'any'."""
    dtype = spec.dtype
    if allowed == "float":
        ok = dtype.is_floating_point
    elif allowed == "number":
        ok = dtype.is_int or dtype.is_floating_point
    elif allowed == "int":
        ok = dtype.is_int
    elif allowed == "bool":
        ok = dtype is dtypes.bool_
    elif allowed == "any":
        ok = True
    else:
        raise ValueError(f"{op_type}: unknown dtype class {allowed!r}")
    if not ok:
        raise TypeError(f"{op_type}: expected a {allowed} tensor, got {dtype.name}")


def normalize_axis(op_type: str, axis: int, rank: int) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{op_type}: axis must be an int, got {axis!r}")
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"{op_type}: axis {axis} is out of range for a tensor of rank {rank} "
                         f"(expected {-rank}..{max(rank, 1) - 1})")
    return int(axis) % max(rank, 1)


def normalize_axes(op_type: str, axis: Optional[Union[int, Iterable[int]]], rank: int) -> tuple[int, ...]:
    """All axes when ``axis`` is None; otherwise the given axes made non-negative, without repeats."""
    if axis is None:
        return tuple(range(rank))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    result = tuple(normalize_axis(op_type, a, rank) for a in axes)
    if len(set(result)) != len(result):
        raise ValueError(f"{op_type}: axis {axis} repeats an axis")
    return result


def same_spec(specs: Sequence[TensorSpec], attrs) -> list[TensorSpec]:
    """Output like input 0."""
    return [TensorSpec(specs[0].shape, specs[0].dtype)]
