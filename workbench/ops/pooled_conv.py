"""A convolution whose relu'd result only a 3×3 max pool of stride 2 reads, as the stems of SqueezeNet,
ResNet and Inception do (conv, maybe batch norm, relu, max pool): the pool then needs no strided pass.

The matrix product of im2col writes the convolution's output split by the parity of each output row and
column: per channel, four phase planes of (pooled rows + 1) × (pooled columns + 1) slots, slot t of
phase h along an axis holding output position 2 (t - p) + h, with p the pool's padding (0 or 1). Along
each axis a pool window then reads one phase at slot I and the other at slot I or I + 1, so each axis of
the pool is two maxima of whole planes shifted by one slot or one row of slots (long contiguous inner
loops, over half and then a quarter of the data) where the planar pool makes four full-size passes and a
strided pick. The relu commutes with the maximum, so it is taken on the pooled result; slots that hold
no output of the convolution (before its first or past its last row or column) are set to zero, which
the relu makes harmless. The convolution's step gives the phase planes in an array of its output's shape
(only the pool reads it, in a plain run); the pool's step gives the pooled result.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import numpy as np

from workbench.ir import Op

from . import winograd
from .activations import zero_rows
from .conv_kernels import CHUNK_BYTES, Destination, Pads

POOL_KERNEL, POOL_STRIDE = (3, 3), (2, 2)


def pools_phases(op: Op) -> bool:
    """A 2-D float32 max pool, 3×3, stride 2, undilated, padded by 0 or 1 at the start of each axis."""
    attrs = op.attrs
    return (op.type == "max_pool" and len(op.inputs[0].shape) == 4 and len(op.outputs) == 1
            and op.inputs[0].dtype.as_numpy() == np.float32 and tuple(attrs["kernel_size"]) == POOL_KERNEL
            and tuple(attrs["stride"]) == POOL_STRIDE and tuple(attrs["dilation"]) == (1, 1)
            and all(p in (0, 1) for p in attrs["pads_begin"]))


def writes_phases(op: Op) -> bool:
    """A 2-D convolution of one group that Winograd's method would not compute faster: what writes its
    output as phase planes, by im2col."""
    if not (op.type == "conv" and len(op.inputs[0].shape) == 4 and op.attrs["groups"] == 1):
        return False
    attrs = op.attrs
    return not winograd.applies(op.inputs[0].shape, op.inputs[1].shape, attrs["stride"], attrs["dilation"], 1,
                                op.outputs[0].shape[2:], constant_weight=True)


def _taps(pad: int) -> list[tuple[int, int]]:
    """Along one axis, for each of the pool window's 3 positions: (phase, slot shift from I)."""
    return [((a - pad) % 2, (a - pad) // 2 + pad) for a in range(3)]


def _empty_slots(pad: int, slots: int, length: int) -> list[list[slice]]:
    """Along one axis, for phase 0 and 1: the ranges of slots holding no output of the convolution
    (``length`` outputs)."""
    found = []
    for phase in (0, 1):
        held = [t for t in range(slots) if 0 <= 2 * (t - pad) + phase < length]
        low, high = (held[0], held[-1] + 1) if held else (slots, slots)
        found.append([s for s in (slice(0, low), slice(high, slots)) if s.start < s.stop])
    return found


def _window_groups(split: np.ndarray, kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
                   slots: Sequence[int], row: int, col: int) -> list[tuple[int, int, np.ndarray]]:
    """For output phase (``row``, ``col``): the windows of every slot as (first kernel column, kernel columns,
    [N, C_in, kernel rows, kernel columns, slot rows, slot columns] view of ``split``), one view per run of
    kernel columns that read the same slot's column block, each view's last axis contiguous."""
    n, step, c_in, height, width = split.shape
    item = split.itemsize
    s_n, s_m, s_c = split.strides[:3]
    starts = [stride[1] * col + k * dilation[1] for k in range(kernel[1])]
    groups = []
    for k in range(kernel[1]):
        if k and starts[k] // step == starts[k - 1] // step:
            continue
        count = 1
        while k + count < kernel[1] and starts[k + count] // step == starts[k] // step:
            count += 1
        offset = (starts[k] % step) * s_m + (stride[0] * row * width + starts[k] // step) * item
        groups.append((k, count, np.ndarray((n, c_in, kernel[0], count, *slots), np.float32, split, offset,
                                            (s_n, s_c, dilation[0] * width * item, dilation[1] * s_m,
                                             2 * stride[0] * width * item, item))))
    return groups


def _band(start: int, stop: int, rows: int) -> tuple[int, int, list[tuple[int, int, int, int]]]:
    """Rows ``start`` to ``stop`` of the four phases' ``rows`` slot rows each, one after another: the band,
    and its pieces as (phase, first slot row, last slot row + 1, first row within the band)."""
    pieces = []
    for phase in range(4):
        first, last = max(start, phase * rows), min(stop, (phase + 1) * rows)
        if first < last:
            pieces.append((phase, first - phase * rows, last - phase * rows, first - start))
    return start, stop, pieces


class _Phases:
    """The phase planes of one call, from the convolution's step to the pool's."""

    __slots__ = ("planes",)

    def __init__(self) -> None:
        self.planes: Optional[np.ndarray] = None


def pooled_conv(x_shape: Sequence[int], weight: np.ndarray, bias: Optional[np.ndarray], stride: Sequence[int],
                dilation: Sequence[int], pads: Pads, conv_out: Sequence[int], pool_pads: Sequence[int],
                pool_out: Sequence[int], destination: Destination = None) -> tuple[Callable, Callable]:
    """The kernels of the convolution's step, ``conv(x, weight)`` (``weight`` a constant, read here once,
    the argument ignored; ``bias`` one value per output channel or None), and of the pool's step,
    ``pool(phases)``: max(0, max pool of the convolution's result), into ``destination()`` where given."""
    n, c_in, c_out = x_shape[0], x_shape[1], weight.shape[0]
    kernel = tuple(weight.shape[2:])
    slots = tuple(o + 1 for o in pool_out)  # per axis
    plane = slots[0] * slots[1]
    # The input padded by the convolution's pads, and on each axis's start by 2 p s more, so that slot 0 of
    # phase 0 (output position -2p) begins at 0; and at the end far enough for the last slot's window.
    begin = tuple(2 * p * s + b for p, s, (b, _) in zip(pool_pads, stride, pads))
    size = tuple(max(2 * p * s + b + x + e, s * (2 * t - 1) + (k - 1) * d + 1)
                 for p, s, (b, e), x, t, k, d in zip(pool_pads, stride, pads, x_shape[2:], slots, kernel, dilation))
    padded = np.zeros((n, c_in, *size), np.float32)
    inside = (slice(None), slice(None)) + tuple(slice(b, b + x) for b, x in zip(begin, x_shape[2:]))
    item = padded.itemsize
    # Slot columns step 2 s columns of the padded input: its columns are split by their remainder modulo
    # that step (``split``), so that each window copy reads whole runs of slots one after another (about
    # twice as fast as every 2 s-th value: ResNet's stem 0.7 ms -> 0.3 ms).
    step = 2 * stride[1]
    last_start = stride[1] + (kernel[1] - 1) * dilation[1]  # of the last kernel column of column phase 1
    split_width = max(-(-size[1] // step), slots[1] + last_start // step)
    split = np.zeros((n, step, c_in, size[0], split_width), np.float32)
    remainders = [(split[:, m, :, :, :len(range(m, size[1], step))], (Ellipsis, slice(m, None, step)))
                  for m in range(step)]
    views = [_window_groups(split, kernel, stride, dilation, slots, row, col) for row in (0, 1) for col in (0, 1)]
    rows = c_in * math.prod(kernel)
    weight_and_bias = np.concatenate([np.asarray(weight, np.float32).reshape(c_out, rows),
                                      np.zeros((c_out, 1), np.float32) if bias is None
                                      else np.asarray(bias, np.float32).reshape(c_out, 1)], axis=1)
    # Bands of slot rows, the four phases' rows one after another (as the planes lie per channel), each
    # band's column matrix small enough to stay in cache between its copy and its product.
    row_bytes = rows * slots[1] * item
    all_rows = 4 * slots[0]
    band = all_rows if row_bytes * all_rows <= 2 * CHUNK_BYTES else max(1, CHUNK_BYTES // row_bytes)
    bands = [_band(start, min(all_rows, start + band), slots[0]) for start in range(0, all_rows, band)]
    planes_size = n * c_out * 4 * plane
    # one slot more than the planes: the last shifted read of the pool's first axis reaches it (never kept)
    total = max(planes_size + 1, n * c_out * math.prod(conv_out))
    conv_shape = (n, c_out, *conv_out)
    empty_rows, empty_cols = (_empty_slots(p, t, length) for p, t, length in zip(pool_pads, slots, conv_out))
    held = _Phases()

    def conv(x: np.ndarray, _weight: np.ndarray) -> np.ndarray:
        padded[inside] = x
        for target, picked in remainders:
            np.copyto(target, padded[picked])
        flat = np.empty(total, np.float32)
        planes = flat[:planes_size].reshape(n, c_out, 4, plane)
        cols = np.empty((rows + 1) * band * slots[1], np.float32)
        for image in range(n):
            by_rows = planes[image].reshape(c_out, 4 * plane)
            for start, stop, pieces in bands:
                width = (stop - start) * slots[1]
                matrix = cols[:(rows + 1) * width].reshape(rows + 1, width)
                columns = matrix[:rows].reshape(c_in, *kernel, width)
                for phase, first, last, at in pieces:
                    into = columns[..., at * slots[1]:(at + last - first) * slots[1]].reshape(
                        c_in, *kernel, last - first, slots[1])
                    for k, count, view in views[phase]:
                        np.copyto(into[:, :, k:k + count], view[image, ..., first:last, :])
                matrix[rows] = 1
                np.matmul(weight_and_bias, matrix, out=by_rows[:, start * slots[1]:stop * slots[1]])
        by_phase = planes.reshape(n, c_out, 2, 2, *slots)
        for row in (0, 1):
            for empty in empty_rows[row]:
                by_phase[:, :, row, :, empty] = 0
        for col in (0, 1):
            for empty in empty_cols[col]:
                by_phase[:, :, :, col, :, empty] = 0
        held.planes = flat
        return flat[:math.prod(conv_shape)].reshape(conv_shape)

    return conv, _pool(n, c_out, slots, pool_pads, pool_out, held, destination)


def _pool(n: int, c_out: int, slots: Sequence[int], pool_pads: Sequence[int], pool_out: Sequence[int],
          held: _Phases, destination: Destination) -> Callable:
    """The pool's kernel over the phase planes that ``held`` has from the convolution's step."""
    channels, plane = n * c_out, slots[0] * slots[1]
    item = np.dtype(np.float32).itemsize
    # across columns: for both row phases at once, each column tap's phase plane shifted by its slot shift
    column_taps = [(col * plane + shift, (channels, 2, plane), (4 * plane * item, 2 * plane * item, item))
                   for col, shift in _taps(pool_pads[1])]
    # across rows: each row tap's row-phase plane shifted by whole rows of slots
    length = pool_out[0] * slots[1]
    row_taps = [(row * plane + shift * slots[1], (channels, length), (2 * plane * item, item))
                for row, shift in _taps(pool_pads[0])]
    relu_rows, zeros = zero_rows((channels * length,), np.dtype(np.float32))
    by_slots = (n, c_out, pool_out[0], slots[1])

    def pool(_phases: np.ndarray) -> np.ndarray:
        flat, held.planes = held.planes, None
        if flat is None:
            raise RuntimeError("the pool ran before the convolution that writes its phase planes")
        across = [np.ndarray(shape, np.float32, flat, offset * item, strides) for offset, shape, strides in column_taps]
        by_columns = np.empty(channels * 2 * plane, np.float32)
        by_columns_view = by_columns.reshape(channels, 2, plane)
        np.maximum(across[0], across[1], out=by_columns_view)
        np.maximum(by_columns_view, across[2], out=by_columns_view)
        down = [np.ndarray(shape, np.float32, by_columns, offset * item, strides) for offset, shape, strides in row_taps]
        pooled = np.empty((channels, length), np.float32)
        np.maximum(down[0], down[1], out=pooled)
        np.maximum(pooled, down[2], out=pooled)
        flat_pooled = pooled.reshape(relu_rows)
        np.maximum(flat_pooled, zeros, out=flat_pooled)
        y = np.empty((n, c_out, *pool_out), np.float32) if destination is None else destination()
        np.copyto(y, pooled.reshape(by_slots)[..., :pool_out[1]])
        return y
    return pool
