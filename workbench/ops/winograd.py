"""A 3×3 convolution of stride 1 by Winograd's minimal filtering F(4×4, 3×3), for ``conv_kernels.conv``.

Each 4×4 block of output is computed from a 6×6 tile of the padded input with 36 products per input
and output channel pair instead of 144: the tiles and the weights are transformed (``B``, ``G``), the
36 tile positions become 36 matrix products [C_out, C_in] @ [C_in, tiles], and the results are
transformed back (``A``). The transforms are small matrix products of their own, applied one axis at a
time. It needs a quarter of the direct method's multiplications, at the cost of the transforms and
of rounding: the results differ from the direct method's by a few float32 units relative to the
largest output (about 1e-5). ``applies`` keeps it to the convolutions where it is faster here
(measured against the direct kernels with one BLAS thread: a ResNet 3×3 layer of 64 channels at 56×56,
2.8 ms direct, 1.7 ms here; 128 channels at 28×28, 2.6 ms and 1.5 ms; a DenseNet one of 128 to 32
channels at 56×56, 3.0 and 2.0 ms; at 14×14, or with 16 or 32 input channels, it is slower).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

# Input, weight and output transforms of F(4, 3) (Lavin and Gray, "Fast Algorithms for Convolutional
# Neural Networks", 2016), as B^T, G and A^T.
INPUT_T = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                    [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float32)
WEIGHT = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                   [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float64)
OUTPUT_T = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
                    np.float32)
WEIGHT_PAIRS = np.kron(WEIGHT, WEIGHT).astype(np.float32)  # [36 tile positions, 9 kernel taps]
TILE, BLOCK = 6, 4

MIN_OUTPUT = 28  # output rows and columns from which it pays
MIN_INPUT_CHANNELS = 64


def applies(x_shape: Sequence[int], weight_shape: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
            groups: int, out: Sequence[int]) -> bool:
    """Whether a convolution is done here: 2-D, 3×3, stride and dilation 1, one group, an output of
    at least ``MIN_OUTPUT`` per axis and at least ``MIN_INPUT_CHANNELS`` input channels."""
    return (len(x_shape) == 4 and tuple(weight_shape[2:]) == (3, 3) and tuple(stride) == (1, 1)
            and tuple(dilation) == (1, 1) and groups == 1 and min(out) >= MIN_OUTPUT
            and x_shape[1] >= MIN_INPUT_CHANNELS)


def winograd_conv(x_shape: Sequence[int], weight_shape: Sequence[int], pads: Sequence[tuple[int, int]],
                  out: Sequence[int], compute: np.dtype, dtype: np.dtype) -> Callable:
    """``conv(x, weight)`` as ``conv_kernels.conv`` gives it, computed in ``compute`` (float32)."""
    n, c_in, height, width = x_shape
    c_out = weight_shape[0]
    (top, _), (left, _) = pads
    rows, cols = -(-out[0] // BLOCK), -(-out[1] // BLOCK)  # blocks per axis
    tiles = rows * cols
    # The padded input covers every tile; beyond the real padding it reads zeros, which only reach
    # the outputs past ``out`` that are cropped.
    padded_shape = (n, c_in, BLOCK * rows + 2, BLOCK * cols + 2)
    inside = (slice(None), slice(None), slice(top, top + height), slice(left, left + width))
    weight_rows = (c_out * c_in, 9)
    input_t, output_t = INPUT_T.astype(compute), OUTPUT_T.astype(compute)
    weight_pairs = WEIGHT_PAIRS.astype(compute)

    def conv(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        # [36, C_out, C_in]: each tile position's weight matrix.
        transformed_weight = np.matmul(weight_pairs, weight.astype(compute, copy=False).reshape(weight_rows).T)
        padded = np.zeros(padded_shape, compute)
        padded[inside] = x
        s = padded.strides
        # [N, 6, 6, C_in, rows, cols]: tile position (i, j) of every tile, gathered into one copy.
        view = np.ndarray((n, TILE, TILE, c_in, rows, cols), compute, padded, 0,
                          (s[0], s[2], s[3], s[1], BLOCK * s[2], BLOCK * s[3]))
        gathered = np.ascontiguousarray(view).reshape(n, TILE, TILE * c_in * tiles)
        # B^T d B, an axis at a time: over i, then over j.
        half = np.matmul(input_t, gathered).reshape(n, TILE, TILE, c_in * tiles)
        transformed = np.matmul(input_t, half).reshape(n, TILE * TILE, c_in, tiles)
        products = np.matmul(transformed_weight.reshape(TILE * TILE, c_out, c_in), transformed)
        # A^T m A, an axis at a time, then the 4×4 blocks put in place and the excess cropped.
        half = np.matmul(output_t, products.reshape(n, TILE, TILE * c_out * tiles))
        blocks = np.matmul(output_t, half.reshape(n, BLOCK, TILE, c_out * tiles))
        blocks = blocks.reshape(n, BLOCK, BLOCK, c_out, rows, cols).transpose(0, 3, 4, 1, 5, 2)
        full = blocks.reshape(n, c_out, BLOCK * rows, BLOCK * cols)
        return np.ascontiguousarray(full[:, :, :out[0], :out[1]], dtype)
    return conv

