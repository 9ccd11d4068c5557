"""NumPy kernels of the convolutions and poolings of ``convolution.py``, built once per op.

A convolution is im2col and one matrix product: a strided view lists every window of the padded
input as [N, C, *kernel, *out], one copy makes it the contiguous [N, C·K, P] column matrix, and
``matmul`` with the weight as a [C_out, C·K] view writes [N, C_out, P], already the output's layout
(a large column matrix is made and multiplied a band of output rows at a time). A 1×1 convolution
of stride 1 needs no copy at all (one with a constant weight and a bias and a larger output, or several
groups, copies its input beside a row of ones, so that the product adds the bias, as a strided one does;
a smaller output gets its bias in a pass over each image's product), nor does a 2-D one of stride 1 with
few output channels, which adds up one product per kernel offset of shifted views of the padded input. A
large enough 3×3 one of stride 1 goes by Winograd's method instead (``winograd.py``), which transforms a
constant weight once; a depthwise one (a group per input channel) by ``depthwise.py``. Poolings are in
``pool_kernels.py``. Measured with one BLAS thread, ``matmul`` of the weight and the input as they lie
([C_out, C_in] @ [C_in, P]) is as fast as any other layout of the same product (transposed operands,
``dot``, a [P, C_out] result), and one im2col product beats a product per kernel offset from 64 output
channels on.

Most kernels write their result where a ``Destination`` says, a stretch of a concat's output where the
convolution's result goes nowhere else (``concat_into.py``); the others copy it there.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import depthwise, winograd
from .activations import zero_rows

Pads = Sequence[tuple[int, int]]
# Where a kernel writes its [N, C_out, *out] result, asked once per call: a fresh array when None, else
# (``concat_into.py``) a stretch of a concat's output, each image of it contiguous.
Destination = Optional[Callable[[], np.ndarray]]


def compute_type(dtype: np.dtype) -> np.dtype:
    """float16 is computed in float32, as the IPU accumulates it."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def padder(shape: Sequence[int], pads: Pads, fill: float, dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray]:
    """A function giving its [N, C, *spatial] argument with ``pads`` (one (begin, end) pair per
    spatial axis) filled with ``fill``; the argument itself when there is nothing to pad."""
    if not any(b or e for b, e in pads):
        return lambda x: x
    padded = tuple(shape[:2]) + tuple(n + b + e for n, (b, e) in zip(shape[2:], pads))
    inside = (slice(None),) * 2 + tuple(slice(b, b + n) for n, (b, _) in zip(shape[2:], pads))

    def pad(x: np.ndarray) -> np.ndarray:
        out = np.zeros(padded, dtype) if fill == 0 else np.full(padded, fill, dtype)
        out[inside] = x
        return out
    return pad


def offset_slices(kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
                  out: Sequence[int]) -> list[tuple[slice, ...]]:
    """For each kernel offset, the [N, C, *out] slice of the padded input that the offset reads."""
    return [(slice(None),) * 2 + tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                                       for k, d, s, o in zip(offset, dilation, stride, out))
            for offset in np.ndindex(*kernel)]


def _pointwise_columns(x: np.ndarray, stride: Sequence[int], out: Sequence[int]) -> np.ndarray:
    """The [N, C, P] input of a 1×1 convolution: the input itself, or its strided positions."""
    n, c = x.shape[:2]
    if any(s != 1 for s in stride) or tuple(x.shape[2:]) != tuple(out):
        x = np.ascontiguousarray(x[(slice(None),) * 2 + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out, stride))])
    return x.reshape(n, c, math.prod(out))


def _window_view(padded_shape: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
                 dilation: Sequence[int], out: Sequence[int], dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray]:
    """``view(x)``: a read-only [N, C, *kernel, *out] view of every window of the padded ``x`` (of
    ``padded_shape``), its shape and strides worked out once for a contiguous ``x``."""
    itemsize = np.dtype(dtype).itemsize
    contiguous = tuple(int(np.prod(padded_shape[i + 1:])) * itemsize for i in range(len(padded_shape)))
    spatial = contiguous[2:]
    shape = (*padded_shape[:2], *kernel, *out)
    strides = contiguous[:2] + tuple(s * d for s, d in zip(spatial, dilation)) + tuple(
        s * t for s, t in zip(spatial, stride))

    def view(x: np.ndarray) -> np.ndarray:
        if x.flags.c_contiguous:  # the same view, made without as_strided's Python overhead
            windows = np.ndarray(shape, dtype, buffer=x, strides=strides)
            windows.flags.writeable = False
            return windows
        own = x.strides[:2] + tuple(s * d for s, d in zip(x.strides[2:], dilation)) + tuple(
            s * t for s, t in zip(x.strides[2:], stride))
        return as_strided(x, shape, own, writeable=False)
    return view


CHUNK_BYTES = 1 << 20  # of im2col matrix per matrix product: about one core's L2 cache
FEW_OUTPUTS = 32  # output channels up to which a 2-D convolution of stride 1 multiplies shifted inputs


def _shifted_taps_conv(x_shape: Sequence[int], weight_shape: Sequence[int], dilation: Sequence[int], pads: Pads,
                       out: Sequence[int], dtype: np.dtype, destination: Destination = None) -> Callable:
    """A 2-D convolution of stride 1 as one matrix product per kernel offset, added up, with no
    column matrix: the padded input, flattened per channel, read from the offset's shift is a plain
    [C_in, rows · padded width] matrix, so each product computes every output row at the padded
    width (the extra columns are dropped at the end). With few output channels the im2col copy
    costs as much as its matrix product; these products and sums cost far less."""
    compute = compute_type(dtype)
    n, c_in, height, width = x_shape
    c_out = weight_shape[0]
    (top, bottom), (left, right) = pads
    padded_width = width + left + right
    rows = height + top + bottom + 1  # a zero row below: the dropped columns of the last row read it
    offsets = [kh * dilation[0] * padded_width + kw * dilation[1] for kh, kw in np.ndindex(*weight_shape[2:])]
    length = out[0] * padded_width

    def conv(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        padded = np.zeros((n, c_in, rows, padded_width), compute)
        padded[:, :, top:top + height, left:left + width] = x
        flat = padded.reshape(n, c_in, rows * padded_width)
        taps = weight.astype(compute, copy=False).transpose(2, 3, 0, 1).reshape(len(offsets), c_out, c_in)
        y = np.empty((n, c_out, length), compute)
        part = np.empty((c_out, length), compute)
        for image in range(n):
            np.matmul(taps[0], flat[image, :, offsets[0]:offsets[0] + length], out=y[image])
            for tap, offset in zip(taps[1:], offsets[1:]):
                np.matmul(tap, flat[image, :, offset:offset + length], out=part)
                y[image] += part
        cropped = y.reshape(n, c_out, out[0], padded_width)[..., :out[1]]
        if destination is None:
            return np.ascontiguousarray(cropped, dtype)
        into = destination()
        np.copyto(into, cropped)
        return into
    return conv


def _takes_shifted_taps(weight_shape: Sequence[int], stride: Sequence[int], groups: int) -> bool:
    """A 2-D convolution of stride 1, one group and few output channels (``_shifted_taps_conv``)."""
    return (len(weight_shape) == 4 and groups == 1 and tuple(stride) == (1, 1)
            and weight_shape[0] <= FEW_OUTPUTS)


def _bands(c_in: int, kernel: Sequence[int], out: Sequence[int], itemsize: int) -> tuple[int, list]:
    """Output rows per band of the column matrix, and the bands as (start, stop) rows."""
    row_bytes = c_in * math.prod(kernel) * (math.prod(out) // out[0]) * itemsize
    band = out[0] if row_bytes * out[0] <= 2 * CHUNK_BYTES else max(1, CHUNK_BYTES // row_bytes)
    return band, [(start, min(out[0], start + band)) for start in range(0, out[0], band)]


def _biased_columns_conv(x_shape: Sequence[int], weight: np.ndarray, bias: np.ndarray, stride: Sequence[int],
                         dilation: Sequence[int], pads: Pads, out: Sequence[int], compute: np.dtype,
                         relu: bool = False, destination: Destination = None) -> Callable:
    """im2col with a constant weight and a bias, one group: the column matrix has a last row of ones and
    the weight matrix the bias as its last column, so the matrix product adds the bias. A ``relu``
    follows each band's product while the band is still in cache."""
    n, c_in, c_out = x_shape[0], x_shape[1], weight.shape[0]
    kernel = tuple(weight.shape[2:])
    rows = c_in * math.prod(kernel)
    positions, band_positions = math.prod(out), math.prod(out) // out[0]
    pad = padder(x_shape, pads, 0, compute)
    padded_shape = (n, c_in) + tuple(size + b + e for size, (b, e) in zip(x_shape[2:], pads))
    window_view = _window_view(padded_shape, kernel, stride, dilation, out, compute)
    band, bands = _bands(c_in, kernel, out, compute.itemsize)
    weight_and_bias = np.concatenate([weight.reshape(c_out, rows), bias.reshape(c_out, 1)], axis=1).astype(compute)
    rest = (slice(None),) * (len(out) - 1)
    zeros = np.zeros(band * band_positions, compute)

    def conv(x: np.ndarray, _weight: np.ndarray) -> np.ndarray:
        windows = window_view(pad(x.astype(compute, copy=False)))
        buffer = np.empty((rows + 1) * band * band_positions, compute)
        y = np.empty((n, c_out, *out), compute) if destination is None else destination()
        for image in range(n):
            y_image = y[image].reshape(c_out, positions)
            for start, stop in bands:
                part = windows[(image, Ellipsis, slice(start, stop)) + rest]
                size = (stop - start) * band_positions
                cols = buffer[:(rows + 1) * size].reshape(rows + 1, size)
                np.copyto(cols[:rows].reshape(part.shape), part)
                cols[rows] = 1
                y_band = y_image[:, start * band_positions:stop * band_positions]
                np.matmul(weight_and_bias, cols, out=y_band)
                if relu:
                    np.maximum(y_band, zeros[:size], out=y_band)
        return y
    return conv


def _biased_pointwise_conv(x_shape: Sequence[int], weight: np.ndarray, bias: np.ndarray, stride: Sequence[int],
                           out: Sequence[int], compute: np.dtype, relu: bool = False,
                           destination: Destination = None, groups: int = 1) -> Callable:
    """A 1×1 convolution of a constant weight, unpadded, with a bias. Where ``_takes_biased_pointwise``,
    the input (its strided positions, for a stride above 1) is copied into a column matrix with a last row
    of ones per group and the weight matrix has the bias as its last column, so the matrix product adds the
    bias: copying the input costs less than a pass of its own over a larger output (or, with several
    groups, a pass adding a column of biases, NumPy's slow broadcast), and a strided input is copied anyway.
    Otherwise each image's input is the matrix itself, and the bias is added in a pass over its product. A
    ``relu`` follows each image's product while its output is still in cache."""
    n, c_in, c_out = x_shape[0], x_shape[1], weight.shape[0]
    group_in, group_out = c_in // groups, c_out // groups
    positions = math.prod(out)
    ones_row = _takes_biased_pointwise(weight.shape, groups, x_shape, out)
    picked = (slice(None),) + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out, stride))
    matrix = weight.reshape(c_out, group_in).astype(compute)  # of one group: no ones row
    weight_and_bias = np.concatenate([weight.reshape(groups, group_out, group_in),
                                      bias.reshape(groups, group_out, 1)], axis=2).astype(compute)
    # of one group, plain matrices (a stack of one costs a little more per call)
    by_group = (groups, group_out, positions) if groups > 1 else (c_out, positions)
    if groups == 1:
        weight_and_bias = weight_and_bias[0]
    column = bias.reshape(c_out, 1).astype(compute)
    # each image's output (contiguous, fresh or a destination's) is compared with long rows of zeros
    # (``zero_rows``): twice as fast as rows of ``positions``, down to 49, each an inner loop of its own
    relu_rows, zeros = zero_rows((c_out * positions,), compute)

    def conv(x: np.ndarray, _weight: np.ndarray) -> np.ndarray:
        if ones_row:
            stacked = np.empty((groups, group_in + 1, positions), compute)
            stacked[:, group_in] = 1
            cols = stacked.reshape(by_group[:-2] + (group_in + 1, positions))
            inputs = stacked[:, :group_in].reshape(groups, group_in, *out)  # a view: each group's rows are whole
        y = np.empty((n, c_out, *out), compute) if destination is None else destination()
        for image in range(n):
            y_image = y[image].reshape(c_out, positions)
            if ones_row:
                np.copyto(inputs, x[image][picked].reshape(groups, group_in, *out))
                np.matmul(weight_and_bias, cols, out=y_image.reshape(by_group))
            else:
                np.matmul(matrix, x[image].reshape(c_in, positions), out=y_image)
                np.add(y_image, column, out=y_image)
            if relu:
                flat = y_image.reshape(relu_rows)
                np.maximum(flat, zeros, out=flat)
        return y
    return conv


def _takes_biased_pointwise(weight_shape: Sequence[int], groups: int, x_shape: Sequence[int],
                            out: Sequence[int]) -> bool:
    """A 1×1 convolution of several groups; or of one group whose output has more values than its input,
    or of a stride above 1, whose strided positions are copied anyway."""
    return all(k == 1 for k in weight_shape[2:]) and (
        groups > 1 or tuple(out) != tuple(x_shape[2:]) or weight_shape[0] > x_shape[1])


def conv(x_shape: Sequence[int], weight_shape: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
         pads: Pads, groups: int, out: Sequence[int], dtype: np.dtype,
         constant_weight: Optional[np.ndarray] = None, bias: Optional[np.ndarray] = None,
         relu: bool = False, destination: Destination = None) -> Callable:
    """``conv(x, weight)``: [N, C_in, *spatial] * [C_out, C_in / groups, *kernel] -> [N, C_out, *out].
    ``constant_weight``, where given, is the value ``weight`` has at every call (a constant): the
    kernel reads it, or what it prepared from it once, and ignores its ``weight`` argument. ``bias``
    (one value per output channel) is added to the result, by the matrix product itself where the
    kernel makes a column matrix or goes by Winograd. With ``relu`` the result is max(result, 0), taken
    in the kernel's own passes where it has some that can (each band of a column matrix, each image of a
    1×1 convolution with its bias in the product, Winograd's output blocks), else in a pass of its own.

    A large column matrix is made and multiplied a band of output rows at a time, each band small
    enough to stay in cache between its copy and its product. With a ``destination``, the result goes
    into the array it gives (copied there, from kernels that cannot write into it themselves)."""
    if depthwise.applies(x_shape, weight_shape, groups, dtype):
        return depthwise.depthwise_conv(x_shape, weight_shape, stride, dilation, pads, out, dtype, constant_weight,
                                        bias, relu, destination)
    compute = compute_type(dtype)
    fused_relu = relu and dtype == compute
    if relu and not (bias is not None and fused_relu):
        plain = conv(x_shape, weight_shape, stride, dilation, pads, groups, out, dtype, constant_weight, bias)
        return _into(_with_relu(plain, (x_shape[0], weight_shape[0], *out), np.dtype(dtype)), destination)
    if constant_weight is not None and bias is None and not winograd.applies(
            x_shape, weight_shape, stride, dilation, groups, out, True):
        kernel = _unbiased_conv(x_shape, weight_shape, stride, dilation, pads, groups, out, dtype, None, destination)
        fixed = np.asarray(constant_weight)
        return lambda x, _weight: kernel(x, fixed)
    if bias is not None:
        bias = np.asarray(bias, compute)
        if winograd.applies(x_shape, weight_shape, stride, dilation, groups, out, constant_weight is not None):
            return winograd.winograd_conv(x_shape, weight_shape, pads, out, compute, dtype, constant_weight, bias,
                                          relu=relu, destination=destination)
        if constant_weight is not None and groups == 1 and any(k != 1 for k in weight_shape[2:]) and not (
                _takes_shifted_taps(weight_shape, stride, groups)) and dtype == compute:
            return _biased_columns_conv(x_shape, constant_weight, bias, stride, dilation, pads, out, compute, relu,
                                        destination)
        if (constant_weight is not None and dtype == compute and all(k == 1 for k in weight_shape[2:])
                and not any(b or e for b, e in pads)):
            return _biased_pointwise_conv(x_shape, constant_weight, bias, stride, out, compute, relu, destination,
                                          groups)
        unbiased = conv(x_shape, weight_shape, stride, dilation, pads, groups, out, dtype, constant_weight)
        column = bias.reshape(-1, 1)
        by_channel = (x_shape[0], weight_shape[0], -1)

        def biased(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
            y = unbiased(x, weight)
            flat = y.reshape(by_channel)
            np.add(flat, column.astype(y.dtype, copy=False), out=flat)
            return y
        shape = (x_shape[0], weight_shape[0], *out)
        return _into(_with_relu(biased, shape, np.dtype(dtype)) if relu else biased, destination)
    return _unbiased_conv(x_shape, weight_shape, stride, dilation, pads, groups, out, dtype, constant_weight,
                          destination)


def _into(kernel: Callable, destination: Destination) -> Callable:
    """``kernel``, its fresh result then copied into ``destination()`` where there is one: for kernels that
    cannot write into it themselves."""
    if destination is None:
        return kernel

    def copied(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        y = kernel(x, weight)
        into = destination()
        np.copyto(into, y)
        return into
    return copied


def _with_relu(kernel: Callable, out_shape: Sequence[int], dtype: np.dtype) -> Callable:
    """``kernel`` followed by max(result, 0) over the result itself."""
    rows, zeros = zero_rows(out_shape, dtype)

    def relu(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        y = kernel(x, weight)
        flat = y.reshape(rows)
        np.maximum(flat, zeros, out=flat)
        return y
    return relu


def _unbiased_conv(x_shape: Sequence[int], weight_shape: Sequence[int], stride: Sequence[int],
                   dilation: Sequence[int], pads: Pads, groups: int, out: Sequence[int], dtype: np.dtype,
                   constant_weight: Optional[np.ndarray], destination: Destination = None) -> Callable:
    """``conv`` without a bias; only Winograd's kernel reads ``constant_weight``."""
    compute = compute_type(dtype)
    pad = padder(x_shape, pads, 0, compute)
    kernel = tuple(weight_shape[2:])
    n, c_in, c_out = x_shape[0], x_shape[1], weight_shape[0]
    group_rows = weight_shape[1] * math.prod(kernel)
    positions = math.prod(out)
    out_shape = (n, c_out, *out)
    weight_matrix = (groups, c_out // groups, group_rows)
    if all(k == 1 for k in kernel):
        def pointwise(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
            cols = _pointwise_columns(pad(x.astype(compute, copy=False)), stride, out)
            w = weight.astype(compute, copy=False).reshape(weight_matrix)
            y = np.matmul(w[0], cols) if groups == 1 else np.matmul(w, cols.reshape(n, groups, -1, positions))
            return y.reshape(out_shape).astype(dtype, copy=False)
        return _into(pointwise, destination)
    if winograd.applies(x_shape, weight_shape, stride, dilation, groups, out, constant_weight is not None):
        return winograd.winograd_conv(x_shape, weight_shape, pads, out, compute, dtype, constant_weight,
                                      destination=destination)
    if _takes_shifted_taps(weight_shape, stride, groups):
        return _shifted_taps_conv(x_shape, weight_shape, dilation, pads, out, dtype, destination)

    padded_shape = (n, c_in) + tuple(size + b + e for size, (b, e) in zip(x_shape[2:], pads))
    window_view = _window_view(padded_shape, kernel, stride, dilation, out, compute)
    band_positions = positions // out[0]  # output positions per row of the first spatial axis
    band, bands = _bands(c_in, kernel, out, compute.itemsize)

    def columns(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        windows = window_view(pad(x.astype(compute, copy=False)))
        w = weight.astype(compute, copy=False).reshape(weight_matrix)
        y = np.empty((n, groups, c_out // groups, positions), compute)
        if len(bands) == 1:
            cols = np.ascontiguousarray(windows).reshape(n, groups, group_rows, positions)
            np.matmul(w, cols, out=y)
        else:
            buffer = np.empty(c_in * math.prod(kernel) * band * band_positions, compute)
            for image in range(n):
                for start, stop in bands:
                    part = windows[(image, Ellipsis, slice(start, stop)) + (slice(None),) * (len(out) - 1)]
                    cols = buffer[:part.size].reshape(part.shape)
                    np.copyto(cols, part)
                    size = (stop - start) * band_positions
                    np.matmul(w, cols.reshape(groups, group_rows, size),
                              out=y[image, :, :, start * band_positions:stop * band_positions])
        return y.reshape(out_shape).astype(dtype, copy=False)
    return _into(columns, destination)


def conv_transpose(x_shape: Sequence[int], weight_shape: Sequence[int], stride: Sequence[int],
                   dilation: Sequence[int], pads_begin: Sequence[int], out: Sequence[int], groups: int,
                   dtype: np.dtype) -> Callable:
    """``conv_transpose(x, weight)``: one matrix product gives every kernel offset's contribution
    ([N, C_out·K, P]), then each offset's slab is added into its strided place (col2im)."""
    compute = compute_type(dtype)
    kernel = tuple(weight_shape[2:])
    n, c_in, spatial = x_shape[0], x_shape[1], tuple(x_shape[2:])
    c_out_group = weight_shape[1]
    full = tuple(max(s * (m - 1) + (k - 1) * d + 1, b + o) for m, k, s, d, b, o in zip(
        spatial, kernel, stride, dilation, pads_begin, out))
    crop = (slice(None),) * 2 + tuple(slice(b, b + o) for b, o in zip(pads_begin, out))
    places = offset_slices(kernel, stride, dilation, spatial)
    k_total, positions = math.prod(kernel), math.prod(spatial)

    def conv_transpose(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        x, weight = x.astype(compute, copy=False), weight.astype(compute, copy=False)
        # [G, C_out/G·K, C_in/G] @ [N, G, C_in/G, P] -> [N, G, C_out/G, K, P]
        lhs = weight.reshape(groups, c_in // groups, c_out_group * k_total).transpose(0, 2, 1)
        parts = np.matmul(lhs, x.reshape(n, groups, c_in // groups, positions)).reshape(
            n, groups * c_out_group, k_total, *spatial)
        result = np.zeros((n, groups * c_out_group) + full, compute)
        for index, place in enumerate(places):
            result[place] += parts[:, :, index]
        return result[crop].astype(dtype)
    return conv_transpose
