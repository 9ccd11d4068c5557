"""A convolution writing phase planes and the 3×3 max pool of stride 2 reading them (``ops/pooled_conv.py``)
give max(0, max pool(convolution + bias)) as NumPy computes it directly, whatever the strides, pads,
dilations and parities of the sizes."""
import numpy as np
import pytest

from workbench.ops.pooled_conv import pooled_conv

RNG = np.random.default_rng(11)


def out_length(size: int, begin: int, end: int, extent: int, stride: int) -> int:
    return (size + begin + end - extent) // stride + 1


def direct(x, w, bias, stride, dilation, pads, pool_pads, pool_out):
    """In float64: the convolution, its bias, a relu and a 3×3 max pool of stride 2 padded with -inf."""
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0), *pads])
    kh, kw = w.shape[2:]
    conv_out = [out_length(n, b, e, (k - 1) * d + 1, s)
                for n, (b, e), k, d, s in zip(x.shape[2:], pads, (kh, kw), dilation, stride)]
    y = np.zeros((x.shape[0], w.shape[0], *conv_out)) + (0 if bias is None else bias[None, :, None, None])
    for i, j in np.ndindex(kh, kw):
        rows = slice(i * dilation[0], i * dilation[0] + (conv_out[0] - 1) * stride[0] + 1, stride[0])
        cols = slice(j * dilation[1], j * dilation[1] + (conv_out[1] - 1) * stride[1] + 1, stride[1])
        y += np.einsum("nchw,oc->nohw", padded[:, :, rows, cols], w[:, :, i, j].astype(np.float64))
    y = np.maximum(y, 0)
    big = np.full((*y.shape[:2], y.shape[2] + 2 * pool_pads[0] + 4, y.shape[3] + 2 * pool_pads[1] + 4), -np.inf)
    big[:, :, pool_pads[0]:pool_pads[0] + y.shape[2], pool_pads[1]:pool_pads[1] + y.shape[3]] = y
    pooled = np.full((*y.shape[:2], *pool_out), -np.inf)
    for a, b in np.ndindex(3, 3):
        pooled = np.maximum(pooled, big[:, :, a:a + 2 * pool_out[0] - 1:2, b:b + 2 * pool_out[1] - 1:2])
    return y, pooled


@pytest.mark.parametrize("x_shape, c_out, kernel, stride, dilation, conv_pad, pool_pad, ceil", [
    ((1, 3, 33, 33), 8, 3, 2, 1, 0, 0, False),   # SqueezeNet's stem: odd output, unpadded pool
    ((1, 3, 30, 30), 8, 7, 2, 1, 3, 1, False),   # ResNet's stem: even output, pool padded by one
    ((2, 4, 17, 14), 5, 3, 1, 1, 1, 1, False),   # two images, stride 1, odd and even axes
    ((1, 2, 21, 19), 6, 3, 1, 2, 2, 0, True),    # dilated, padded convolution
    ((1, 5, 12, 12), 3, 1, 1, 1, 0, 1, True),    # 1×1; the pool's last window past the end (ceil)
])
def test_the_pooled_convolution_gives_the_direct_pool_of_the_relu(x_shape, c_out, kernel, stride, dilation,
                                                                  conv_pad, pool_pad, ceil):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = (RNG.standard_normal((c_out, x_shape[1], kernel, kernel)) / kernel).astype(np.float32)
    bias = RNG.standard_normal(c_out).astype(np.float32) * 0.5
    pads = ((conv_pad, conv_pad), (conv_pad, conv_pad))
    conv_out = tuple(out_length(n, conv_pad, conv_pad, (kernel - 1) * dilation + 1, stride) for n in x_shape[2:])
    pool_out = tuple(-(-(n + 2 * pool_pad - 3) // 2) + 1 if ceil else out_length(n, pool_pad, pool_pad, 3, 2)
                     for n in conv_out)
    y, expected = direct(x, w, bias, (stride, stride), (dilation, dilation), pads, (pool_pad, pool_pad), pool_out)
    assert np.all(np.isfinite(expected))  # every window holds an output
    conv, pool = pooled_conv(x_shape, w, bias, (stride, stride), (dilation, dilation), pads, conv_out,
                             (pool_pad, pool_pad), pool_out)
    for _ in range(2):  # a second call reuses the kernel's padded input
        phases = conv(x, w)
        assert phases.shape == (x_shape[0], c_out, *conv_out) and phases.dtype == np.float32
        got = pool(phases)
        assert got.shape == expected.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * np.abs(y).max())


def test_without_a_bias_and_into_a_destination():
    x = RNG.standard_normal((2, 3, 16, 16)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    pads = ((1, 1), (1, 1))
    _, expected = direct(x, w, None, (2, 2), (1, 1), pads, (1, 1), (4, 4))
    target = np.full((2, 10, 4, 4), 7.0, np.float32)
    conv, pool = pooled_conv(x.shape, w, None, (2, 2), (1, 1), pads, (8, 8), (1, 1), (4, 4),
                             destination=lambda: target[:, 3:7])
    assert pool(conv(x, w)) is not None
    np.testing.assert_allclose(target[:, 3:7], expected, rtol=1e-5, atol=1e-5)
    assert np.all(target[:, :3] == 7) and np.all(target[:, 7:] == 7)


def test_the_pool_without_its_convolution_says_so():
    x = np.zeros((1, 1, 8, 8), np.float32)
    conv, pool = pooled_conv(x.shape, np.ones((1, 1, 3, 3), np.float32), None, (1, 1), (1, 1), ((1, 1), (1, 1)),
                             (8, 8), (0, 0), (3, 3))
    pool(conv(x, None))
    with pytest.raises(RuntimeError, match="before the convolution"):
        pool(np.zeros((1, 1, 8, 8), np.float32))
