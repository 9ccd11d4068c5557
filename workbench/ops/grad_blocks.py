"""Building blocks that gradient rules share: zero padding, strided placement and extraction,
scatter-adds and element gathers, made of ordinary ops.

They reach shape and indexing ops through the registry (``apply``), so the op families that use
them can import this module without an import cycle.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from workbench.ir import Tensor, constant, dtypes

from .creation import init
from .elementwise import mul
from .elementwise_nary import where
from .reductions import sum as reduce_sum
from .registry import apply, apply_many


def zeros(shape: Sequence[int], dtype: dtypes.dtype) -> Tensor:
    return init(tuple(shape), dtype)


def zero_like(t: Tensor) -> Tensor:
    """A scalar zero of ``t``'s dtype, for ``where``."""
    return constant(0, dtype=t.dtype)


def reshape(t: Tensor, shape: Sequence[int]) -> Tensor:
    shape = tuple(int(d) for d in shape)
    return t if t.shape == shape else apply("reshape", t, shape=shape)


def transpose(t: Tensor, permutation: Sequence[int]) -> Tensor:
    permutation = tuple(int(p) for p in permutation)
    return t if permutation == tuple(range(t.rank)) else apply("transpose", t, permutation=permutation)


def concat(ts: Sequence[Tensor], axis: int) -> Tensor:
    ts = [t for t in ts if t.shape[axis]]
    return ts[0] if len(ts) == 1 else apply("concat", *ts, axis=axis)


def keep_first(t: Tensor, axis: int, length: int) -> Tensor:
    """The first ``length`` entries of ``t`` along ``axis``."""
    extra = t.shape[axis] - length
    return t if not extra else apply_many("split", t, axis=axis, splits=(length, extra))[0]


def pad(t: Tensor, axis: int, before: int, after: int) -> Tensor:
    """``t`` with ``before`` zeros ahead of it and ``after`` zeros behind it along ``axis``."""
    def block(length):
        return zeros(t.shape[:axis] + (length,) + t.shape[axis + 1:], t.dtype)
    return concat([block(before), t, block(after)], axis)


def spread(t: Tensor, axis: int, stride: int, length: int) -> Tensor:
    """Entry ``i`` of ``t`` at position ``i * stride`` of a zero tensor of ``length`` along ``axis``."""
    count, before, after = t.shape[axis], t.shape[:axis + 1], t.shape[axis + 1:]
    if stride > 1 and count > 1:
        gaps = zeros(before + (stride - 1,) + after, t.dtype)
        interleaved = concat([reshape(t, before + (1,) + after), gaps], axis + 1)
        t = reshape(interleaved, t.shape[:axis] + (count * stride,) + after)
    if t.shape[axis] > length:
        return keep_first(t, axis, length)
    return pad(t, axis, 0, length - t.shape[axis])


def place(t: Tensor, shape: Sequence[int], starts: Sequence[int], strides: Sequence[int],
          axes: Sequence[int]) -> Tensor:
    """A zero tensor of ``shape`` holding entry ``i`` of ``t`` at ``starts[k] + i * strides[k]``
    along each ``axes[k]``: the transpose of ``take``."""
    for axis, start, stride in zip(axes, starts, strides):
        t = pad(spread(t, axis, stride, shape[axis] - start), axis, start, 0)
    return t


def take(t: Tensor, starts: Sequence[int], strides: Sequence[int], counts: Sequence[int],
         axes: Sequence[int]) -> Tensor:
    """Entries ``starts[k] + i * strides[k]`` (``i < counts[k]``) of ``t`` along each ``axes[k]``."""
    stops = tuple(start + (count - 1) * stride + 1 for start, stride, count in zip(starts, strides, counts))
    t = apply("slice", t, start=tuple(starts), stop=stops, step=(1,) * len(axes), axis=tuple(axes))
    every = [1] * t.rank
    for axis, stride in zip(axes, strides):
        every[axis] = stride
    return t if all(s == 1 for s in every) else apply("subsample", t, strides=tuple(every))


def reverse(t: Tensor, axis: int) -> Tensor:
    return apply("slice", t, start=(-1,), stop=(-2 ** 31,), step=(-1,), axis=(axis,))


def scatter_add(t: Tensor, indices: Tensor, axis: int, length: int) -> Tensor:
    """Sum the entries of ``t`` along ``axis`` into ``length`` positions given by ``indices`` (a
    vector along ``axis``, or indices of ``t``'s shape)."""
    return apply("scatter_reduce", t, indices, reduction="sum", axis=axis, axis_size=int(length))


def take_elements(t: Tensor, indices: Tensor, axis: int) -> Tensor:
    """``out[p] = t[p with coordinate axis replaced by indices[p]]`` (ONNX GatherElements), for
    ``indices`` no larger than ``t`` in the other axes. Built from a one-hot mask of the indices."""
    length = t.shape[axis]
    key_stops = tuple(n for i, n in enumerate(indices.shape) if i != axis)
    others = tuple(i for i in range(t.rank) if i != axis)
    if any(t.shape[i] != n for i, n in zip(others, key_stops)):
        t = apply("slice", t, start=(0,) * len(others), stop=key_stops, step=(1,) * len(others), axis=others)
    moved = transpose(t, others + (axis,))
    lined_up = reshape(moved, moved.shape[:axis] + (1,) + moved.shape[axis:])
    hot = apply("onehot", indices, constant(length, dtypes.int32), constant(np.array([0, 1]), dtype=t.dtype),
                axis=indices.rank, depth=length)
    return reduce_sum(mul(hot, lined_up), axis=indices.rank)


def broadcast_indices(indices: Tensor, shape: Sequence[int]) -> Tensor:
    """``indices`` broadcast to ``shape`` (by adding integer zeros)."""
    if indices.shape == tuple(shape):
        return indices
    return apply("add", indices, zeros(shape, indices.dtype))


def sum_per_channel(t: Tensor) -> Tensor:
    """Sum over every axis but axis 1: one value per channel of an [N, C, ...] tensor."""
    return reduce_sum(t, axis=(0,) + tuple(range(2, t.rank)))


def masked(mask: Tensor, t: Tensor) -> Tensor:
    """``t`` where ``mask`` holds, else zero."""
    return where(mask, t, zero_like(t))


def optional_zeros(grad: Optional[Tensor], like: Tensor) -> Tensor:
    """``grad``, or zeros of ``like``'s shape and dtype when no gradient flows."""
    return zeros(like.shape, like.dtype) if grad is None else grad
