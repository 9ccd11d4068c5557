"""Large 3×3 convolutions of stride 1 go by Winograd's F(4×4, 3×3) (``ops/winograd.py``): the same results as
a float64 direct convolution within float32 rounding, for every padding, batch and dtype; others do not."""
import numpy as np
import pytest

import popxl.ops as ops
from helpers import run_op
from workbench.ops import conv_kernels, winograd

RNG = np.random.default_rng(7)


def direct(x: np.ndarray, w: np.ndarray, begin, end) -> np.ndarray:
    """The convolution in float64: one product per kernel offset of the shifted padded input."""
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + list(zip(begin, end)))
    out = (padded.shape[2] - 2, padded.shape[3] - 2)
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for i, j in np.ndindex(3, 3):
        window = padded[:, :, i:i + out[0], j:j + out[1]]
        y += np.einsum("nchw,oc->nohw", window, w[:, :, i, j].astype(np.float64))
    return y


@pytest.mark.parametrize("x_shape, c_out, begin, end", [
    ((1, 64, 28, 28), 32, (1, 1), (1, 1)),      # output a multiple of 4
    ((2, 64, 30, 29), 8, (1, 1), (1, 1)),       # two images, blocks cropped
    ((1, 64, 31, 33), 16, (0, 2), (1, 0)),      # uneven padding
    ((1, 64, 30, 30), 4, (0, 0), (0, 0)),       # no padding
])
@pytest.mark.parametrize("group_bytes", [None, 36 * 64 * 8 * 4 * 2, 36 * 64 * 9 * 4 * 3],
                         ids=["all tiles at once", "small groups of tile rows", "larger groups"])
def test_the_kernel_matches_a_float64_direct_convolution(monkeypatch, x_shape, c_out, begin, end, group_bytes):
    if group_bytes:  # groups of tile rows, the last one shorter where the rows do not divide evenly
        monkeypatch.setattr(winograd, "TILE_GROUP_BYTES", group_bytes)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = (RNG.standard_normal((c_out, x_shape[1], 3, 3)) / np.sqrt(9 * x_shape[1])).astype(np.float32)
    expected = direct(x, w, begin, end)
    out = expected.shape[2:]
    assert winograd.applies(x_shape, w.shape, (1, 1), (1, 1), 1, out)
    kernel = conv_kernels.conv(x_shape, w.shape, (1, 1), (1, 1), tuple(zip(begin, end)), 1, out, np.float32)
    result = kernel(x, w)
    assert result.dtype == np.float32 and result.shape == expected.shape and result.flags.c_contiguous
    np.testing.assert_allclose(result, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def test_float16_is_computed_in_float32_and_rounded_once():
    x = RNG.standard_normal((1, 64, 28, 28)).astype(np.float16)
    w = (RNG.standard_normal((8, 64, 3, 3)) / 24).astype(np.float16)
    result = conv_kernels.conv(x.shape, w.shape, (1, 1), (1, 1), ((1, 1), (1, 1)), 1, (28, 28), np.float16)(x, w)
    assert result.dtype == np.float16
    np.testing.assert_allclose(result, direct(x, w, (1, 1), (1, 1)), rtol=2e-3, atol=2e-3)


def test_a_popxl_conv_of_that_size_gives_the_direct_result():
    x = RNG.standard_normal((1, 64, 28, 28)).astype(np.float32)
    w = (RNG.standard_normal((16, 64, 3, 3)) / 24).astype(np.float32)
    result = run_op(lambda t, k: ops.conv(t, k, padding=(1, 1, 1, 1)), x, w)
    expected = direct(x, w, (1, 1), (1, 1))
    np.testing.assert_allclose(result, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("x_shape, w_shape, stride, dilation, groups, out", [
    ((1, 64, 14, 14), (64, 64, 3, 3), (1, 1), (1, 1), 1, (14, 14)),    # too small an output
    ((1, 16, 56, 56), (64, 16, 3, 3), (1, 1), (1, 1), 1, (56, 56)),    # too few input channels
    ((1, 64, 56, 56), (64, 64, 3, 3), (2, 2), (1, 1), 1, (28, 28)),    # strided
    ((1, 64, 60, 60), (64, 64, 3, 3), (1, 1), (2, 2), 1, (56, 56)),    # dilated
    ((1, 64, 56, 56), (64, 32, 3, 3), (1, 1), (1, 1), 2, (54, 54)),    # grouped
    ((1, 64, 56, 56), (64, 64, 5, 5), (1, 1), (1, 1), 1, (52, 52)),    # 5×5
    ((1, 64, 56), (64, 64, 3), (1,), (1,), 1, (54,)),                  # 1-D
])
def test_other_convolutions_go_the_direct_way(x_shape, w_shape, stride, dilation, groups, out):
    assert not winograd.applies(x_shape, w_shape, stride, dilation, groups, out)


@pytest.mark.parametrize("x_shape, c_out", [((1, 32, 13, 13), 40), ((2, 48, 16, 14), 36)])
def test_a_constant_weight_is_transformed_once_and_smaller_convolutions_go_this_way(x_shape, c_out):
    """With the weight known when the kernel is built, 13×13 outputs and 32 input channels pay; the kernel
    keeps its padded input between calls, and each call gives its own input's result."""
    w = (RNG.standard_normal((c_out, x_shape[1], 3, 3)) / np.sqrt(9 * x_shape[1])).astype(np.float32)
    out = x_shape[2:]
    assert winograd.applies(x_shape, w.shape, (1, 1), (1, 1), 1, out, constant_weight=True)
    assert not winograd.applies(x_shape, w.shape, (1, 1), (1, 1), 1, out)
    kernel = conv_kernels.conv(x_shape, w.shape, (1, 1), (1, 1), ((1, 1), (1, 1)), 1, out, np.float32, w)
    ignored = np.zeros_like(w)  # the kernel reads the constant it was given
    for _ in range(2):
        x = RNG.standard_normal(x_shape).astype(np.float32)
        expected = direct(x, w, (1, 1), (1, 1))
        result = kernel(x, ignored)
        assert result.shape == expected.shape and result.flags.c_contiguous
        np.testing.assert_allclose(result, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def test_a_popxl_conv_with_a_constant_weight_gives_the_direct_result():
    import popxl

    x = RNG.standard_normal((1, 32, 13, 13)).astype(np.float32)
    w = (RNG.standard_normal((40, 32, 3, 3)) / 17).astype(np.float32)
    result = run_op(lambda t: ops.conv(t, popxl.constant(w), padding=(1, 1, 1, 1)), x)
    expected = direct(x, w, (1, 1), (1, 1))
    np.testing.assert_allclose(result, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def test_small_outputs_go_the_direct_way_even_with_a_constant_weight():
    assert not winograd.applies((1, 512, 7, 7), (512, 512, 3, 3), (1, 1), (1, 1), 1, (7, 7), constant_weight=True)
    assert not winograd.applies((1, 8, 55, 55), (64, 8, 3, 3), (1, 1), (1, 1), 1, (55, 55), constant_weight=True)
    assert not winograd.applies((1, 16, 27, 27), (64, 16, 3, 3), (1, 1), (1, 1), 1, (27, 27), constant_weight=True)
    # few output channels: the input's transform outweighs the products below the usual size
    assert not winograd.applies((1, 128, 14, 14), (32, 128, 3, 3), (1, 1), (1, 1), 1, (14, 14), constant_weight=True)
    assert winograd.applies((1, 128, 28, 28), (32, 128, 3, 3), (1, 1), (1, 1), 1, (28, 28), constant_weight=True)


@pytest.mark.parametrize("x_shape, c_out", [((1, 256, 14, 14), 8), ((1, 256, 13, 15), 4)])
def test_a_small_output_of_many_channels_goes_by_f2_with_the_direct_result(x_shape, c_out):
    assert winograd.transforms_for(x_shape, x_shape[2:]) is winograd.F2
    w = (RNG.standard_normal((c_out, x_shape[1], 3, 3)) / np.sqrt(9 * x_shape[1])).astype(np.float32)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    expected = direct(x, w, (1, 1), (1, 1))
    kernel = conv_kernels.conv(x_shape, w.shape, (1, 1), (1, 1), ((1, 1), (1, 1)), 1, x_shape[2:], np.float32, w)
    np.testing.assert_allclose(kernel(x, w), expected, rtol=0, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("transforms", [winograd.F4, winograd.F2], ids=lambda t: t.name)
def test_a_bias_at_the_spread_position_reaches_every_output_once(transforms):
    x_shape, c_out = (1, 32, 13, 14), 6
    w = (RNG.standard_normal((c_out, 32, 3, 3)) / 17).astype(np.float32)
    bias = RNG.standard_normal(c_out).astype(np.float32)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    expected = direct(x, w, (1, 1), (1, 1)) + bias[:, None, None]
    kernel = winograd.winograd_conv(x_shape, w.shape, ((1, 1), (1, 1)), (13, 14), np.dtype(np.float32),
                                    np.dtype(np.float32), w, bias, transforms)
    np.testing.assert_allclose(kernel(x, w), expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def test_a_large_output_of_16_input_channels_goes_this_way_with_a_constant_weight():
    x_shape, w = (1, 16, 30, 29), (RNG.standard_normal((40, 16, 3, 3)) / 12).astype(np.float32)
    assert winograd.applies(x_shape, w.shape, (1, 1), (1, 1), 1, (30, 29), constant_weight=True)
    assert not winograd.applies(x_shape, w.shape, (1, 1), (1, 1), 1, (30, 29))
    x = RNG.standard_normal(x_shape).astype(np.float32)
    kernel = conv_kernels.conv(x_shape, w.shape, (1, 1), (1, 1), ((1, 1), (1, 1)), 1, (30, 29), np.float32, w)
    expected = direct(x, w, (1, 1), (1, 1))
    np.testing.assert_allclose(kernel(x, w), expected, rtol=0, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("x_shape", [(1, 32, 16, 12), (2, 32, 13, 14)], ids=["whole blocks", "cropped blocks"])
def test_a_relu_is_taken_over_each_group_of_output_blocks(monkeypatch, x_shape):
    monkeypatch.setattr(winograd, "TILE_GROUP_BYTES", 1)  # a group per tile row
    c_out = 5
    w = (RNG.standard_normal((c_out, 32, 3, 3)) / 17).astype(np.float32)
    bias = RNG.standard_normal(c_out).astype(np.float32)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    expected = np.maximum(direct(x, w, (1, 1), (1, 1)) + bias[:, None, None], 0)
    kernel = winograd.winograd_conv(x_shape, w.shape, ((1, 1), (1, 1)), x_shape[2:], np.dtype(np.float32),
                                    np.dtype(np.float32), w, bias, relu=True)
    y = kernel(x, w)
    assert (y == 0).any() and (y > 0).any()
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-5 * np.abs(expected).max())
