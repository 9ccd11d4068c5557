"""NumPy kernels of the poolings of ``convolution.py``, built once per op.

A pooling reduces one spatial axis at a time, each kernel offset a strided slice of the unpadded input,
never a window axis (which NumPy reduces slowly). Everything but the reductions themselves (which
offsets meet which outputs, the slices, the shapes between the axes) is worked out when the kernel is
built, so that a run of a small pooling costs little more than its ufunc calls. A 2-D max pool,
unless wide and padded, instead shifts whole planes, one pass per kernel offset (``_plane_max_pool``):
SqueezeNet's and Inception's pools two to three times faster. A 2-D max pool of stride 1 whose odd kernel
is centred on each input position (Inception's 3×3 pools padded by one) makes no padded copy at all
(``_centred_max_pool``).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from .conv_kernels import Pads, compute_type

Reduction = Callable[[np.ndarray], np.ndarray]
# Values per plane up to which a float32 global average pool sums a plane by a matrix product with ones;
# longer planes keep the windowed sum.
MATRIX_MEAN_COUNT = 1 << 16


def _axis_reduction(reduce: np.ufunc, fill: float, shape: tuple, axis: int, begin: int, kernel: int, step: int,
                    dilation: int, length: int) -> Reduction:
    """For an unpadded input of ``shape``: ``length`` windows along ``axis``, window j starting at
    ``j * step - begin``. Each kernel offset is reduced into the outputs whose position it finds
    inside the input (a padded position would hold ``fill``, which changes nothing), so no padded
    copy is made."""
    n, out_shape = shape[axis], shape[:axis] + (length,) + shape[axis + 1:]

    def along(start: int, stop: int, step: int = 1) -> tuple:
        return (slice(None),) * axis + (slice(start, stop, step),)
    full, partial = [], []  # (outputs it reaches, the input slice it reads)
    for k in range(kernel):
        shift = k * dilation - begin                      # input position of output j: j * step + shift
        low = max(0, -(shift // step) if shift < 0 else 0)
        high = min(length, (n - 1 - shift) // step + 1)
        if low < high:
            part = along(low * step + shift, (high - 1) * step + shift + 1, step)
            (full if (low, high) == (0, length) else partial).append((along(low, high), part))
    if len(full) >= 2:
        (_, first), (_, second) = full[:2]
        rest = full[2:] + partial

        def start(x):
            return reduce(x[first], x[second])
    elif full and partial:  # the first partial offset meets the full one; the ends are copied
        (_, base), (middle, part) = full.pop(), partial.pop(0)
        rest = full + partial
        low, high = middle[axis].start, middle[axis].stop
        head, tail = along(0, low), along(high, length)

        def start(x):
            y, whole = np.empty(out_shape, x.dtype), x[base]
            reduce(whole[middle], x[part], out=y[middle])
            if low:
                y[head] = whole[head]
            if high < length:
                y[tail] = whole[tail]
            return y
    elif full:
        (_, only), rest = full[0], []

        def start(x):
            return np.array(x[only])
    else:
        rest = partial

        def start(x):
            return np.full(out_shape, fill, x.dtype)
    if not rest:
        return start

    def reduction(x: np.ndarray) -> np.ndarray:
        y = start(x)
        for target, part in rest:
            into = y[target]
            reduce(into, x[part], out=into)
        return y
    return reduction


def _window_reduction(reduce: np.ufunc, fill: float, shape: Sequence[int], kernel: Sequence[int],
                      stride: Sequence[int], dilation: Sequence[int], pads_begin: Sequence[int],
                      out: Sequence[int]) -> Reduction:
    """``reduce`` (np.maximum or np.add, both separable) over every window of an input of ``shape``,
    one spatial axis at a time; the outer axes go first, shrinking the array while its rows stay
    contiguous, so the innermost axis strides over the fewest values."""
    steps, shape = [], tuple(shape)
    for axis, (k, s, d, b, o) in enumerate(zip(kernel, stride, dilation, pads_begin, out), 2):
        if k == 1:
            index = (slice(None),) * axis + (slice(0, (o - 1) * s + 1, s),)
            steps.append(lambda x, index=index: x[index])
        else:
            steps.append(_axis_reduction(reduce, fill, shape, axis, b, k, s, d, o))
        shape = shape[:axis] + (o,) + shape[axis + 1:]
    if len(steps) == 1:
        return steps[0]
    if len(steps) == 2:
        first, second = steps
        return lambda x: second(first(x))

    def reduction(x: np.ndarray) -> np.ndarray:
        for step in steps:
            x = step(x)
        return x
    return reduction


NARROW = 64  # input widths up to which a padded 2-D max pool shifts whole planes (``_plane_max_pool``)
PLANE_GROUP_BYTES = 256 << 10  # of planes shifted together: a group's passes stay in a core's cache


def _plane_max_pool(x_shape: Sequence[int], kernel: Sequence[int], stride: Sequence[int], pads: Pads,
                    out: Sequence[int], dtype: np.dtype) -> Callable:
    """A 2-D max pool, undilated: a group of (padded) planes is read as one flat array, the maximum over
    each window's columns is taken from copies shifted by one position, then over its rows from copies
    shifted by one row, each a single pass with a long inner loop where row-by-row slices of a narrow
    input would each cost a loop of their own; the outputs are then picked out. A window never crosses
    a row or plane end, so whatever the shifted passes mix in at those ends is never picked. The planes
    go a group of about ``PLANE_GROUP_BYTES`` at a time, whose passes stay in cache. The kernel keeps
    its padded copy (its border stays -inf); its working arrays live only during a call."""
    n, c, height, width = x_shape
    (top, bottom), (left, right) = pads
    rows, cols = height + top + bottom, width + left + right
    padded = np.full((n, c, rows, cols), -np.inf, dtype) if top or bottom or left or right else None
    inside = (slice(None), slice(None), slice(top, top + height), slice(left, left + width))
    planes, plane = n * c, rows * cols
    group = max(1, min(planes, PLANE_GROUP_BYTES // (plane * dtype.itemsize)))
    picked = (slice(None), slice(0, (out[0] - 1) * stride[0] + 1, stride[0]),
              slice(0, (out[1] - 1) * stride[1] + 1, stride[1]))

    def max_pool(x: np.ndarray) -> np.ndarray:
        if padded is not None:
            padded[inside] = x
            x = padded
        flat_planes = np.ascontiguousarray(x).reshape(planes, plane)
        y = np.empty((n, c, *out), dtype)
        by_plane = y.reshape(planes, *out)
        by_columns, by_rows = np.empty(group * plane, dtype), np.empty(group * plane, dtype)
        for first in range(0, planes, group):
            count = min(group, planes - first)
            flat = flat_planes[first:first + count].reshape(-1)
            across = count * plane - (kernel[1] - 1)  # positions whose columns' window lies in the planes
            down = across - (kernel[0] - 1) * cols
            columns, rows_max = by_columns[:across], by_rows[:down]
            np.maximum(flat[:across], flat[1:across + 1], out=columns)
            for offset in range(2, kernel[1]):
                np.maximum(columns, flat[offset:across + offset], out=columns)
            np.maximum(by_columns[:down], by_columns[cols:down + cols], out=rows_max)
            for offset in range(2, kernel[0]):
                np.maximum(rows_max, by_columns[offset * cols:down + offset * cols], out=rows_max)
            by_plane[first:first + count] = by_rows[:count * plane].reshape(count, rows, cols)[picked]
        return y
    return max_pool


CENTRED_MIN_VALUES = 1 << 14  # input values from which ``_centred_max_pool`` beats the plane passes


def _centred(x_shape: Sequence[int], kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
             pads: Pads, dtype: np.dtype) -> bool:
    """A 2-D float max pool of stride and dilation 1, each axis's kernel odd, at least 3 and shorter than
    the input, with half of it less one as padding on both sides: each window is centred on its output's
    position (``_centred_max_pool``); and an input of ``CENTRED_MIN_VALUES`` or more."""
    return (len(x_shape) == 4 and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1)
            and np.issubdtype(dtype, np.floating) and math.prod(x_shape) >= CENTRED_MIN_VALUES
            and all(k % 2 == 1 and 3 <= k < size and pad == ((k - 1) // 2,) * 2
                    for k, size, pad in zip(kernel, x_shape[2:], pads)))


def _clip_edges(source: np.ndarray, target: np.ndarray, length: int, half: int) -> None:
    """Along axis 1 of ``source`` and ``target`` (of ``length``): each of the first and last ``half``
    positions of ``target`` gets the maximum of ``source`` over its window cut to the input."""
    for j in [*range(half), *range(length - half, length)]:
        low, high = max(0, j - half), min(length - 1, j + half)
        into = target[:, j]
        np.maximum(source[:, low], source[:, low + 1], out=into)
        for position in range(low + 2, high + 1):
            np.maximum(into, source[:, position], out=into)


def _centred_max_pool(x_shape: Sequence[int], kernel: Sequence[int], dtype: np.dtype) -> Callable:
    """A max pool whose windows are centred on the input's positions (``_centred``), with no padded copy: a
    group of planes is read as one flat array, shifted copies of which give each window's maximum over
    its columns, then (into the output) over its rows, as ``_plane_max_pool`` does; the windows that
    would read padding, the first and last columns and rows of each plane, then take the maximum over
    what of the window lies inside (the shifted passes mixed the neighbouring row or plane into them)."""
    n, c, height, width = x_shape
    (kernel_rows, kernel_cols) = kernel
    half_rows, half_cols = (kernel_rows - 1) // 2, (kernel_cols - 1) // 2
    planes, plane = n * c, height * width
    group = max(1, min(planes, PLANE_GROUP_BYTES // (plane * dtype.itemsize)))

    def max_pool(x: np.ndarray) -> np.ndarray:
        flat_planes = np.ascontiguousarray(x).reshape(planes, plane)
        y = np.empty(x_shape, dtype)
        flat_output = y.reshape(planes, plane)
        by_columns = np.empty(group * plane, dtype)
        for first in range(0, planes, group):
            count = min(group, planes - first)
            size = count * plane
            flat, columns, rows = (flat_planes[first:first + count].reshape(-1), by_columns[:size],
                                   flat_output[first:first + count].reshape(-1))
            inner = slice(half_cols, size - half_cols)
            np.maximum(flat[:size - 2 * half_cols], flat[1:size - 2 * half_cols + 1], out=columns[inner])
            for offset in range(2, kernel_cols):
                np.maximum(columns[inner], flat[offset:size - 2 * half_cols + offset], out=columns[inner])
            _clip_edges(flat.reshape(-1, width), columns.reshape(-1, width), width, half_cols)
            reach = half_rows * width
            inner = slice(reach, size - reach)
            np.maximum(columns[:size - 2 * reach], columns[width:size - 2 * reach + width], out=rows[inner])
            for offset in range(2, kernel_rows):
                np.maximum(rows[inner], columns[offset * width:size - 2 * reach + offset * width], out=rows[inner])
            _clip_edges(columns.reshape(count, height, width), rows.reshape(count, height, width), height, half_rows)
        return y
    return max_pool


def max_pool(x_shape: Sequence[int], kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
             pads: Pads, out: Sequence[int], dtype: np.dtype) -> Callable:
    """A centred 2-D pool goes by ``_centred_max_pool``; another 2-D input by ``_plane_max_pool`` unless it
    is wide and padded (its padded copy would cost more than the plane passes save); anything else one
    axis at a time."""
    if _centred(x_shape, kernel, stride, dilation, pads, np.dtype(dtype)):
        return _centred_max_pool(x_shape, kernel, np.dtype(dtype))
    unpadded = not any(b or e for b, e in pads)
    if (len(x_shape) == 4 and (x_shape[3] <= NARROW or unpadded) and tuple(dilation) == (1, 1)
            and min(kernel) >= 2 and np.issubdtype(dtype, np.floating)):
        return _plane_max_pool(x_shape, kernel, stride, pads, out, np.dtype(dtype))
    reduction = _window_reduction(np.maximum, -np.inf, x_shape, kernel, stride, dilation, tuple(b for b, _ in pads),
                                  out)

    def max_pool(x: np.ndarray) -> np.ndarray:
        y = reduction(x)
        return y if y.flags.owndata else y.copy()  # a fresh, contiguous array, never the input
    return max_pool


def window_counts(x_shape: Sequence[int], kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
                  pads: Pads, out: Sequence[int]) -> np.ndarray:
    """How many positions of the unpadded input each window covers, [1, 1, *out]."""
    shape = (1, 1) + tuple(x_shape[2:])
    return _window_reduction(np.add, 0, shape, kernel, stride, dilation, tuple(b for b, _ in pads), out)(np.ones(shape))


def average_pool(x_shape: Sequence[int], kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
                 pads: Pads, out: Sequence[int], dtype: np.dtype) -> Callable:
    """Padding is left out of each window's count (ONNX count_include_pad=0). One window over the whole
    unpadded input (a global average pool) is each plane's sum as a matrix product with a column of ones,
    several times faster than adding up shifted slices."""
    compute = compute_type(dtype)
    if (tuple(kernel) == tuple(x_shape[2:]) and not any(b or e for b, e in pads)
            and all(d == 1 for d in dilation) and compute == np.float32 and math.prod(kernel) <= MATRIX_MEAN_COUNT):
        count = math.prod(kernel)
        ones = np.ones(count, compute)

        def global_average_pool(x: np.ndarray) -> np.ndarray:
            sums = np.matmul(x.reshape(-1, count), ones)
            np.divide(sums, compute.type(count), out=sums)
            return sums.reshape(*x_shape[:2], *out).astype(dtype, copy=False)
        return global_average_pool
    counts = window_counts(x_shape, kernel, stride, dilation, pads, out)
    scale = compute.type(1 / counts.flat[0]) if np.all(counts == counts.flat[0]) else (1 / counts).astype(compute)
    reduction = _window_reduction(np.add, 0, x_shape, kernel, stride, dilation, tuple(b for b, _ in pads), out)

    def average_pool(x: np.ndarray) -> np.ndarray:
        y = reduction(x.astype(compute, copy=False)) * scale
        return y.astype(dtype, copy=False)
    return average_pool
