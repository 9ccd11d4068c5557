"""Depthwise convolutions go by columns read from flattened (phase) planes (``ops/depthwise.py``): the same
results as a float64 loop over every output, for every padding, stride, dilation, multiplier, batch, bias and
relu."""
import numpy as np
import pytest

import popxl.ops as ops
from helpers import run_op
from workbench.ops import conv_kernels, depthwise

RNG = np.random.default_rng(11)


def depthwise_loop(x, w, begin, end, dilation, bias=None, stride=(1, 1)):
    """out[n, c·m + j, i] = sum over k of padded_x[n, c, i · stride + k · dilation] * w[c·m + j, 0, k] (+ bias)."""
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + list(zip(begin, end)))
    kernel = w.shape[2:]
    out = tuple((p - (k - 1) * d - 1) // s + 1 for p, k, d, s in zip(padded.shape[2:], kernel, dilation, stride))
    multiplier = w.shape[0] // x.shape[1]
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for n, o, i, j in np.ndindex(*y.shape):
        top, left = i * stride[0], j * stride[1]
        window = padded[n, o // multiplier, top:top + (kernel[0] - 1) * dilation[0] + 1:dilation[0],
                        left:left + (kernel[1] - 1) * dilation[1] + 1:dilation[1]]
        y[n, o, i, j] = np.sum(window * w[o, 0].astype(np.float64)) + (0 if bias is None else bias[o])
    return y


CASES = [  # x shape, weight shape, pads begin, pads end, stride, dilation
    ((1, 8, 7, 7), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),      # ShuffleNet's layers, smaller
    ((1, 8, 8, 8), (8, 1, 3, 3), (1, 1), (1, 1), (2, 2), (1, 1)),      # its strided layers
    ((1, 3, 9, 9), (3, 1, 3, 3), (1, 1), (1, 1), (2, 2), (1, 1)),      # odd sizes: the last input row read
    ((2, 5, 6, 9), (10, 1, 3, 2), (0, 1), (2, 0), (1, 1), (1, 1)),     # two images, multiplier 2, uneven padding
    ((1, 4, 11, 10), (8, 1, 3, 2), (2, 0), (0, 3), (3, 2), (1, 2)),    # strides 3 and 2, dilated, uneven padding
    ((1, 4, 9, 8), (4, 1, 3, 3), (0, 0), (0, 0), (1, 1), (2, 3)),      # no padding, dilated
    ((1, 3, 5, 5), (3, 1, 5, 5), (2, 2), (2, 2), (1, 1), (1, 1)),      # 5×5
    ((1, 6, 4, 4), (6, 1, 1, 1), (0, 0), (0, 0), (1, 1), (1, 1)),      # 1×1
    ((1, 6, 7, 7), (6, 1, 1, 1), (0, 0), (0, 0), (2, 2), (1, 1)),      # 1×1 of stride 2: rows and columns unread
]


@pytest.mark.parametrize("x_shape, w_shape, begin, end, stride, dilation", CASES)
@pytest.mark.parametrize("group_bytes", [None, 1], ids=["all channels at once", "a channel at a time"])
@pytest.mark.parametrize("with_bias, relu", [(False, False), (True, False), (True, True), (False, True)])
def test_the_kernel_matches_a_float64_loop(monkeypatch, x_shape, w_shape, begin, end, stride, dilation, group_bytes,
                                           with_bias, relu):
    if group_bytes:
        monkeypatch.setattr(depthwise, "GROUP_BYTES", group_bytes)
    x, w = RNG.standard_normal(x_shape).astype(np.float32), RNG.standard_normal(w_shape).astype(np.float32)
    bias = RNG.standard_normal(w_shape[0]).astype(np.float32) if with_bias else None
    expected = depthwise_loop(x, w, begin, end, dilation, bias, stride)
    if relu:
        expected = np.maximum(expected, 0)
    assert depthwise.applies(x_shape, w_shape, x_shape[1], np.float32)
    pads = tuple(zip(begin, end))
    for constant in (None, w):  # the weight read at each call, or once
        kernel = conv_kernels.conv(x_shape, w_shape, stride, dilation, pads, x_shape[1], expected.shape[2:],
                                   np.float32, constant, bias, relu)
        result = kernel(x, w)
        assert result.dtype == np.float32 and result.shape == expected.shape and result.flags.c_contiguous
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(kernel(x, w), result, rtol=0, atol=0)  # a second call, the same


def test_the_result_goes_into_a_destination_and_the_input_is_left_alone():
    x, w = RNG.standard_normal((2, 4, 6, 6)).astype(np.float32), RNG.standard_normal((4, 1, 3, 3)).astype(np.float32)
    kept = x.copy()
    whole = np.zeros((2, 7, 6, 6), np.float32)  # a concat's output: this result is channels 2 to 5
    kernel = conv_kernels.conv(x.shape, w.shape, (1, 1), (1, 1), ((1, 1), (1, 1)), 4, (6, 6), np.float32, w,
                               destination=lambda: whole[:, 2:6])
    assert kernel(x, w) is not None
    np.testing.assert_allclose(whole[:, 2:6], depthwise_loop(x, w, (1, 1), (1, 1), (1, 1)), rtol=1e-5, atol=1e-5)
    assert not whole[:, :2].any() and not whole[:, 6:].any()
    np.testing.assert_array_equal(x, kept)


@pytest.mark.parametrize("x_shape, w_shape, groups, dtype", [
    ((1, 4, 8, 8), (4, 2, 3, 3), 2, np.float32),   # two channels per group
    ((1, 1, 8, 8), (3, 1, 3, 3), 1, np.float32),   # one channel: an ordinary convolution
    ((1, 4, 8, 8), (4, 1, 3, 3), 4, np.float16),   # float16, computed elsewhere
    ((1, 4, 8), (4, 1, 3), 4, np.float32),         # 1-D
])
def test_other_convolutions_go_another_way(x_shape, w_shape, groups, dtype):
    assert not depthwise.applies(x_shape, w_shape, groups, dtype)


def test_a_popxl_depthwise_conv_gives_the_loop_result():
    x, w = RNG.standard_normal((1, 6, 9, 9)).astype(np.float32), RNG.standard_normal((6, 1, 3, 3)).astype(np.float32)
    result = run_op(lambda t, k: ops.conv(t, k, (1, 1), (1, 1, 1, 1), (1, 1), 6), x, w)
    np.testing.assert_allclose(result, depthwise_loop(x, w, (1, 1), (1, 1), (1, 1)), rtol=1e-5, atol=1e-5)
