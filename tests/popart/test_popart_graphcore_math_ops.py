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


def test_the_graphcore_forms_of_shape_rounding_and_remainder_ops_match_numpy():
    xv = np.array([[-2.5, -1.25, 0.5, 1.5], [2.5, 3.7, -3.7, 0.0]], np.float32).reshape(2, 4, 1, 1) * np.ones(
        (1, 1, 2, 2), np.float32)
    yv = np.array([1.5, -2.0, 0.75, 3.0], np.float32).reshape(1, 4, 1, 1) * np.ones((2, 1, 2, 2), np.float32)
    gv = np.arange(30, dtype=np.float32).reshape(2, 5, 3)
    gi = np.array([[0, 4, 2], [1, 1, 3]], np.int32)
    builder = popart.Builder()
    x, y = (builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 4, 2, 2])) for _ in range(2))
    g, i = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 5, 3])), builder.addInputTensor(
        popart.TensorInfo("INT32", [2, 3]))
    gc = builder.aiGraphcore
    made = {"round": gc.round([x]), "nearbyint": gc.nearbyint([x]), "fmod": gc.fmod([x, y]),
            "remainder": gc.remainder([x, y]), "reshape": gc.reshape(x, shape=[0, -1]),
            "reverse": gc.reverse([x], dimensions=[1, 3]), "slice": gc.slice([x], ends=[3, 100], starts=[1, 1], axes=[1, 2]),
            "depthtospace": gc.depthtospace([x], blocksize=2, mode="CRD"), "scaledadd": gc.scaledadd([x, y], 2.0, -0.5),
            "groupedgather": gc.groupedgather([g, i], 1, group_size=2), "geluerf": gc.geluerf([x])}
    assert builder.getTensorShape(made["reshape"]) == [2, 16] and builder.getTensorShape(made["slice"]) == [2, 2, 1, 2]
    assert builder.getTensorShape(made["depthtospace"]) == [2, 1, 4, 4]
    out = run(builder, list(made.values()), {x: xv, y: yv, g: gv, i: gi})
    got = {name: out[tensor] for name, tensor in made.items()}
    np.testing.assert_array_equal(got["round"], np.round(xv))  # halves to even, as ONNX's Round
    np.testing.assert_array_equal(got["nearbyint"], np.round(xv))
    np.testing.assert_allclose(got["fmod"], np.fmod(xv, yv), atol=1e-6)  # the sign of the dividend
    np.testing.assert_allclose(got["remainder"], np.remainder(xv, yv), atol=1e-6)  # the sign of the divisor
    np.testing.assert_array_equal(got["reshape"], xv.reshape(2, 16))
    np.testing.assert_array_equal(got["reverse"], xv[:, ::-1, :, ::-1])
    np.testing.assert_array_equal(got["slice"], xv[:, 1:3, 1:])
    crd = xv.reshape(2, 1, 2, 2, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(2, 1, 4, 4)
    np.testing.assert_array_equal(got["depthtospace"], crd)
    np.testing.assert_allclose(got["scaledadd"], 2 * xv - 0.5 * yv)
    np.testing.assert_array_equal(got["groupedgather"], np.stack([gv[0][gi[0]], gv[1][gi[1]]]))
    erf = np.vectorize(__import__("math").erf)
    np.testing.assert_allclose(got["geluerf"], 0.5 * xv * (1 + erf(xv / np.sqrt(2))), rtol=1e-5, atol=1e-6)


def test_graphcore_reshape_takes_one_tensor_id_and_refuses_a_second_unknown_size():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 6]))
    with pytest.raises(TypeError, match=r"^reshape\(\): incompatible function arguments"):
        builder.aiGraphcore.reshape([x], shape=[3, 4])  # PopART's takes the id itself
    with pytest.raises(popart.popart_exception, match="can only use -1 to specify one unknown dimension"):
        builder.aiGraphcore.reshape(x, shape=[-1, -1])


@pytest.mark.parametrize("reduce", [lambda b, x, a: b.aiOnnx.reducesum([x], axes=[a]),
                                    lambda b, x, a: b.aiGraphcore.reducemedian([x], axes=[a])[0]])
def test_a_reduction_over_an_axis_the_tensor_lacks_is_refused_when_the_session_is_made(reduce):
    for axis, fine in ((-3, False), (2, False), (-2, True), (1, True)):
        builder = popart.Builder()
        x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
        y = reduce(builder, x, axis)
        make = lambda: popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),  # noqa: E731
                                               popart.DeviceManager().createCpuDevice())
        if fine:
            out = run(builder, [y], {x: np.arange(6, dtype=np.float32).reshape(2, 3)})[y]
            assert out.size == (3 if axis % 2 == 0 else 2)
        else:
            with pytest.raises(popart.popart_exception) as error:
                make()
            assert error.value.args[0] == f"Axis {axis} is out of acceptable range [-2, 1]"


def reference_conv(x, w, stride, pads, dilation):
    """A 2-D convolution by onnxruntime, the reference of MultiConv's parts."""
    import onnx
    import onnxruntime
    from onnx import helper

    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=stride, pads=pads, dilations=dilation)
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape),
                                               helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, w.shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "w": w})[0]


def test_multiconv_runs_each_convolution_with_its_own_parameters_and_bias():
    x0, w0 = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32), RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    x1, w1 = RNG.standard_normal((2, 2, 5, 5)).astype(np.float32), RNG.standard_normal((5, 2, 2, 2)).astype(np.float32)
    b1 = RNG.standard_normal(5).astype(np.float32)
    builder = popart.Builder()
    d0, f0, d1, f1 = (builder.addInputTensor(popart.TensorInfo("FLOAT", list(a.shape))) for a in (x0, w0, x1, w1))
    bias = builder.addInitializedInputTensor(b1)
    c0, c1 = builder.aiGraphcore.multiconv([[d0, f0], [d1, f1, bias]], strides=[[2, 1], []], pads=[[1, 1, 1, 1], []],
                                           dilations=[[], [2, 2]])
    assert builder.getTensorShape(c0) == [1, 4, 3, 6] and builder.getTensorShape(c1) == [2, 5, 3, 3]
    out = run(builder, [c0, c1], {d0: x0, f0: w0, d1: x1, f1: w1})
    np.testing.assert_allclose(out[c0], reference_conv(x0, w0, [2, 1], [1, 1, 1, 1], [1, 1]), rtol=1e-4, atol=1e-5)
    expected = reference_conv(x1, w1, [1, 1], [0, 0, 0, 0], [2, 2]) + b1.reshape(1, 5, 1, 1)
    np.testing.assert_allclose(out[c1], expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("convs, options, message", [
    ("one input", {}, "must have at least two inputs - data and weights"),
    ("four inputs", {}, "can have at most three inputs - data, weights, and bias"),
    ("two", {"dilations": [[1, 1], [2, 2], [3, 3]]},
     "number of dilations parameter sets (3) does not match the number of input sets (2)"),
    ("two", {"dilations": [[1, 1], [2, 2, 2]]}, "Length of dilations vector 3 != number of spatial dimensions 2"),
])
def test_multiconv_refuses_malformed_convolutions_with_popart_s_words(convs, options, message):
    builder = popart.Builder()
    d = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 2, 4, 4]))
    f = builder.addInputTensor(popart.TensorInfo("FLOAT", [3, 2, 3, 3]))
    args = {"one input": [[d], [d, f]], "four inputs": [[d, f, d, f], [d, f]], "two": [[d, f], [d, f]]}[convs]
    with pytest.raises(popart.popart_exception) as error:
        builder.aiGraphcore.multiconv(args, **options)
    assert error.value.args[0].endswith(message)


@pytest.mark.parametrize("zero_unused", [0, 1])
def test_sequenceslice_writes_runs_of_source_rows_into_the_destination(zero_unused):
    source = np.arange(24, dtype=np.float32).reshape(6, 4) + 10
    destination = np.full((4, 4), -1.0, np.float32)
    runs = [np.array(v, np.uint32) for v in ([1, 2], [0, 3], [3, 0])]  # counts, source and destination offsets
    builder = popart.Builder()
    ids = [builder.addInputTensor(popart.TensorInfo("FLOAT", list(a.shape))) for a in (source, destination)]
    ids += [builder.addInputTensor(popart.TensorInfo("UINT32", [2])) for _ in runs]
    out = builder.aiGraphcore.sequenceslice(ids, zero_unused)
    result = run(builder, [out], dict(zip(ids, [source, destination, *runs])))[out]
    expected = np.zeros_like(destination) if zero_unused else destination.copy()
    expected[3], expected[0:2] = source[0], source[3:5]
    np.testing.assert_array_equal(result, expected)


def brute_force_ctc(log_probs: np.ndarray, target: list, blank: int) -> float:
    """Minus the log of the summed probability of every path over the frames that collapses to ``target``."""
    import itertools

    frames, classes = log_probs.shape
    total = 0.0
    for path in itertools.product(range(classes), repeat=frames):
        collapsed = [c for i, c in enumerate(path) if c != blank and (i == 0 or c != path[i - 1])]
        if collapsed == list(target):
            total += np.exp(sum(log_probs[t, c] for t, c in enumerate(path)))
    return -np.log(total) if total else np.inf


@pytest.mark.parametrize("reduction", ["NoReduction", "Sum", "Mean"])
def test_ctcloss_sums_every_alignment_and_reduces_as_pytorch_does(reduction):
    logits = RNG.standard_normal((5, 3, 3)).astype(np.float32)  # [T, N, C]
    targets = np.array([[1, 2], [2, 2], [1, 1]], np.uint32)
    target_lengths = np.array([2, 2, 1], np.uint32)
    input_lengths = np.array([5, 5, 3], np.uint32)
    builder = popart.Builder()
    ids = [builder.addInputTensor(popart.TensorInfo(t, list(s))) for t, s in (
        ("FLOAT", logits.shape), ("UINT32", targets.shape), ("UINT32", [3]), ("UINT32", [3]))]
    log_probs = builder.aiOnnx.logsoftmax([ids[0]], axis=2)
    loss = builder.aiGraphcore.ctcloss([log_probs, *ids[1:]], getattr(popart.ReductionType, reduction), 0)
    assert builder.getTensorShape(loss) == ([3] if reduction == "NoReduction" else [])
    out = run(builder, [loss, log_probs], dict(zip(ids, [logits, targets, input_lengths, target_lengths])))
    lp = out[log_probs].astype(np.float64)
    each = np.array([brute_force_ctc(lp[:input_lengths[n], n], list(targets[n, :target_lengths[n]]), 0)
                     for n in range(3)])
    expected = {"NoReduction": each, "Sum": each.sum(), "Mean": (each / target_lengths).mean()}[reduction]
    np.testing.assert_allclose(out[loss], expected, rtol=1e-5)


def test_ctcloss_zero_infinity_turns_an_impossible_alignment_into_zero():
    log_probs = np.log(np.full((2, 1, 3), 1 / 3, np.float32))  # 2 frames cannot hold the 3 labels asked for
    targets, lengths = np.array([[1, 2, 1]], np.uint32), np.array([2], np.uint32)
    for zero_infinity, expected in ((False, np.inf), (True, 0.0)):
        builder = popart.Builder()
        lp = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 1, 3]))
        t, i, n = (builder.addInputTensor(popart.TensorInfo("UINT32", list(a.shape))) for a in (targets, lengths,
                                                                                               np.array([3])))
        loss = builder.aiGraphcore.ctcloss([lp, t, i, n], popart.ReductionType.Sum, zeroInfinity=zero_infinity)
        out = run(builder, [loss], {lp: log_probs, t: targets, i: lengths, n: np.array([3], np.uint32)})[loss]
        assert out == expected


@pytest.mark.parametrize("image_type, out_type", [("UINT8", np.float16), ("FLOAT", np.float32)])
def test_normalize_image_scales_offsets_and_pads_to_four_channels(image_type, out_type):
    image = RNG.integers(0, 255, (2, 3, 3, 3)).astype(np.uint8 if image_type == "UINT8" else np.float32)
    offsets, scales = np.array([1, 2, 3], out_type), np.array([0.5, 0.25, 2], out_type)
    builder = popart.Builder()
    i = builder.addInputTensor(popart.TensorInfo(image_type, [2, 3, 3, 3]))
    o, s = (builder.addInputTensor(popart.TensorInfo("FLOAT16" if out_type == np.float16 else "FLOAT", [3]))
            for _ in range(2))
    normal = builder.aiGraphcore.normalize_image([i, o, s], scale=1 / 255)
    assert builder.getTensorShape(normal) == [2, 3, 3, 4]
    out = run(builder, [normal], {i: image, o: offsets, s: scales})[normal]
    expected = (image.astype(np.float64) / 255 - offsets) * scales
    assert out.dtype == out_type
    np.testing.assert_allclose(out[..., :3], expected, rtol=2e-3, atol=2e-3)
    np.testing.assert_array_equal(out[..., 3], 0)


def test_init_takes_a_debug_context_fourth_as_popart_s_second_overload_does():
    builder = popart.Builder()
    zeros = builder.aiGraphcore.init([2, 3], popart.DataType.FLOAT, popart.InitType.Zero, "zeros")
    batched = builder.aiGraphcore.init([4, 3], popart.DataType.FLOAT, popart.InitType.Zero, 0, "batched")
    assert builder.getTensorShape(zeros) == [2, 3] and builder.getTensorShape(batched) == [4, 3]
    nodes = onnx_nodes(builder)
    assert [n.name.split("/")[-1] for n in nodes] == ["zeros", "batched"]
    assert [next(a.i for a in n.attribute if a.name == "batch_axis") for n in nodes] == [-1, 0]


def onnx_nodes(builder):
    import onnx

    return list(onnx.load_from_string(builder.getModelProto()).graph.node)
