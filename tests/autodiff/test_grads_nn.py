"""Gradients of softmax, the normalisations, the negative log-likelihood losses and nearest
interpolation against central finite differences, in float64."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff
from workbench.ops.registry import apply_many

from gradcheck import check_gradients

SETTINGS = settings(max_examples=25, deadline=None)

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)
seeds = st.integers(0, 2 ** 32 - 1)
reductions = st.sampled_from(["mean", "sum", "none"])


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@SETTINGS
@given(shapes, st.data(), seeds)
def test_softmax_gradient(shape, data, seed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_gradients(lambda t: ops.softmax(t, axis), normal(shape, seed))


@st.composite
def grouped_inputs(draw):
    """An [N, C, ...] shape and a number of groups dividing C."""
    groups = draw(st.integers(1, 3))
    channels = groups * draw(st.integers(1, 2))
    spatial = draw(st.lists(st.integers(1, 3), max_size=2))
    return (draw(st.integers(1, 3)), channels, *spatial), groups


@SETTINGS
@given(grouped_inputs(), seeds)
def test_group_norm_gradient_for_input_weight_and_bias(shape_and_groups, seed):
    shape, groups = shape_and_groups
    check_gradients(lambda t, w, b: ops.group_norm(t, w, b, groups), normal(shape, seed),
                    normal(shape[1], seed + 1), normal(shape[1], seed + 2))


def test_the_group_norm_gradient_is_one_op_with_all_three_gradients_as_in_popart():
    ir = popxl.Ir()
    with ir.main_graph:
        spec, channel = popxl.TensorSpec((4, 6, 3), popxl.float32), popxl.TensorSpec((6,), popxl.float32)
        forward = ir.create_graph(lambda t, w, b: ops.group_norm(t, w, b, 2), spec, channel, channel)
        grad_info = autodiff(forward, grads_required=forward.inputs[:1])
    (op,) = [op for op in grad_info.graph.ops if op.type == "group_norm_grad"]
    assert len(op.outputs) == 3 and len(grad_info.graph.outputs) == 1
    assert any(o.opType() == "GroupNormalizationGrad" for o in grad_info.graph._pb_graph.getOps())


@SETTINGS
@given(grouped_inputs(), seeds)
def test_group_norm_gradient_through_its_mean_and_inverse_deviation_outputs(shape_and_groups, seed):
    """The op's statistics outputs are differentiable too (their sizes need two or more elements per
    group, so that the variance is not zero)."""
    shape, groups = shape_and_groups
    shape = shape[:2] + (2,) + shape[2:]
    check_gradients(lambda t, w, b: tuple(apply_many("group_norm", t, w, b, num_groups=groups, eps=1e-5)),
                    normal(shape, seed), normal(shape[1], seed + 1), normal(shape[1], seed + 2))


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 5), seeds)
def test_layer_norm_gradient(tokens, hidden, seed):
    check_gradients(lambda t, w, b: ops.layer_norm(t, w, b), normal((tokens, hidden), seed),
                    normal(hidden, seed + 1), normal(hidden, seed + 2))


@SETTINGS
@given(grouped_inputs(), st.floats(1e-5, 0.5), seeds)
def test_batch_norm_inference_gradient_for_all_five_inputs(shape_and_groups, epsilon, seed):
    shape, _ = shape_and_groups
    channels = shape[1]
    variance = np.random.default_rng(seed).uniform(0.2, 2.0, channels)
    check_gradients(lambda t, s, b, m, v: ops.batch_norm_inference(t, s, b, m, v, epsilon),
                    normal(shape, seed), normal(channels, seed + 1), normal(channels, seed + 2),
                    normal(channels, seed + 3), variance)


@st.composite
def labelled_probs(draw):
    """Probabilities [..., C] away from the clamp at small values, and labels that may fall outside
    [0, C) or equal the ignored index."""
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    classes = draw(st.integers(1, 4))
    seed = draw(seeds)
    probs = np.random.default_rng(seed).uniform(0.05, 1.0, (*batch, classes))
    labels = draw(st.lists(st.integers(-1, classes), min_size=int(np.prod(batch)), max_size=int(np.prod(batch))))
    ignore = draw(st.none() | st.integers(0, classes - 1))
    return probs, np.array(labels, np.int32).reshape(batch), ignore


@SETTINGS
@given(labelled_probs(), reductions, st.booleans())
def test_nll_loss_gradient(inputs, reduction, log_prob):
    probs, labels, ignore = inputs
    check_gradients(lambda p, l: ops.nll_loss(p, l, ignore, reduction, log_prob), probs, labels)


@SETTINGS
@given(labelled_probs(), reductions, st.data())
def test_nll_loss_with_softmax_grad_gradient_through_both_outputs(inputs, reduction, data):
    """Both outputs depend on probs; the gradient output also depends on loss_grad, which may
    broadcast to the per-sample losses."""
    probs, labels, ignore = inputs
    loss_grad_shape = data.draw(st.sampled_from([labels.shape[i:] for i in range(labels.ndim + 1)]))
    loss_grad = normal(loss_grad_shape, data.draw(seeds))
    check_gradients(lambda p, l, g: ops.nll_loss_with_softmax_grad(p, l, g, ignore, reduction),
                    probs, labels, loss_grad)
    # The default loss_grad is a float32 constant: the float64 probs still get their gradient.
    check_gradients(lambda p, l: ops.nll_loss_with_softmax_grad(p, l, ignore_index=ignore, reduction=reduction),
                    probs, labels)


def test_softmax_then_nll_loss_gradient_is_probs_minus_onehot():
    """The classic identity, as a worked example: differentiate a graph, call its gradient graph
    with a seed of one, and compare with the closed form."""
    logits = normal((3, 4), 5)
    labels = np.array([0, 3, 1], np.int32)
    ir = popxl.Ir()
    with ir.main_graph:
        x, l = popxl.constant(logits, popxl.float64), popxl.constant(labels)
        graph = ir.create_graph(lambda x, l: ops.nll_loss(ops.softmax(x, 1), l, reduction="sum"), x, l)
        info = autodiff(graph, grads_required=graph.inputs[:1])
        forward = ops.call_with_info(graph, x, l)
        (grad,) = ops.call(info.graph, popxl.constant(1.0, popxl.float64), inputs_dict=info.inputs_dict(forward))
        stream = popxl.d2h_stream(grad.shape, grad.dtype, "grad")
        ops.host_store(stream, grad)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()[stream]
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    np.testing.assert_allclose(result, probs - np.eye(4)[labels], rtol=1e-12, atol=1e-15)


def grad_op_types(loss):
    """The op types of the gradient graph of ``loss`` (a function of logits and labels)."""
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(loss, popxl.TensorSpec((3, 4), popxl.float32), popxl.TensorSpec((3,), popxl.int32))
        info = autodiff(graph, grads_required=graph.inputs[:1])
    return [op.type for op in info.graph.ops]


def test_a_softmax_read_only_by_nll_loss_gets_its_gradient_in_one_op():
    direct = grad_op_types(lambda x, l: ops.nll_loss(ops.softmax(x, 1), l))
    assert direct.count("nll_loss_with_softmax_grad") == 1
    assert "onehot" not in direct and "softmax" not in direct and len(direct) <= 2
    # The probabilities read elsewhere too, or the softmax over another axis: the chain rule, op by op.

    def shared_loss(x, l):
        probs = ops.softmax(x, 1)
        return ops.nll_loss(probs, l) + ops.sum(probs * 0.5)

    shared = grad_op_types(shared_loss)
    other_axis = grad_op_types(lambda x, l: ops.nll_loss(ops.transpose(ops.softmax(ops.transpose(x), 0)), l))
    log_prob = grad_op_types(lambda x, l: ops.nll_loss(ops.softmax(x, 1), l, log_prob=True))
    for types in (shared, other_axis, log_prob):
        assert "nll_loss_with_softmax_grad" not in types and "onehot" in types


@SETTINGS
@given(labelled_probs(), reductions)
def test_softmax_then_nll_loss_gradient_matches_finite_differences(inputs, reduction):
    """Through the direct gradient, with labels out of range and an ignored index."""
    probs, labels, ignore = inputs
    check_gradients(lambda x, l: ops.nll_loss(ops.softmax(x, -1), l, ignore, reduction), np.log(probs), labels)


@SETTINGS
@given(st.lists(st.integers(1, 4), min_size=3, max_size=4).map(tuple), st.data(), seeds)
def test_nearest_interpolate_gradient_sums_over_the_copies(shape, data, seed):
    scales = [1.0, 1.0] + [data.draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]))
                           for _ in shape[2:]]
    if any(int(np.floor(n * s)) < 1 for n, s in zip(shape, scales)):
        return
    nearest = data.draw(st.sampled_from(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    coordinates = data.draw(st.sampled_from(["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]))
    check_gradients(lambda t: ops.interpolate(t, scales, "nearest", nearest, coordinates), normal(shape, seed))

