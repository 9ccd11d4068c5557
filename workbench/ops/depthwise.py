"""A 2-D depthwise convolution of stride 1 (one group per input channel, as ShuffleNet's and MobileNet's 3×3
layers) by column matrices read from flattened planes.

im2col of a depthwise convolution copies every window of a small plane row by row, runs as short as a
row of the output (14 values at 14×14), and that copy, not the product, was most of its time. Here the
padded input is flattened per channel and each kernel offset's columns are one contiguous run of it:
output position (i, j) is read at i · width + j of its padded plane, so every offset's row of the column
matrix is a plain slice, the product computes each output row at the padded width, and the extra columns
are dropped as the result is put in place. The channels go a group at a time, each group's column matrix
small enough to stay in cache between its copy and its product, [C, multiplier, K] @ [C, K, positions]; a
bias comes in as a last row of ones of the column matrix (as fast as the product without it, where a pass
adding a column of biases cost twice a plain copy), a relu in a pass over the result.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import numpy as np

from .activations import zero_rows

GROUP_BYTES = 512 << 10  # of column matrix per product: within a core's L2 cache


def applies(x_shape: Sequence[int], weight_shape: Sequence[int], stride: Sequence[int], groups: int,
            dtype: np.dtype) -> bool:
    """A 2-D float32 or float64 convolution of stride 1 and one group per input channel, more than one."""
    return (len(x_shape) == 4 and len(weight_shape) == 4 and groups == x_shape[1] > 1 and weight_shape[1] == 1
            and tuple(stride) == (1, 1) and np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.float64)))


def depthwise_conv(x_shape: Sequence[int], weight_shape: Sequence[int], dilation: Sequence[int],
                   pads: Sequence[tuple[int, int]], out: Sequence[int], dtype: np.dtype,
                   constant_weight: Optional[np.ndarray] = None, bias: Optional[np.ndarray] = None,
                   relu: bool = False, destination: Optional[Callable[[], np.ndarray]] = None) -> Callable:
    """``conv(x, weight)`` for ``applies``: [N, C, H, W] * [C·m, 1, kh, kw] -> [N, C·m, *out], plus ``bias``
    (one value per output channel) where given, then max(·, 0) with ``relu``. ``constant_weight``, where
    given, is read once and the ``weight`` argument ignored. The result goes into ``destination()`` where
    given (``conv_kernels.Destination``: each image of it contiguous), else into a fresh array."""
    dtype = np.dtype(dtype)
    n, c_in, height, width = x_shape
    c_out = weight_shape[0]
    multiplier, kernel = c_out // c_in, tuple(weight_shape[2:])
    taps = math.prod(kernel)
    (top, _), (left, _) = pads
    # the padded planes, a spare zero row below: the last offsets' runs for the dropped columns reach it
    plane_rows = out[0] + (kernel[0] - 1) * dilation[0] + 1
    plane_width = out[1] + (kernel[1] - 1) * dilation[1]
    padded_shape = (n, c_in, plane_rows, plane_width)
    kept = (min(height, plane_rows - top), min(width, plane_width - left))  # the input's rows and columns read
    inside = (slice(None), slice(None), slice(top, top + kept[0]), slice(left, left + kept[1]))
    source = (slice(None), slice(None), slice(0, kept[0]), slice(0, kept[1]))
    length = out[0] * plane_width  # positions computed per channel, at the padded width
    rows = taps + (bias is not None)
    group = max(1, min(c_in, GROUP_BYTES // (rows * length * dtype.itemsize)))
    groups = [(first, min(c_in, first + group)) for first in range(0, c_in, group)]
    item, plane = dtype.itemsize, plane_rows * plane_width
    # every offset's run at once, [N, C, kh, kw, positions]: one copy per group, not one per offset
    window_strides = (c_in * plane * item, plane * item, dilation[0] * plane_width * item, dilation[1] * item, item)
    fixed = None if constant_weight is None else _matrix(constant_weight, bias, c_in, multiplier, dtype)
    relu_rows, zeros = zero_rows((c_out, *out), dtype) if relu else ((0, 0), None)

    # Every array is made afresh at each call: the allocator hands back memory just freed, still in cache,
    # where arrays kept by each kernel (megabytes over a network's layers) would come from main memory.
    def conv(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        padded = np.zeros(padded_shape, dtype)
        padded[inside] = x[source]
        windows = np.ndarray((n, c_in, *kernel, length), dtype, padded, 0, window_strides)
        matrix = fixed if fixed is not None else _matrix(weight, bias, c_in, multiplier, dtype)
        cols = np.empty((group, rows, length), dtype)
        cols[:, taps:] = 1
        product = np.empty((n, c_in, multiplier, length), dtype)
        for image in range(n):
            for first, last in groups:
                part = cols[:last - first]
                np.copyto(part[:, :taps].reshape(last - first, *kernel, length), windows[image, first:last])
                np.matmul(matrix[first:last], part, out=product[image, first:last])
        y = np.empty((n, c_out, *out), dtype) if destination is None else destination()
        np.copyto(y, product.reshape(n, c_out, out[0], plane_width)[..., :out[1]])
        if zeros is not None:
            for image in range(n):
                values = y[image].reshape(relu_rows)
                np.maximum(values, zeros, out=values)
        return y
    return conv


def _matrix(weight: np.ndarray, bias: Optional[np.ndarray], c_in: int, multiplier: int, dtype: np.dtype) -> np.ndarray:
    """[C_in, multiplier, K (+ 1)]: each input channel's kernels as rows, the bias last where given."""
    matrix = np.asarray(weight, dtype).reshape(c_in, multiplier, -1)
    if bias is None:
        return matrix
    return np.concatenate([matrix, np.asarray(bias, dtype).reshape(c_in, multiplier, 1)], axis=2)
