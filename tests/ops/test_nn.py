"""softmax, normalisations, nll losses and interpolation against NumPy expressions."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from helpers import run_op

RNG = np.random.default_rng(3)


def normal(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.fixture
def graph():
    ir = popxl.Ir()
    with ir.main_graph:
        yield ir.main_graph


# ----- softmax -----
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_softmax_matches_numpy(axis):
    x = normal(3, 4, 5) * 10
    e = np.exp(x - x.max(axis, keepdims=True))
    np.testing.assert_allclose(run_op(lambda t: ops.softmax(t, axis), x), e / e.sum(axis, keepdims=True),
                               rtol=1e-6)


def test_softmax_in_float16_is_stable_for_large_inputs():
    x = np.array([[1000.0, 1000.0], [0.0, -60000.0]], np.float16)
    result = run_op(lambda t: ops.softmax(t, 1), x)
    assert result.dtype == np.float16
    np.testing.assert_allclose(result, [[0.5, 0.5], [1.0, 0.0]])


def test_softmax_errors(graph):
    with pytest.raises(TypeError, match="softmax: expected a float tensor, got int32"):
        ops.softmax(popxl.variable(np.zeros(3, np.int32)), 0)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        ops.softmax(popxl.variable(np.zeros((2, 2), np.float32)), 2)


# ----- group_norm, layer_norm, batch_norm_inference -----
def group_norm_reference(x, weight, bias, groups, eps):
    n, c = x.shape[:2]
    grouped = x.reshape(n, groups, -1).astype(np.float64)
    normed = (grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(grouped.var(-1, keepdims=True) + eps)
    channel = (1, c) + (1,) * (x.ndim - 2)
    return normed.reshape(x.shape) * weight.reshape(channel) + bias.reshape(channel)


@pytest.mark.parametrize("shape, groups", [((2, 6), 3), ((2, 6, 5), 2), ((3, 4, 2, 2), 4), ((2, 4, 3), 1)])
def test_group_norm_matches_numpy(shape, groups):
    x, weight, bias = normal(*shape), normal(shape[1]), normal(shape[1])
    result = run_op(lambda t, w, b: ops.group_norm(t, w, b, groups, eps=1e-3), x, weight, bias)
    np.testing.assert_allclose(result, group_norm_reference(x, weight, bias, groups, 1e-3), rtol=1e-5, atol=1e-5)


def test_layer_norm_normalises_each_row_of_a_matrix():
    x, weight, bias = normal(4, 8) * 3 + 1, normal(8), normal(8)
    result = run_op(ops.layer_norm, x, weight, bias)
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * weight + bias
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)


def test_layer_norm_is_group_norm_with_one_group_over_all_but_the_first_axis():
    x, weight, bias = normal(2, 3, 4), normal(3), normal(3)
    result = run_op(ops.layer_norm, x, weight, bias)
    np.testing.assert_allclose(result, group_norm_reference(x, weight, bias, 1, 1e-5), rtol=1e-5, atol=1e-5)


def test_layer_norm_in_float16():
    x, weight, bias = (normal(3, 16, dtype=np.float16), np.ones(16, np.float16), np.zeros(16, np.float16))
    result = run_op(ops.layer_norm, x, weight, bias)
    assert result.dtype == np.float16
    np.testing.assert_allclose(result, group_norm_reference(x, weight, bias, 1, 1e-5), atol=2e-2)


def test_norm_errors(graph):
    x = popxl.variable(np.zeros((2, 6), np.float32))
    six, five = popxl.variable(np.ones(6, np.float32)), popxl.variable(np.ones(5, np.float32))
    with pytest.raises(ValueError, match=r"num_groups=4 must divide the 6 channels"):
        ops.group_norm(x, six, six, 4)
    with pytest.raises(ValueError, match=r"weight must have shape \(6,\), one value per channel"):
        ops.layer_norm(x, five, six)
    with pytest.raises(TypeError, match="group_norm: inputs must have the same dtype"):
        ops.layer_norm(x, popxl.variable(np.ones(6, np.float16)), six)
    with pytest.raises(ValueError, match=r"var must have shape \(6,\)"):
        ops.batch_norm_inference(x, six, six, six, five)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 2, 2)])
def test_batch_norm_inference_matches_numpy(shape):
    x = normal(*shape)
    scale, bias, mean, var = normal(3), normal(3), normal(3), np.abs(normal(3)) + 0.1
    result = run_op(lambda *ts: ops.batch_norm_inference(*ts, epsilon=1e-3), x, scale, bias, mean, var)
    channel = (1, 3) + (1,) * (len(shape) - 2)
    expected = ((x - mean.reshape(channel)) / np.sqrt(var.reshape(channel) + 1e-3) * scale.reshape(channel)
                + bias.reshape(channel))
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)


# ----- nll_loss -----
def probabilities(*shape, dtype=np.float32):
    logits = normal(*shape)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(dtype)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(6, 4), (2, 3, 5)])
def test_nll_loss_matches_numpy(reduction, shape):
    probs = probabilities(*shape)
    labels = RNG.integers(0, shape[-1], shape[:-1]).astype(np.int32)
    losses = -np.log(np.take_along_axis(probs, labels[..., None], -1)[..., 0])
    expected = {"mean": losses.mean(), "sum": losses.sum(), "none": losses}[reduction]
    result = run_op(lambda p, l: ops.nll_loss(p, l, reduction=reduction), probs, labels)
    assert result.shape == np.shape(expected)
    np.testing.assert_allclose(result, expected, rtol=1e-5)


def test_nll_loss_ignore_index_drops_samples_from_the_mean():
    probs = probabilities(5, 3)
    labels = np.array([0, 2, -100, 1, -100], np.int32)
    kept = labels != -100
    losses = -np.log(probs[np.arange(5)[kept], labels[kept]])
    mean = run_op(lambda p, l: ops.nll_loss(p, l, ignore_index=-100), probs, labels)
    none = run_op(lambda p, l: ops.nll_loss(p, l, ignore_index=-100, reduction="none"), probs, labels)
    np.testing.assert_allclose(mean, losses.mean(), rtol=1e-6)
    np.testing.assert_allclose(none[kept], losses, rtol=1e-6)
    np.testing.assert_array_equal(none[~kept], 0)


def test_nll_loss_of_only_ignored_labels_is_zero():
    result = run_op(lambda p, l: ops.nll_loss(p, l, ignore_index=1), probabilities(2, 3), np.array([1, 1], np.int32))
    assert result == 0


def test_nll_loss_of_log_probabilities():
    log_probs = np.log(probabilities(4, 3))
    labels = np.array([2, 0, 1, 1], np.int32)
    result = run_op(lambda p, l: ops.nll_loss(p, l, reduction="sum", log_prob=True), log_probs, labels)
    np.testing.assert_allclose(result, -log_probs[np.arange(4), labels].sum(), rtol=1e-6)


def test_nll_loss_clamps_zero_probabilities():
    probs = np.array([[0.0, 1.0]], np.float32)
    result = run_op(lambda p, l: ops.nll_loss(p, l, reduction="none"), probs, np.array([0], np.int32))
    np.testing.assert_allclose(result, [-np.log(np.float32(1e-7))], rtol=1e-6)


def test_nll_loss_errors(graph):
    probs = popxl.variable(np.full((2, 3), 1 / 3, np.float32))
    labels = popxl.variable(np.array([0, 1], np.int32))
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'max'"):
        ops.nll_loss(probs, labels, reduction="max")
    with pytest.raises(ValueError, match=r"labels must have the shape of probs without its last .* labels \(3,\)"):
        ops.nll_loss(probs, popxl.variable(np.zeros(3, np.int32)))
    with pytest.raises(TypeError, match="nll_loss: expected a int tensor, got float32"):
        ops.nll_loss(probs, probs[:, 0])


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_nll_loss_with_softmax_grad_is_the_gradient_wrt_the_logits(reduction):
    logits = normal(4, 3)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    probs = e / e.sum(-1, keepdims=True)
    labels = np.array([0, 2, 1, 2], np.int32)
    loss, grad = run_op(lambda p, l: ops.nll_loss_with_softmax_grad(p, l, loss_grad=2.0, reduction=reduction),
                        probs, labels)
    losses = -np.log(probs[np.arange(4), labels])
    np.testing.assert_allclose(loss, losses.mean() if reduction == "mean" else losses.sum(), rtol=1e-6)
    expected = 2.0 * (probs - np.eye(3)[labels]) / (4 if reduction == "mean" else 1)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-7)


def test_nll_loss_with_softmax_grad_ignores_labels_and_takes_a_per_sample_loss_grad():
    probs = probabilities(3, 2)
    labels = np.array([1, -1, 0], np.int32)
    loss_grad = np.array([1.0, 5.0, 3.0], np.float32)
    loss, grad = run_op(lambda p, l, g: ops.nll_loss_with_softmax_grad(p, l, g, ignore_index=-1, reduction="none"),
                        probs, labels, loss_grad)
    np.testing.assert_allclose(loss, [-np.log(probs[0, 1]), 0, -np.log(probs[2, 0])], rtol=1e-6)
    expected = (probs - np.eye(2)[[1, 0, 0]]) * np.array([1.0, 0.0, 3.0])[:, None]
    np.testing.assert_allclose(grad, expected, rtol=1e-6)


def test_nll_loss_with_softmax_grad_takes_float_labels_as_popxl_does():
    probs = probabilities(3, 4)
    labels = np.array([3, 0, 2], np.int32)
    expected = run_op(lambda p, l: ops.nll_loss_with_softmax_grad(p, l), probs, labels)
    loss, grad = run_op(lambda p, l: ops.nll_loss_with_softmax_grad(p, l), probs, labels.astype(np.float32))
    np.testing.assert_allclose(loss, -np.log(probs[np.arange(3), labels]).mean(), rtol=1e-6)
    np.testing.assert_array_equal(grad, expected[1])


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_nll_loss_with_softmax_grad_takes_labels_of_another_shape_with_one_per_row(reduction):
    # PopART's fused op flattens the labels: [N, 1] labels give the classes of [N, C] probs.
    probs = probabilities(3, 4)
    labels = np.array([[3], [0], [2]], np.int32)
    loss, grad = run_op(lambda p, l: ops.nll_loss_with_softmax_grad(p, l, reduction=reduction), probs, labels)
    losses = -np.log(probs[np.arange(3), labels[:, 0]])
    np.testing.assert_allclose(loss, losses.mean() if reduction == "mean" else losses[:, None], rtol=1e-6)
    expected = (probs - np.eye(4)[labels[:, 0]]) / (3 if reduction == "mean" else 1)
    np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-7)


def test_nll_loss_with_softmax_grad_errors(graph):
    probs = popxl.variable(np.full((2, 3), 1 / 3, np.float32))
    labels = popxl.variable(np.array([0, 1], np.int32))
    with pytest.raises(ValueError, match=r"loss_grad of shape \(2, 1\) does not broadcast to the per-sample"):
        ops.nll_loss_with_softmax_grad(probs, labels, popxl.variable(np.ones((2, 1), np.float32)), reduction="none")
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none'"):
        ops.nll_loss_with_softmax_grad(probs, labels, reduction="average")
    with pytest.raises(ValueError, match="labels must have the shape of probs"):
        ops.nll_loss_with_softmax_grad(probs, popxl.variable(np.zeros(3, np.int32)))
    assert not graph.ops and not graph.constants


# ----- interpolate -----
def nearest_reference(length, scale, coordinate, nearest):
    out = int(np.floor(length * scale))
    x = np.arange(out)
    source = {"half_pixel": (x + 0.5) / scale - 0.5, "asymmetric": x / scale,
              "align_corners": x * (length - 1) / max(out - 1, 1)}[coordinate]
    index = {"round_prefer_floor": [np.floor(v) if v - np.floor(v) == 0.5 else np.round(v) for v in source],
             "round_prefer_ceil": [np.ceil(v) if v - np.floor(v) == 0.5 else np.round(v) for v in source],
             "floor": np.floor(source), "ceil": np.ceil(source)}[nearest]
    return np.clip(np.array(index), 0, length - 1).astype(int)


@pytest.mark.parametrize("coordinate", ["half_pixel", "asymmetric", "align_corners"])
@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("scales", [(1.0, 1.0, 2.0, 2.0), (1.0, 1.0, 0.5, 3.0), (1.0, 2.0, 1.5, 0.75)])
def test_interpolate_nearest_matches_the_onnx_formulas(coordinate, nearest, scales):
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    result = run_op(lambda t: ops.interpolate(t, scales, nearest_mode=nearest,
                                              coordinate_transformation_mode=coordinate), x)
    index = [nearest_reference(n, s, coordinate, nearest) for n, s in zip(x.shape, scales)]
    np.testing.assert_array_equal(result, x[np.ix_(*index)])


def test_interpolate_by_two_repeats_each_pixel():
    x = normal(1, 1, 2, 3)
    result = run_op(lambda t: ops.interpolate(t, (1.0, 1.0, 2.0, 2.0)), x)
    np.testing.assert_array_equal(result, x.repeat(2, axis=2).repeat(2, axis=3))


def test_interpolate_errors(graph):
    x = popxl.variable(np.zeros((1, 1, 2, 2), np.float32))
    with pytest.raises(NotImplementedError, match="mode 'linear' is not implemented"):
        ops.interpolate(x, mode="linear")
    with pytest.raises(ValueError, match="mode 'area' is not valid"):
        ops.interpolate(x, mode="area")
    with pytest.raises(ValueError, match=r"one entry per axis of the input \(4\), got 2"):
        ops.interpolate(x, (2.0, 2.0))
    with pytest.raises(ValueError, match="every axis must keep at least one element"):
        ops.interpolate(x, (1.0, 1.0, 0.25, 1.0))
