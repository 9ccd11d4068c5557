"""conv, conv_transpose, max_pool and average_pool against direct loops over every output element."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from helpers import run_op
from workbench.ops import conv_kernels

RNG = np.random.default_rng(5)


def normal(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.fixture
def graph():
    ir = popxl.Ir()
    with ir.main_graph:
        yield ir.main_graph


def conv_loop(x, w, stride, begin, end, dilation, groups):
    """out[n, m, o] = sum over c, k of padded_x[n, group(m) channel c, o * stride + k * dilation] * w[m, c, k]:
    for each output position, its window of the padded input (every channel c and kernel offset k at once)
    summed against the weights of its group's output channels m."""
    rank = x.ndim - 2
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + list(zip(begin, end)))
    out_channels, group_channels = w.shape[:2]
    kernel = w.shape[2:]
    out_shape = [(padded.shape[2 + i] - (kernel[i] - 1) * dilation[i] - 1) // stride[i] + 1 for i in range(rank)]
    out = np.zeros((x.shape[0], out_channels, *out_shape))
    per_group = out_channels // groups
    for n, g, *o in np.ndindex(x.shape[0], groups, *out_shape):
        window = tuple(slice(o[i] * stride[i], o[i] * stride[i] + (kernel[i] - 1) * dilation[i] + 1, dilation[i])
                       for i in range(rank))
        patch = padded[(n, slice(g * group_channels, (g + 1) * group_channels)) + window]  # [c, *k]
        outputs = slice(g * per_group, (g + 1) * per_group)
        out[(n, outputs, *o)] = np.tensordot(w[outputs].astype(np.float64), patch, axes=rank + 1)
    return out


# ----- conv -----
@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation, groups", [
    ((2, 3, 5, 5), (4, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 2, 6, 7), (3, 2, 3, 2), (2, 3), (1, 2, 0, 1), (1, 1), 1),
    ((1, 4, 7, 7), (6, 2, 3, 3), (1, 1), (1, 1, 1, 1), (2, 1), 2),
    ((2, 4, 5, 5), (4, 1, 2, 2), (1, 2), (0, 1, 1, 0), (1, 2), 4),
    ((2, 3, 9), (2, 3, 4), (2,), (1, 2), (2,), 1),
    ((1, 2, 4, 4, 3), (2, 2, 2, 2, 2), (1, 2, 1), (0, 1, 0, 1, 0, 1), (1, 1, 2), 1),
])
def test_conv_matches_a_direct_loop(x_shape, w_shape, stride, padding, dilation, groups):
    x, w = normal(*x_shape), normal(*w_shape)
    rank = len(x_shape) - 2
    result = run_op(lambda t, k: ops.conv(t, k, stride, padding, dilation, groups), x, w)
    expected = conv_loop(x, w, stride, padding[:rank], padding[rank:], dilation, groups)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)


def test_conv_defaults_and_a_1d_input_with_2d_defaults():
    x, w = normal(1, 2, 5, 5), normal(3, 2, 2, 2)
    np.testing.assert_allclose(run_op(ops.conv, x, w), conv_loop(x, w, (1, 1), (0, 0), (0, 0), (1, 1), 1),
                               rtol=1e-4, atol=1e-5)
    x1, w1 = normal(2, 2, 6), normal(1, 2, 3)
    np.testing.assert_allclose(run_op(ops.conv, x1, w1), conv_loop(x1, w1, (1,), (0,), (0,), (1,), 1),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pad_type, begin, end", [("same_upper", (1, 0), (2, 1)), ("same_lower", (2, 1), (1, 0)),
                                                  ("valid", (0, 0), (0, 0))])
def test_conv_pad_types(pad_type, begin, end):
    x, w = normal(1, 1, 6, 5), normal(2, 1, 4, 2)
    result = run_op(lambda t, k: ops.conv(t, k, pad_type=pad_type), x, w)
    if pad_type != "valid":
        assert result.shape[2:] == (6, 5)
    np.testing.assert_allclose(result, conv_loop(x, w, (1, 1), begin, end, (1, 1), 1), rtol=1e-4, atol=1e-5)


def test_conv_same_padding_with_stride_gives_ceil_of_input_over_stride():
    x, w = normal(1, 1, 7, 7), normal(1, 1, 3, 3)
    result = run_op(lambda t, k: ops.conv(t, k, stride=(2, 2), pad_type="same_upper"), x, w)
    assert result.shape == (1, 1, 4, 4)
    np.testing.assert_allclose(result, conv_loop(x, w, (2, 2), (1, 1), (1, 1), (1, 1), 1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation, groups", [
    ((2, 3, 9, 6), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((1, 4, 11, 7), (6, 2, 3, 2), (2, 1), (0, 1, 2, 0), (1, 2), 2),
    ((1, 2, 7, 4, 3), (2, 2, 2, 2, 2), (2, 1, 1), (1, 0, 1, 0, 1, 0), (1, 1, 1), 1),
])
def test_conv_made_a_band_of_output_rows_at_a_time(monkeypatch, x_shape, w_shape, stride, padding, dilation,
                                                   groups):
    """A column matrix over the size limit is made and multiplied in bands of output rows (here
    one or two rows a band), with the same result."""
    monkeypatch.setattr(conv_kernels, "CHUNK_BYTES", 2 * 4 * int(np.prod(w_shape[1:])) * x_shape[-1])
    monkeypatch.setattr(conv_kernels, "FEW_OUTPUTS", 0)  # every convolution makes a column matrix
    x, w = normal(*x_shape), normal(*w_shape)
    rank = len(x_shape) - 2
    result = run_op(lambda t, k: ops.conv(t, k, stride, padding, dilation, groups), x, w)
    expected = conv_loop(x, w, stride, padding[:rank], padding[rank:], dilation, groups)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("x_shape, w_shape, padding, dilation", [
    ((2, 3, 7, 5), (4, 3, 3, 3), (1, 1, 1, 1), (1, 1)),
    ((1, 5, 6, 9), (32, 5, 2, 4), (0, 2, 1, 0), (1, 1)),
    ((1, 4, 9, 8), (7, 4, 3, 2), (2, 0, 2, 3), (2, 3)),
    ((1, 2, 3, 3), (1, 2, 3, 3), (0, 0, 0, 0), (1, 1)),
])
@pytest.mark.parametrize("few_outputs", [0, 32])
def test_conv_of_few_output_channels_adds_one_product_per_kernel_offset(monkeypatch, few_outputs, x_shape, w_shape,
                                                                         padding, dilation):
    """A 2-D convolution of stride 1 with at most ``FEW_OUTPUTS`` output channels multiplies shifted
    views of its padded input, one per kernel offset; with none allowed it makes a column matrix. Both
    give the direct loop's result."""
    monkeypatch.setattr(conv_kernels, "FEW_OUTPUTS", few_outputs)
    x, w = normal(*x_shape), normal(*w_shape)
    result = run_op(lambda t, k: ops.conv(t, k, (1, 1), padding, dilation), x, w)
    expected = conv_loop(x, w, (1, 1), padding[:2], padding[2:], dilation, 1)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)


def test_conv_of_a_transposed_input_without_padding():
    """The input is then a strided NumPy view, read as it is."""
    x, w = normal(1, 2, 6, 5), normal(3, 2, 2, 3)
    result = run_op(lambda t, k: ops.conv(ops.transpose(t, (0, 1, 3, 2)), k), x, w)
    expected = conv_loop(x.transpose(0, 1, 3, 2), w, (1, 1), (0, 0), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)


def test_conv_in_float16():
    x, w = normal(1, 2, 4, 4, dtype=np.float16), normal(2, 2, 3, 3, dtype=np.float16)
    result = run_op(ops.conv, x, w)
    assert result.dtype == np.float16
    np.testing.assert_allclose(result, conv_loop(x, w, (1, 1), (0, 0), (0, 0), (1, 1), 1), rtol=1e-2, atol=1e-2)


def test_conv_errors(graph):
    x = popxl.variable(np.zeros((1, 4, 5, 5), np.float32))
    with pytest.raises(ValueError, match=r"weight \(3, 3, 3, 3\) must be \[C_out, C_in / groups, \*kernel\]"):
        ops.conv(x, popxl.variable(np.zeros((3, 3, 3, 3), np.float32)))
    with pytest.raises(ValueError, match=r"C_out divisible by groups=2"):
        ops.conv(x, popxl.variable(np.zeros((3, 2, 3, 3), np.float32)), groups=2)
    with pytest.raises(ValueError, match="does not fit the padded input"):
        ops.conv(x, popxl.variable(np.zeros((1, 4, 6, 6), np.float32)))
    with pytest.raises(ValueError, match="pad type 'same' is not valid"):
        ops.conv(x, popxl.variable(np.zeros((1, 4, 3, 3), np.float32)), pad_type="same")
    with pytest.raises(ValueError, match=r"stride needs 2 values for this input, got \[1, 2, 3\]"):
        ops.conv(x, popxl.variable(np.zeros((1, 4, 3, 3), np.float32)), stride=(1, 2, 3))
    with pytest.raises(ValueError, match="1 to 3 spatial axes"):
        ops.conv(popxl.variable(np.zeros((4, 5), np.float32)), popxl.variable(np.zeros((1, 5), np.float32)))
    with pytest.raises(TypeError, match="conv: expected a float tensor, got int32"):
        ops.conv(popxl.variable(np.zeros((1, 1, 3, 3), np.int32)), popxl.variable(np.zeros((1, 1, 1, 1), np.int32)))


# ----- conv_transpose -----
def conv_transpose_loop(x, w, stride, begin, out_shape, dilation, groups):
    """Scatter every input element times the kernel into the full output, then crop."""
    rank = x.ndim - 2
    in_per_group, out_per_group = x.shape[1] // groups, w.shape[1]
    kernel = w.shape[2:]
    full = [stride[i] * (x.shape[2 + i] - 1) + (kernel[i] - 1) * dilation[i] + 1 for i in range(rank)]
    size = [max(f, b + o) for f, b, o in zip(full, begin, out_shape)]
    out = np.zeros((x.shape[0], out_per_group * groups, *size))
    for n, c, *i in np.ndindex(*x.shape):
        g = c // in_per_group
        for m in range(out_per_group):
            for k in np.ndindex(*kernel):
                position = tuple(i[d] * stride[d] + k[d] * dilation[d] for d in range(rank))
                out[(n, g * out_per_group + m) + position] += x[(n, c, *i)] * w[(c, m) + k]
    return out[(slice(None), slice(None)) + tuple(slice(b, b + o) for b, o in zip(begin, out_shape))]


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation, groups, output_padding, out_shape", [
    ((1, 2, 3, 3), (2, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1, (0, 0), (5, 5)),
    ((2, 2, 3, 4), (2, 1, 3, 2), (2, 3), (1, 0, 1, 1), (1, 1), 1, (0, 0), (5, 10)),
    ((1, 4, 3, 3), (4, 2, 2, 2), (2, 2), (0, 0, 0, 0), (2, 1), 2, (1, 1), (8, 7)),
    ((1, 1, 4), (1, 2, 3), (3,), (2, 1), (1,), 1, (2,), (11,)),
])
def test_conv_transpose_matches_a_direct_loop(x_shape, w_shape, stride, padding, dilation, groups,
                                              output_padding, out_shape):
    x, w = normal(*x_shape), normal(*w_shape)
    rank = len(x_shape) - 2
    result = run_op(lambda t, k: ops.conv_transpose(t, k, stride, padding, dilation, groups,
                                                    output_padding=output_padding), x, w)
    assert result.shape[2:] == out_shape
    expected = conv_transpose_loop(x, w, stride, padding[:rank], out_shape, dilation, groups)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)


def test_conv_transpose_is_the_adjoint_of_conv():
    x, w = normal(2, 3, 7, 6), normal(4, 3, 3, 2)
    stride, padding = (2, 1), (1, 0, 1, 1)
    y = run_op(lambda t, k: ops.conv(t, k, stride, padding), x, w)
    g = normal(*y.shape)
    back = run_op(lambda t, k: ops.conv_transpose(t, k, stride, padding), g, w)
    assert back.shape == x.shape
    np.testing.assert_allclose(np.vdot(y, g), np.vdot(x, back), rtol=1e-4)


@pytest.mark.parametrize("pad_type", ["not_set", "same_upper", "same_lower"])
def test_conv_transpose_output_shape_and_same_padding(pad_type):
    x, w = normal(1, 1, 3, 3), normal(1, 1, 3, 3)
    total = 2 * 2 + 3 - 6
    begin = total // 2 if pad_type == "same_upper" else total - total // 2
    result = run_op(lambda t, k: ops.conv_transpose(t, k, stride=(2, 2), pad_type=pad_type,
                                                    output_shape=(6, 6)), x, w)
    assert result.shape == (1, 1, 6, 6)
    expected = conv_transpose_loop(x, w, (2, 2), (begin, begin), (6, 6), (1, 1), 1)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)
    whole = run_op(lambda t, k: ops.conv_transpose(t, k, stride=(2, 2), pad_type=pad_type,
                                                   output_shape=(1, 1, 6, 6)), x, w)
    np.testing.assert_array_equal(whole, result)  # the whole output shape, as popxl's own tests give it


def test_conv_transpose_errors(graph):
    x = popxl.variable(np.zeros((1, 2, 3, 3), np.float32))
    with pytest.raises(ValueError, match=r"weight \(3, 1, 3, 3\) must be \[C_in, C_out / groups, \*kernel\]"):
        ops.conv_transpose(x, popxl.variable(np.zeros((3, 1, 3, 3), np.float32)))
    with pytest.raises(ValueError, match=r"output shape \[9, 9\] is larger than the largest possible \[5, 5\]"):
        ops.conv_transpose(x, popxl.variable(np.zeros((2, 1, 3, 3), np.float32)), output_shape=(9, 9))
    with pytest.raises(ValueError, match=r"must start with the batch and output channels \[1, 1\]"):
        ops.conv_transpose(x, popxl.variable(np.zeros((2, 1, 3, 3), np.float32)), output_shape=(2, 1, 5, 5))


# ----- pooling -----
def average(values, axis):
    """The mean of ``values`` along ``axis``, summed in float64."""
    return values.mean(axis=axis, dtype=np.float64)


def pool_loop(x, kernel, stride, begin, end, dilation, ceil_mode, reduce):
    """Each output element reduces the input elements its window covers (``reduce(values, axis)``, every
    batch and channel's window at once for each output position); pads are left out."""
    rank = x.ndim - 2
    spans = [x.shape[2 + i] + begin[i] + end[i] - (kernel[i] - 1) * dilation[i] - 1 for i in range(rank)]
    out_shape = [(-(-s // stride[i]) if ceil_mode else s // stride[i]) + 1 for i, s in enumerate(spans)]
    out_shape = [o - 1 if ceil_mode and (o - 1) * stride[i] >= x.shape[2 + i] + begin[i] else o
                 for i, o in enumerate(out_shape)]
    out = np.zeros(x.shape[:2] + tuple(out_shape), x.dtype)
    for o in np.ndindex(*out_shape):
        starts = [o[i] * stride[i] - begin[i] for i in range(rank)]
        covered = [[p for k in range(kernel[i]) if 0 <= (p := starts[i] + k * dilation[i]) < x.shape[2 + i]]
                   for i in range(rank)]
        values = x[(slice(None), slice(None)) + np.ix_(*covered)]
        out[(slice(None), slice(None), *o)] = reduce(values.reshape(*x.shape[:2], -1), axis=-1)
    return out


@pytest.mark.parametrize("name, reduce", [("max_pool", np.max), ("average_pool", average)])
@pytest.mark.parametrize("x_shape, kernel, stride, padding, dilation, ceil_mode", [
    ((2, 3, 6, 6), (2, 2), (2, 2), None, None, False),
    ((1, 2, 7, 5), (3, 2), (2, 1), (1, 0, 1, 1), None, False),
    ((1, 1, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1), None, True),
    ((1, 2, 8, 6), (2, 3), (3, 2), (0, 1, 0, 0), (2, 1), True),
    ((2, 2, 9), (3,), (2,), (1, 1), None, False),
    ((1, 1, 4, 5, 6), (2, 2, 3), (2, 1, 3), None, None, False),
])
def test_pools_match_a_direct_loop(name, reduce, x_shape, kernel, stride, padding, dilation, ceil_mode):
    x = normal(*x_shape)
    rank = len(x_shape) - 2
    pool = getattr(ops, name)
    result = run_op(lambda t: pool(t, kernel, stride, padding, dilation=dilation, ceil_mode=ceil_mode), x)
    padding = padding or (0,) * 2 * rank
    expected = pool_loop(x, kernel, stride, padding[:rank], padding[rank:], dilation or (1,) * rank, ceil_mode,
                         reduce)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("auto_pad", ["same_upper", "same_lower"])
def test_pool_same_padding(auto_pad):
    x = normal(1, 1, 5, 5)
    result = run_op(lambda t: ops.max_pool(t, (2, 2), (2, 2), auto_pad=auto_pad), x)
    begin, end = ((0, 0), (1, 1)) if auto_pad == "same_upper" else ((1, 1), (0, 0))
    assert result.shape == (1, 1, 3, 3)
    np.testing.assert_array_equal(result, pool_loop(x, (2, 2), (2, 2), begin, end, (1, 1), False, np.max))


def test_average_pool_in_float16():
    x = normal(1, 2, 4, 4, dtype=np.float16)
    result = run_op(lambda t: ops.average_pool(t, (2, 2), (2, 2)), x)
    assert result.dtype == np.float16
    np.testing.assert_allclose(result, x.astype(np.float32).reshape(1, 2, 2, 2, 2, 2).mean((3, 5)), rtol=1e-3)


def test_pool_errors(graph):
    x = popxl.variable(np.zeros((1, 1, 4, 4), np.float32))
    with pytest.raises(ValueError, match=r"kernel_size needs 2 positive values for input \(1, 1, 4, 4\), got \[3\]"):
        ops.max_pool(x, (3,))
    with pytest.raises(ValueError, match="does not fit the padded input"):
        ops.average_pool(x, (5, 5))
    with pytest.raises(NotImplementedError, match="out_pads and in_dilations"):
        ops.average_pool(x, (2, 2), in_dilations=(2, 2))
    with pytest.raises(ValueError, match="storage_order must be 'row' or 'column'"):
        ops.max_pool(x, (2, 2), storage_order="diagonal")
    with pytest.raises(TypeError, match="max_pool: expected a float tensor, got int32"):
        ops.max_pool(popxl.variable(np.zeros((1, 1, 4, 4), np.int32)), (2, 2))


# ----- roi_align -----
def bilinear(image, y, x):
    """One bilinear sample of a [H, W] map, zero more than one pixel outside it."""
    height, width = image.shape
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y1, x1 = y0 + 1, x0 + 1
    if y0 >= height - 1:
        y0 = y1 = height - 1
        y = float(y0)
    if x0 >= width - 1:
        x0 = x1 = width - 1
        x = float(x0)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * image[y0, x0] + (1 - ly) * lx * image[y0, x1] + ly * (1 - lx) * image[y1, x0]
            + ly * lx * image[y1, x1])


def roi_align_loop(t, rois, batch_index, output_size, scale, ratio):
    out_h, out_w = output_size
    out = np.zeros((len(rois), t.shape[1], out_h, out_w))
    for r, c, ph, pw in np.ndindex(*out.shape):
        x1, y1, x2, y2 = rois[r] * scale
        roi_h, roi_w = max(y2 - y1, 1.0), max(x2 - x1, 1.0)
        grid_h = ratio or int(np.ceil(roi_h / out_h))
        grid_w = ratio or int(np.ceil(roi_w / out_w))
        total = 0.0
        for iy in range(grid_h):
            for ix in range(grid_w):
                y = y1 + ph * roi_h / out_h + (iy + 0.5) * roi_h / out_h / grid_h
                x = x1 + pw * roi_w / out_w + (ix + 0.5) * roi_w / out_w / grid_w
                total += bilinear(t[batch_index[r], c], y, x)
        out[r, c, ph, pw] = total / (grid_h * grid_w)
    return out


@pytest.mark.parametrize("ratio, scale", [(2, 1.0), (0, 0.5), (1, 0.25)])
def test_roi_align_matches_a_direct_loop(ratio, scale):
    t = normal(2, 3, 6, 7)
    rois = np.array([[0.0, 0.0, 6.0, 5.0], [2.5, 1.0, 11.0, 9.5], [-3.0, -2.0, 1.0, 0.5], [4.0, 3.0, 4.2, 3.1],
                     [10.0, 8.0, 30.0, 20.0]], np.float32) / scale * 0.5
    batch_index = np.array([0, 1, 1, 0, 1], np.int32)
    result = run_op(lambda a, b, c: ops.roi_align(a, b, c, (2, 3), scale, ratio), t, rois, batch_index)
    np.testing.assert_allclose(result, roi_align_loop(t, rois, batch_index, (2, 3), scale, ratio),
                               rtol=1e-5, atol=1e-6)


def test_roi_align_errors(graph):
    t = popxl.variable(np.zeros((1, 2, 4, 4), np.float32))
    rois = popxl.variable(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"batch_index \[num_rois\], got .* \(2,\)"):
        ops.roi_align(t, rois, popxl.variable(np.zeros(2, np.int32)), (2, 2), 1.0, 2)
    with pytest.raises(ValueError, match="output_size must be two positive ints"):
        ops.roi_align(t, rois, popxl.variable(np.zeros(3, np.int32)), (2,), 1.0, 2)


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, chunk", [
    ((1, 3, 12, 11), (40, 3, 3, 3), (2, 2), (1, 1, 0, 1), None),     # columns with a row of ones
    ((2, 4, 9, 8), (48, 4, 3, 2), (1, 1), (1, 0, 1, 1), 4 * 40),     # the same, a band of rows at a time
    ((1, 5, 7, 6), (8, 5, 3, 3), (1, 1), (1, 1, 1, 1), None),        # few outputs: shifted taps, bias after
    ((2, 6, 5, 4), (5, 6, 1, 1), (1, 1), (0, 0, 0, 0), None),        # 1×1 to fewer channels, bias after
    ((2, 6, 5, 4), (14, 6, 1, 1), (1, 1), (0, 0, 0, 0), None),       # 1×1 to more: input and a row of ones
    ((1, 4, 9, 8), (3, 4, 1, 1), (2, 2), (0, 0, 0, 0), None),        # the same, its strided positions
])
def test_a_constant_weight_and_bias_give_the_loop_plus_the_bias(monkeypatch, x_shape, w_shape, stride, padding,
                                                                  chunk):
    if chunk:
        monkeypatch.setattr(conv_kernels, "CHUNK_BYTES", chunk)
    x, w = normal(*x_shape), normal(*w_shape)
    bias = normal(w_shape[0])
    expected = conv_loop(x, w, stride, padding[:2], padding[2:], (1, 1), 1) + bias[:, None, None]
    kernel = conv_kernels.conv(x_shape, w_shape, stride, (1, 1), tuple(zip(padding[:2], padding[2:])), 1,
                               expected.shape[2:], np.float32, w, bias)
    for _ in range(2):  # the same kernel serves run after run
        np.testing.assert_allclose(kernel(x, w), expected, rtol=1e-4, atol=1e-5)
        x = normal(*x_shape)
        expected = conv_loop(x, w, stride, padding[:2], padding[2:], (1, 1), 1) + bias[:, None, None]


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, chunk", [
    ((1, 3, 12, 11), (40, 3, 3, 3), (2, 2), (1, 1, 0, 1), None),     # columns with a row of ones
    ((2, 4, 9, 8), (48, 4, 3, 2), (1, 1), (1, 0, 1, 1), 4 * 40),     # the same, a band of rows at a time
    ((1, 5, 7, 6), (8, 5, 3, 3), (1, 1), (1, 1, 1, 1), None),        # shifted taps, then a pass of its own
    ((2, 6, 5, 4), (5, 6, 1, 1), (1, 1), (0, 0, 0, 0), None),        # 1×1 to fewer channels
    ((2, 6, 5, 4), (14, 6, 1, 1), (1, 1), (0, 0, 0, 0), None),       # 1×1 to more
    ((1, 40, 16, 16), (48, 40, 3, 3), (1, 1), (1, 1, 1, 1), None),   # Winograd, then a pass of its own
])
@pytest.mark.parametrize("with_bias", [True, False])
def test_a_relu_after_a_constant_weight_gives_the_loops_positive_part(monkeypatch, x_shape, w_shape, stride,
                                                                      padding, chunk, with_bias):
    if chunk:
        monkeypatch.setattr(conv_kernels, "CHUNK_BYTES", chunk)
    x, w = normal(*x_shape), normal(*w_shape)
    bias = normal(w_shape[0]) if with_bias else None
    expected = conv_loop(x, w, stride, padding[:2], padding[2:], (1, 1), 1)
    expected = np.maximum(expected + (bias[:, None, None] if with_bias else 0), 0)
    kernel = conv_kernels.conv(x_shape, w_shape, stride, (1, 1), tuple(zip(padding[:2], padding[2:])), 1,
                               expected.shape[2:], np.float32, w, bias, relu=True)
    for _ in range(2):
        y = kernel(x, w)
        assert (y == 0).any() and (y > 0).any()
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
        x = normal(*x_shape)
        expected = conv_loop(x, w, stride, padding[:2], padding[2:], (1, 1), 1)
        expected = np.maximum(expected + (bias[:, None, None] if with_bias else 0), 0)


@pytest.mark.parametrize("x_shape, w_shape, stride, groups", [
    ((1, 8, 5, 5), (12, 2, 1, 1), (1, 1), 4),     # ShuffleNet's grouped 1×1 layers, smaller
    ((2, 6, 7, 4), (6, 2, 1, 1), (1, 1), 3),      # two images
    ((1, 6, 7, 7), (4, 3, 1, 1), (2, 3), 2),      # strided: rows and columns left out
])
@pytest.mark.parametrize("relu", [False, True])
def test_a_grouped_1x1_convolution_with_a_bias_gives_the_loop_plus_the_bias(x_shape, w_shape, stride, groups, relu):
    """Its input is copied beside a row of ones per group, so that the product adds the bias; into a
    concat's stretch where it has one."""
    x, w, bias = normal(*x_shape), normal(*w_shape), normal(w_shape[0])
    expected = conv_loop(x, w, stride, (0, 0), (0, 0), (1, 1), groups) + bias[:, None, None]
    if relu:
        expected = np.maximum(expected, 0)
    assert conv_kernels._takes_biased_pointwise(w_shape, groups, x_shape, expected.shape[2:])
    whole = np.zeros((x_shape[0], w_shape[0] + 3, *expected.shape[2:]), np.float32)
    for destination in (None, lambda: whole[:, 1:1 + w_shape[0]]):
        kernel = conv_kernels.conv(x_shape, w_shape, stride, (1, 1), ((0, 0), (0, 0)), groups, expected.shape[2:],
                                   np.float32, w, bias, relu, destination)
        for _ in range(2):  # the same kernel serves run after run
            np.testing.assert_allclose(kernel(x, w), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(whole[:, 1:1 + w_shape[0]], expected, rtol=1e-4, atol=1e-5)
    assert not whole[:, 0].any() and not whole[:, 1 + w_shape[0]:].any()
