"""Gradients of convolutions, transposed convolutions and pooling against central finite
differences, in float64, over random geometries: 1 to 3 spatial axes, groups, strides, dilations,
paddings and pad types."""
import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import popxl.ops as ops

from gradcheck import check_gradients

SETTINGS = settings(max_examples=30, deadline=None)

seeds = st.integers(0, 2 ** 32 - 1)


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def extent(kernel, dilation):
    return [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]


@st.composite
def geometries(draw, max_side=5):
    """Spatial sizes, kernel, stride, dilation and (begin..., end...) padding, per spatial axis."""
    rank = draw(st.integers(1, 3))
    side = max_side if rank < 3 else 3
    per_axis = lambda low, high: draw(st.lists(st.integers(low, high), min_size=rank, max_size=rank))
    return {"spatial": per_axis(1, side), "kernel": per_axis(1, 3), "stride": per_axis(1, 3),
            "dilation": per_axis(1, 2), "padding": per_axis(0, 2) + per_axis(0, 2)}


def fits(g, pad_type="not_set") -> bool:
    if pad_type in ("same_upper", "same_lower"):
        return True
    rank = len(g["spatial"])
    pads = g["padding"] if pad_type == "not_set" else [0] * (2 * rank)
    return all(n + b + e >= x for n, b, e, x in zip(g["spatial"], pads[:rank], pads[rank:],
                                                    extent(g["kernel"], g["dilation"])))


@SETTINGS
@given(geometries(), st.integers(1, 2), st.integers(1, 2), st.integers(1, 2), st.integers(1, 2),
       st.sampled_from(["not_set", "same_upper", "same_lower", "valid"]), seeds)
def test_conv_gradient_for_input_and_weight(g, batch, groups, in_per_group, out_per_group, pad_type, seed):
    assume(fits(g, pad_type))
    x = normal((batch, groups * in_per_group, *g["spatial"]), seed)
    weight = normal((groups * out_per_group, in_per_group, *g["kernel"]), seed + 1)
    check_gradients(lambda t, w: ops.conv(t, w, g["stride"], g["padding"], g["dilation"], groups, pad_type),
                    x, weight)


@SETTINGS
@given(geometries(max_side=4), st.integers(1, 2), st.integers(1, 2), st.integers(1, 2), st.integers(1, 2), st.data(),
       seeds)
def test_conv_transpose_gradient_for_input_and_weight(g, batch, groups, in_per_group, out_per_group, data, seed):
    rank = len(g["spatial"])
    full = [s * (n - 1) + x for n, s, x in zip(g["spatial"], g["stride"], extent(g["kernel"], g["dilation"]))]
    choice = data.draw(st.sampled_from(["padding", "output_padding", "output_shape"]))
    options = {}
    if choice == "padding":
        assume(all(f - b - e >= 1 for f, b, e in zip(full, g["padding"][:rank], g["padding"][rank:])))
        options["padding"] = g["padding"]
    elif choice == "output_padding":
        options["output_padding"] = [data.draw(st.integers(0, s - 1)) for s in g["stride"]]
    else:
        options["output_shape"] = [data.draw(st.integers(1, f)) for f in full]
    x = normal((batch, groups * in_per_group, *g["spatial"]), seed)
    weight = normal((groups * in_per_group, out_per_group, *g["kernel"]), seed + 1)
    check_gradients(lambda t, w: ops.conv_transpose(t, w, g["stride"], dilation=g["dilation"], groups=groups,
                                                    **options), x, weight)


def pool_padding(g, data):
    """Padding smaller than the kernel, and none with dilation, so that every window holds an
    element of the input."""
    rank = len(g["spatial"])
    if any(d > 1 for d in g["dilation"]):
        padding = [0] * (2 * rank)
    else:
        padding = [data.draw(st.integers(0, k - 1)) for k in g["kernel"] * 2]
    extents = extent(g["kernel"], g["dilation"])
    assume(all(n + b + e >= x for n, b, e, x in zip(g["spatial"], padding[:rank], padding[rank:], extents)))
    return padding


@SETTINGS
@given(geometries(), st.integers(1, 2), st.integers(1, 2), st.booleans(), st.data(), seeds)
def test_average_pool_gradient(g, batch, channels, ceil_mode, data, seed):
    padding = pool_padding(g, data)
    check_gradients(lambda t: ops.average_pool(t, g["kernel"], g["stride"], padding, dilation=g["dilation"],
                                               ceil_mode=ceil_mode),
                    normal((batch, channels, *g["spatial"]), seed))


@SETTINGS
@given(geometries(), st.integers(1, 2), st.integers(1, 2), st.booleans(), st.data(), seeds)
def test_max_pool_gradient_goes_to_each_window_maximum(g, batch, channels, ceil_mode, data, seed):
    padding = pool_padding(g, data)
    check_gradients(lambda t: ops.max_pool(t, g["kernel"], g["stride"], padding, dilation=g["dilation"],
                                           ceil_mode=ceil_mode),
                    normal((batch, channels, *g["spatial"]), seed))


def test_max_pool_gradient_of_overlapping_windows_adds_up():
    """With stride 1 the largest element is the maximum of every window holding it."""
    x = np.array([[[0.0, 5.0, 1.0, 2.0]]])
    grads = check_gradients(lambda t: ops.max_pool(t, (2,), (1,)), x)
    assert grads[0][0, 0, 0] == 0 and grads[0][0, 0, 2] == 0 and grads[0][0, 0, 3] != 0
