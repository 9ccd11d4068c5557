"""A 3×3 convolution of stride 1 by Winograd's minimal filtering F(4×4, 3×3) (or F(2×2, 3×3), see
``transforms_for``), for ``conv_kernels.conv``.

Each 4×4 block of output is computed from a 6×6 tile of the padded input with 36 products per input
and output channel pair instead of 144: the tiles and the weights are transformed (``B``, ``G``), the
36 tile positions become 36 matrix products [C_out, C_in] @ [C_in, tiles], and the results are
transformed back (``A``). The transforms are small matrix products of their own, applied one axis at a
time. It needs a quarter of the direct method's multiplications, at the cost of the transforms and
of rounding: the results differ from the direct method's by a few float32 units relative to the
largest output (about 1e-5). ``applies`` keeps it to the convolutions where it is faster here
(measured against the direct kernels with one BLAS thread). A weight transformed at each run costs
about as much as the products it saves unless the output is large: a ResNet 3×3 layer of 64 channels at
56×56, 2.8 ms direct, 1.7 ms here; 128 channels at 28×28, 2.6 ms and 1.5 ms. A constant weight (an
ONNX initializer) is transformed once, and then it pays down to 13×13 with 32 input channels or more
(an Inception layer of 128 to 256 channels at 13×13, 1.2 ms direct, 0.6 ms here; a SqueezeNet one of
32 to 128 channels at 27×27, 0.6 and 0.35 ms), though not at 7×7, where reading the transformed weight,
four times the weight, costs more than the products it saves.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

@dataclass(frozen=True, slots=True)
class Transforms:
    """Winograd's F(block × block, 3×3): each block × block output block from a tile of (block + 2)²
    inputs, with the input transform B^T, the weight transform G and the output transform A^T."""

    name: str
    input_t: np.ndarray   # [tile, tile]
    weight: np.ndarray    # [tile, 3]
    output_t: np.ndarray  # [block, tile]

    @property
    def tile(self) -> int:
        return self.input_t.shape[0]

    @property
    def block(self) -> int:
        return self.output_t.shape[0]

    @property
    def weight_pairs(self) -> np.ndarray:
        """[tile², 9]: G ⊗ G, each tile position's combination of the 9 kernel taps."""
        return np.kron(self.weight, self.weight)

    @property
    def spread_position(self) -> int:
        """The tile position (1, 1): column 1 of A^T is all ones, so a value there reaches each output
        of the block once (how a bias is added)."""
        return self.tile + 1


# The transforms of Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016.
F4 = Transforms("F(4x4, 3x3)",
                np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                          [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64),
                np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                          [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float64),
                np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
                         np.float64))
F2 = Transforms("F(2x2, 3x3)",
                np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64),
                np.array([[1, 0, 0], [1 / 2, 1 / 2, 1 / 2], [1 / 2, -1 / 2, 1 / 2], [0, 0, 1]], np.float64),
                np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64))

MIN_OUTPUT = 28  # output rows and columns from which it pays with a weight transformed at each run
MIN_INPUT_CHANNELS = 64
MIN_OUTPUT_PREPARED = 12  # the same with a constant weight, transformed once
MIN_INPUT_CHANNELS_PREPARED = 32
MIN_INPUT_CHANNELS_PREPARED_LARGE = 16  # the same from an output of ``MIN_OUTPUT`` per axis
FEW_OUTPUT_CHANNELS = 32  # up to which a constant weight pays no sooner than one transformed each run
SMALL_OUTPUT = 20  # below it, with ``WIDE_INPUT`` input channels or more, F(2x2, 3x3) goes faster
WIDE_INPUT = 256


def applies(x_shape: Sequence[int], weight_shape: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
            groups: int, out: Sequence[int], constant_weight: bool = False) -> bool:
    """Whether a convolution is done here: 2-D, 3×3, stride and dilation 1, one group, and large
    enough. A weight that changes between runs is transformed at every run, which pays from an output
    of ``MIN_OUTPUT`` per axis and ``MIN_INPUT_CHANNELS`` input channels; a constant one is transformed
    once, which pays from ``MIN_OUTPUT_PREPARED`` and ``MIN_INPUT_CHANNELS_PREPARED`` (below, the
    transformed weight, four times the weight, costs more to read than the products it saves), or from
    ``MIN_INPUT_CHANNELS_PREPARED_LARGE`` where the output is at least ``MIN_OUTPUT`` (SqueezeNet's 16 to 64
    channels at 55×55: 0.66 ms by im2col, 0.55 ms here), unless
    it has at most ``FEW_OUTPUT_CHANNELS`` output channels: the input's transform, nine times the
    input, then outweighs the products (DenseNet's 128 to 32 channels at 14×14 run faster directly)."""
    prepared = constant_weight and weight_shape[0] > FEW_OUTPUT_CHANNELS
    least_out, least_in = ((MIN_OUTPUT_PREPARED, MIN_INPUT_CHANNELS_PREPARED) if prepared
                           else (MIN_OUTPUT, MIN_INPUT_CHANNELS))
    if prepared and min(out) >= MIN_OUTPUT:
        least_in = MIN_INPUT_CHANNELS_PREPARED_LARGE
    return (len(x_shape) == 4 and tuple(weight_shape[2:]) == (3, 3) and tuple(stride) == (1, 1)
            and tuple(dilation) == (1, 1) and groups == 1 and min(out) >= least_out
            and x_shape[1] >= least_in)


def transforms_for(x_shape: Sequence[int], out: Sequence[int]) -> Transforms:
    """F(4x4, 3x3), or F(2x2, 3x3) for a small output of many channels: its transformed weight is 16
    values per pair of channels instead of 36, which matters where reading it, not the products, takes
    the time (a ResNet layer of 256 channels at 14×14: 2.9 ms direct, 2.5 ms by F(4x4), 2.2 ms by F(2x2))."""
    return F2 if min(out) < SMALL_OUTPUT and x_shape[1] >= WIDE_INPUT else F4


def winograd_conv(x_shape: Sequence[int], weight_shape: Sequence[int], pads: Sequence[tuple[int, int]],
                  out: Sequence[int], compute: np.dtype, dtype: np.dtype,
                  constant_weight: Optional[np.ndarray] = None, bias: Optional[np.ndarray] = None,
                  transforms: Optional[Transforms] = None, relu: bool = False,
                  destination: Optional[Callable[[], np.ndarray]] = None) -> Callable:
    """``conv(x, weight)`` as ``conv_kernels.conv`` gives it, computed in ``compute`` (float32). A
    ``constant_weight`` (the value ``weight`` always has) is transformed here, once. A ``bias`` (one
    value per output channel) is added at tile position (1, 1), which the output transform spreads to
    every output of the tile with a factor of one. A large input goes a group of tile rows at a time, the
    group's gathered tiles about ``TILE_GROUP_BYTES`` or the transformed weight's size, whichever is
    larger, and all its working arrays (its tiles gathered and transformed, their products, the outputs
    half transformed) within ``WORKING_BYTES`` unless its tiles would then be fewer than a
    ``WEIGHT_READS`` part of the transformed weight, which each group reads again; so its transforms and
    products stay in cache (a DenseNet layer of 128 to 32 channels at 56×56: 2.5 ms with every tile at
    once, 2.1 ms so; a ResNet one of 64 channels at 56×56: 1.85 and 1.55 ms; SqueezeNet's 16 to 64
    channels at 55×55, whose working arrays were 4 MB at once: 0.59 and 0.46 ms, 0.88 and 0.79 ms with
    the caches emptied first). With ``relu``, max(output, 0) is taken over each group's output blocks
    while they are contiguous and in cache, before they are put in place: into the array that
    ``destination()`` gives, where given (``conv_kernels.Destination``), else into a fresh one. The
    kernel keeps its padded input, whose border of zeros it never writes; its working arrays are made at
    each call (the runtime keeps freed memory, ``runtime/state/allocator.py``, so they cost no page
    faults) and live only during it."""
    n, c_in, height, width = x_shape
    c_out = weight_shape[0]
    (top, _), (left, _) = pads
    transforms = transforms or transforms_for(x_shape, out)
    tile, block = transforms.tile, transforms.block
    rows, cols = -(-out[0] // block), -(-out[1] // block)  # blocks per axis
    input_t, output_t = transforms.input_t.astype(compute), transforms.output_t.astype(compute)
    weight_pairs = transforms.weight_pairs.astype(compute)

    def transform(weight: np.ndarray) -> np.ndarray:
        """[36, C_out, C_in]: each tile position's weight matrix."""
        flat = weight.astype(compute, copy=False).reshape(c_out * c_in, 9)
        return np.matmul(weight_pairs, flat.T).reshape(tile * tile, c_out, c_in)
    prepared = None if constant_weight is None else transform(np.asarray(constant_weight))
    # The padded input covers every tile; beyond the real padding it reads zeros, which only reach
    # the outputs past ``out`` that are cropped. Only its inside is written, so its border stays zero.
    padded = np.zeros((n, c_in, block * rows + 2, block * cols + 2), compute)
    inside = (slice(None), slice(None), slice(top, top + height), slice(left, left + width))
    s = padded.strides
    # [N, 6, 6, C_in, rows, cols]: tile position (i, j) of every tile.
    tile_view = np.ndarray((n, tile, tile, c_in, rows, cols), compute, padded, 0,
                           (s[0], s[2], s[3], s[1], block * s[2], block * s[3]))
    column = None if bias is None else np.asarray(bias, compute).reshape(-1, 1)
    # A group gathers about ``TILE_GROUP_BYTES`` of tiles, or as much as the transformed weight, which each
    # group reads again; but its working arrays (gathered and half-transformed inputs, products, outputs
    # half transformed) stay within ``WORKING_BYTES`` unless its tiles would then be fewer than a
    # ``WEIGHT_READS`` part of the transformed weight.
    itemsize = np.dtype(compute).itemsize
    weight_bytes = tile * tile * c_out * c_in * itemsize
    gathered_row = tile * tile * c_in * cols * itemsize
    working_row = (2 * tile * tile * c_in + tile * tile * c_out + block * tile * c_out) * cols * itemsize
    most = max(WORKING_BYTES // working_row, weight_bytes // WEIGHT_READS // gathered_row)
    band = max(1, min(rows, max(TILE_GROUP_BYTES, weight_bytes) // gathered_row, most))
    groups = [_TileRows(first, min(rows, first + band), block, out) for first in range(0, rows, band)]
    largest = band * cols
    zeros = np.zeros(c_out * largest * block, compute)  # maximum vectorises against an array, not a scalar

    def conv(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        transformed_weight = transform(weight) if prepared is None else prepared
        inputs_buffer = np.empty(n * tile * tile * c_in * largest, compute)  # gathered, later transformed
        half_inputs_buffer = np.empty_like(inputs_buffer)
        products_buffer = np.empty(n * tile * tile * c_out * largest, compute)  # later the output blocks
        half_outputs_buffer = np.empty(n * block * tile * c_out * largest, compute)
        padded[inside] = x
        result = np.empty((n, c_out, *out), dtype) if destination is None else destination()
        for group in groups:
            tiles = group.rows * cols
            inputs = inputs_buffer[:n * tile * tile * c_in * tiles].reshape(n, tile, tile * c_in * tiles)
            half_inputs = half_inputs_buffer[:inputs.size].reshape(inputs.shape)
            products = products_buffer[:n * tile * tile * c_out * tiles].reshape(n, tile * tile, c_out, tiles)
            half_outputs = half_outputs_buffer[:n * block * tile * c_out * tiles].reshape(
                n, block, tile * c_out * tiles)
            blocks = products.reshape(-1)[:n * block * c_out * tiles * block].reshape(
                n, block, c_out * tiles, block)
            np.copyto(inputs.reshape(n, tile, tile, c_in, group.rows, cols), tile_view[..., group.first:group.stop, :])
            # B^T d B, an axis at a time: over i, then over j.
            np.matmul(input_t, inputs, out=half_inputs)
            np.matmul(input_t, half_inputs.reshape(n, tile, tile, c_in * tiles),
                      out=inputs.reshape(n, tile, tile, c_in * tiles))
            np.matmul(transformed_weight, inputs.reshape(n, tile * tile, c_in, tiles), out=products)
            if column is not None:
                spread = products[:, transforms.spread_position]
                np.add(spread, column, out=spread)
            # A^T m A, an axis at a time: over i, then over j with j the last axis, so that a block row
            # of one tile lies beside the next tile's, as in the result; then put in place, cropped.
            np.matmul(output_t, products.reshape(n, tile, tile * c_out * tiles), out=half_outputs)
            np.matmul(half_outputs.reshape(n, block, tile, c_out * tiles).transpose(0, 1, 3, 2), output_t.T,
                      out=blocks)
            if relu:
                by_rows = blocks.reshape(n * block, c_out * tiles * block)
                np.maximum(by_rows, zeros[:c_out * tiles * block], out=by_rows)
            group.place(blocks, result)
        return result
    return conv


TILE_GROUP_BYTES = 512 << 10  # of gathered input tiles per group of tile rows (or the transformed weight's size)
WORKING_BYTES = 2 << 20  # of all a group's working arrays, at most: about a core's L2 cache
WEIGHT_READS = 4  # ... unless a group would then gather less than this part of the transformed weight


class _TileRows:
    """Tile rows ``first`` to ``stop`` (exclusive) of a Winograd convolution, and how their output blocks,
    [N, block row i, C_out, tile rows, tile columns · block column j], are put into the [N, C_out, *out]
    result: each block row of a tile row is a whole row of output (cropped to the width), so one copy
    puts the tile rows whose every block row lies inside, another the rows inside of a last one."""

    __slots__ = ("first", "stop", "rows", "block", "whole", "extra")

    def __init__(self, first: int, stop: int, block: int, out: Sequence[int]):
        self.first, self.stop, self.rows, self.block = first, stop, stop - first, block
        self.whole = max(0, min(stop, out[0] // block) - first)  # tile rows inside, every block row
        self.extra = min(block, out[0] - block * (first + self.whole)) if first + self.whole < stop else 0

    def place(self, blocks: np.ndarray, result: np.ndarray) -> None:
        n, c_out, _, width = result.shape
        by_rows = blocks.reshape(n, self.block, c_out, self.rows, -1).transpose(0, 2, 3, 1, 4)
        top = self.block * self.first
        if self.whole:
            bottom = top + self.block * self.whole
            np.copyto(result[:, :, top:bottom].reshape(n, c_out, self.whole, self.block, width),
                      by_rows[:, :, :self.whole, :, :width])
            top = bottom
        if self.extra:
            np.copyto(result[:, :, top:top + self.extra], by_rows[:, :, self.whole, :self.extra, :width])
