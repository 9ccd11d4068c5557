"""``builder.aiGraphcore``'s reducemedian, log1p, expm1, atan2, bucketize, sort and shapeddropout: values against
NumPy, gradients against finite differences (the median's going to the element it picked), shapes as PopART's
builder gives them, and the errors of a bad ratio or dropout shape."""
import numpy as np
import pytest

import popart

RNG = np.random.default_rng(7)


def run(builder, anchors, feeds, train_loss=None, seed=None):
    """One inference run (or one training step of ConstSGD(0) when ``train_loss`` is given): the anchors."""
    flow = popart.DataFlow(1, {a: popart.AnchorReturnType("ALL") for a in anchors})
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1})
    if train_loss is None:
        session = popart.InferenceSession(builder.getModelProto(), flow, device)
    else:
        session = popart.TrainingSession(builder.getModelProto(), flow, train_loss, popart.ConstSGD(0.01), device)
    session.prepareDevice()
    if seed is not None:
        session.setRandomSeed(seed)
    session.weightsFromHost()
    arrays = session.initAnchorArrays()
    session.run(popart.PyStepIO(feeds, arrays))
    return arrays


def test_reducemedian_gives_the_lower_middle_value_and_its_position_over_the_reduced_axes():
    data = RNG.permutation(60).astype(np.float32).reshape(3, 4, 5)
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [3, 4, 5]))
    over_1, at_1 = builder.aiGraphcore.reducemedian([x], axes=[1], keepdims=0)
    over_02, at_02 = builder.aiGraphcore.reducemedian([x], axes=[0, 2])
    every, at_every = builder.aiGraphcore.reducemedian([x])
    unreduced, _ = builder.aiGraphcore.reducemedian([x], axes=[], keepdims=0)
    assert builder.getTensorShape(over_1) == [3, 5] and builder.getTensorShape(at_02) == [1, 4, 1]
    assert builder.getTensorShape(every) == [1, 1, 1] and builder.getTensorDtypeString(at_every) == "int32"
    out = run(builder, [over_1, at_1, over_02, at_02, every, at_every, unreduced], {x: data})
    lower = np.sort(data, axis=1)[:, 1, :]  # 4 values: the lower of the middle two
    np.testing.assert_array_equal(out[over_1], lower)
    np.testing.assert_array_equal(np.take_along_axis(data, out[at_1][:, None, :], 1)[:, 0, :], lower)
    flat = np.moveaxis(data, 1, 0).reshape(4, 15)  # axes 0 and 2 flattened in order: 15 values each
    np.testing.assert_array_equal(out[over_02].reshape(4), np.median(flat, axis=1))
    np.testing.assert_array_equal(np.take_along_axis(flat, out[at_02].reshape(4, 1), 1)[:, 0], np.median(flat, 1))
    assert out[every].item() == 29 and data.reshape(-1)[out[at_every].item()] == 29  # the lower of 29 and 30
    np.testing.assert_array_equal(out[unreduced], data)


def test_reducemedian_sends_its_gradient_to_the_element_it_picked():
    data = RNG.standard_normal((3, 5)).astype(np.float32)
    builder = popart.Builder()
    x = builder.addInitializedInputTensor(data)
    median, _ = builder.aiGraphcore.reducemedian([x], axes=[1], keepdims=0)
    loss = builder.aiOnnx.reducesum([median], keepdims=False)
    grad = popart.reservedGradientPrefix() + x
    out = run(builder, [grad], {}, train_loss=loss)
    expected = (data == np.median(data, axis=1, keepdims=True)).astype(np.float32)
    np.testing.assert_array_equal(out[grad], expected)


@pytest.mark.parametrize("method, reference, derivative", [
    ("log1p", np.log1p, lambda x: 1 / (1 + x)),
    ("expm1", np.expm1, np.exp),
])
def test_log1p_and_expm1_keep_the_digits_of_small_inputs_and_have_their_derivative(method, reference, derivative):
    data = np.array([1e-7, -1e-6, 0.5, 2.0], np.float32)
    builder = popart.Builder()
    x = builder.addInitializedInputTensor(data)
    y = getattr(builder.aiGraphcore, method)([x])
    loss = builder.aiOnnx.reducesum([y], keepdims=False)
    grad = popart.reservedGradientPrefix() + x
    out = run(builder, [y, grad], {}, train_loss=loss)
    np.testing.assert_allclose(out[y], reference(data.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(out[grad], derivative(data.astype(np.float64)), rtol=1e-6)


def test_atan2_covers_every_quadrant_and_its_gradients_match_finite_differences():
    y_data = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 2.0], np.float32)
    x_data = np.array([1.0, -1.0, -1.0, 1.0, 0.0, 0.5], np.float32)
    builder = popart.Builder()
    y, x = builder.addInitializedInputTensor(y_data), builder.addInitializedInputTensor(x_data)
    angle = builder.aiGraphcore.atan2([y, x])
    loss = builder.aiOnnx.reducesum([angle], keepdims=False)
    grads = [popart.reservedGradientPrefix() + t for t in (y, x)]
    out = run(builder, [angle, *grads], {}, train_loss=loss)
    np.testing.assert_allclose(out[angle], np.arctan2(y_data, x_data), rtol=1e-6)
    step, yd, xd = 1e-3, y_data[[0, 1, 2, 3, 5]].astype(np.float64), x_data[[0, 1, 2, 3, 5]].astype(np.float64)
    dy = (np.arctan2(yd + step, xd) - np.arctan2(yd - step, xd)) / (2 * step)
    dx = (np.arctan2(yd, xd + step) - np.arctan2(yd, xd - step)) / (2 * step)
    np.testing.assert_allclose(out[grads[0]][[0, 1, 2, 3, 5]], dy, rtol=1e-4)
    np.testing.assert_allclose(out[grads[1]][[0, 1, 2, 3, 5]], dx, rtol=1e-4)
    assert out[grads[0]][4] == out[grads[1]][4] == 0  # at the origin, as PopART gives


@pytest.mark.parametrize("right", [0, 1])
def test_bucketize_counts_the_boundaries_below_each_element(right):
    data = np.array([[0.5, 1.0, 3.0], [3.5, 9.0, 10.0]], np.float32)
    edges = np.array([1.0, 3.0, 5.0, 9.0], np.float32)
    builder = popart.Builder()
    x, b = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3])), builder.addInputTensor(popart.TensorInfo(
        "FLOAT", [4]))
    buckets = builder.aiGraphcore.bucketize([x, b], right=right)
    assert builder.getTensorDtypeString(buckets) == "int32"
    out = run(builder, [buckets], {x: data, b: edges})
    expected = [[0, 1, 2], [2, 4, 4]] if right else [[0, 0, 1], [2, 3, 4]]
    np.testing.assert_array_equal(out[buckets], expected)


@pytest.mark.parametrize("descending", [0, 1])
def test_sort_orders_an_axis_and_gives_each_value_s_position(descending):
    data = RNG.permutation(12).astype(np.float32).reshape(3, 4)
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [3, 4]))
    values, positions = builder.aiGraphcore.sort([x], axis=0, descending=descending)
    out = run(builder, [values, positions], {x: data})
    order = np.argsort(-data if descending else data, axis=0)
    np.testing.assert_array_equal(out[positions], order)
    np.testing.assert_array_equal(out[values], np.take_along_axis(data, order, 0))


def test_shapeddropout_keeps_or_drops_whole_rows_when_training_and_passes_through_in_inference():
    data = np.ones((8, 6), np.float32)
    builder = popart.Builder()
    w = builder.addInitializedInputTensor(data)
    dropped = builder.aiGraphcore.shapeddropout([w], shape=[8, 1], ratio=0.5)
    loss = builder.aiOnnx.reducesum([dropped], keepdims=False)
    out = run(builder, [dropped], {}, train_loss=loss, seed=3)[dropped]
    assert set(np.unique(out)) <= {0.0, 2.0} and 0 < (out == 0).sum() < out.size
    assert all(len(set(row)) == 1 for row in out)  # a row kept or dropped whole
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [8, 6]))
    passed = builder.aiGraphcore.shapeddropout([x], shape=[8, 1], ratio=0.5)
    np.testing.assert_array_equal(run(builder, [passed], {x: data})[passed], data)


@pytest.mark.parametrize("shape, ratio, message", [
    ([8, 1], 1.5, "ratio value 1.5 is not valid. Please use a value in the interval [0,1)"),
    ([4, 4], 0.5, "ShapedDropout: incompatible input tensor and dropout shape"),
])
def test_shapeddropout_refuses_a_ratio_outside_0_to_1_and_a_shape_that_does_not_broadcast(shape, ratio, message):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [8, 6]))
    with pytest.raises(popart.popart_exception, match=message.replace("[", r"\[").replace("(", r"\(").replace(
            ")", r"\)")):
        builder.aiGraphcore.shapeddropout([x], shape=shape, ratio=ratio)
