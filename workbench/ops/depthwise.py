"""A 2-D depthwise convolution (one group per input channel, as ShuffleNet's and MobileNet's 3×3 layers) by
column matrices read from flattened planes.

im2col of a depthwise convolution copies every window of a small plane row by row, runs as short as a
row of the output (14 values at 14×14), and that copy, not the product, was most of its time. Here the
padded input is flattened per channel and each kernel offset's columns are one contiguous run of it:
output position (i, j) is read at i · width + j of its padded plane, so every offset's row of the column
matrix is a plain slice, the product computes each output row at the padded width, and the extra columns
are dropped as the result is put in place. A stride above 1 first splits the padded input into phase
planes (positions by their remainder modulo the stride, taken from the input in one strided copy per
plane), in which each offset again reads a contiguous run. The channels go a group at a time, each group's
column matrix small enough to stay in cache between its copy and its product, [C, multiplier, K] @
[C, K, positions]; a bias comes in as a last row of ones of the column matrix (as fast as the product
without it, where a pass adding a column of biases cost twice a plain copy), a relu in a pass over the
result.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import numpy as np

from .activations import zero_rows

GROUP_BYTES = 512 << 10  # of column matrix per product: within a core's L2 cache


def applies(x_shape: Sequence[int], weight_shape: Sequence[int], groups: int, dtype: np.dtype) -> bool:
    """A 2-D float32 or float64 convolution of one group per input channel, more than one."""
    return (len(x_shape) == 4 and len(weight_shape) == 4 and groups == x_shape[1] > 1 and weight_shape[1] == 1
            and np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.float64)))


def depthwise_conv(x_shape: Sequence[int], weight_shape: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
                   pads: Sequence[tuple[int, int]], out: Sequence[int], dtype: np.dtype,
                   constant_weight: Optional[np.ndarray] = None, bias: Optional[np.ndarray] = None,
                   relu: bool = False, destination: Optional[Callable[[], np.ndarray]] = None) -> Callable:
    """``conv(x, weight)`` for ``applies``: [N, C, H, W] * [C·m, 1, kh, kw] -> [N, C·m, *out], plus ``bias``
    (one value per output channel) where given, then max(·, 0) with ``relu``. ``constant_weight``, where
    given, is read once and the ``weight`` argument ignored. The result goes into ``destination()`` where
    given (``conv_kernels.Destination``: each image of it contiguous), else into a fresh array."""
    dtype = np.dtype(dtype)
    n, c_in = x_shape[:2]
    c_out = weight_shape[0]
    multiplier, kernel = c_out // c_in, tuple(weight_shape[2:])
    taps = math.prod(kernel)
    # The phase planes, [s0, s1, N, C, rows, width]: plane (a, b) holds padded position (s0 r + a, s1 q + b) at
    # (r, q); a spare zero row below, which the last offsets' runs for the dropped columns reach.
    reach = [(k - 1) * d // s for k, d, s in zip(kernel, dilation, stride)]
    plane_rows, plane_width = out[0] + reach[0] + 1, out[1] + reach[1]
    planes_shape = (*stride, n, c_in, plane_rows, plane_width)
    fills = [_phase_fill(a, b, x_shape[2:], pads, stride, (plane_rows, plane_width))
             for a in range(stride[0]) for b in range(stride[1])]
    length = out[0] * plane_width  # positions computed per channel, at the planes' width
    rows = taps + (bias is not None)
    group = max(1, min(c_in, GROUP_BYTES // (rows * length * dtype.itemsize)))
    groups = [(first, min(c_in, first + group)) for first in range(0, c_in, group)]
    item, plane = dtype.itemsize, plane_rows * plane_width
    # of stride 1, every offset's run at once, [N, C, kh, kw, positions]: one copy per group, not one per offset
    window_strides = (c_in * plane * item, plane * item, dilation[0] * plane_width * item, dilation[1] * item, item)
    reads = []  # per offset: (phase plane, first position in it)
    for kh, kw in np.ndindex(*kernel):
        row, col = kh * dilation[0], kw * dilation[1]
        reads.append(((row % stride[0]) * stride[1] + col % stride[1],
                      (row // stride[0]) * plane_width + col // stride[1]))
    fixed = None if constant_weight is None else _matrix(constant_weight, bias, c_in, multiplier, dtype)
    relu_rows, zeros = zero_rows((c_out, *out), dtype) if relu else ((0, 0), None)

    # Every array is made afresh at each call: the allocator hands back memory just freed, still in cache,
    # where arrays kept by each kernel (megabytes over a network's layers) would come from main memory.
    def conv(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        planes = np.zeros(planes_shape, dtype)
        for a, b, target, source in fills:
            planes[a, b][target] = x[source]
        flat = planes.reshape(-1, n, c_in, plane)
        matrix = fixed if fixed is not None else _matrix(weight, bias, c_in, multiplier, dtype)
        cols = np.empty((group, rows, length), dtype)
        cols[:, taps:] = 1
        product = np.empty((n, c_in, multiplier, length), dtype)
        windows = np.ndarray((n, c_in, *kernel, length), dtype, planes, 0, window_strides) if len(flat) == 1 else None
        for image in range(n):
            for first, last in groups:
                part = cols[:last - first]
                if windows is not None:
                    np.copyto(part[:, :taps].reshape(last - first, *kernel, length), windows[image, first:last])
                else:
                    for tap, (phase, start) in enumerate(reads):
                        np.copyto(part[:, tap], flat[phase, image, first:last, start:start + length])
                np.matmul(matrix[first:last], part, out=product[image, first:last])
        y = np.empty((n, c_out, *out), dtype) if destination is None else destination()
        np.copyto(y, product.reshape(n, c_out, out[0], plane_width)[..., :out[1]])
        if zeros is not None:
            for image in range(n):
                values = y[image].reshape(relu_rows)
                np.maximum(values, zeros, out=values)
        return y
    return conv


def _phase_fill(a: int, b: int, spatial: Sequence[int], pads: Sequence[tuple[int, int]], stride: Sequence[int],
                plane: Sequence[int]) -> tuple[int, int, tuple, tuple]:
    """Where phase plane (a, b) takes the input: (a, b, its [N, C, rows, columns] slice, the input's)."""
    target, source = [slice(None)] * 2, [slice(None)] * 2
    for phase, size, (begin, _), step, slots in zip((a, b), spatial, pads, stride, plane):
        first = max(0, -(-(begin - phase) // step))  # the first slot at an input position
        start = step * first + phase - begin
        count = max(0, min(slots - first, len(range(start, size, step))))
        target.append(slice(first, first + count))
        source.append(slice(start, start + step * (count - 1) + 1 if count else start, step))
    return a, b, tuple(target), tuple(source)


def _matrix(weight: np.ndarray, bias: Optional[np.ndarray], c_in: int, multiplier: int, dtype: np.dtype) -> np.ndarray:
    """[C_in, multiplier, K (+ 1)]: each input channel's kernels as rows, the bias last where given."""
    matrix = np.asarray(weight, dtype).reshape(c_in, multiplier, -1)
    if bias is None:
        return matrix
    return np.concatenate([matrix, np.asarray(bias, dtype).reshape(c_in, multiplier, 1)], axis=2)
