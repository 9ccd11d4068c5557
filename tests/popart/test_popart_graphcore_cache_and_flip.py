"""The guide's CacheStore, CacheLoad and ConvFlipWeights (ai.graphcore, version 1), made with
``builder.customOp`` as PopART scripts make them: shapes, values against NumPy and onnxruntime,
ConvFlipWeights' gradient against finite differences, and the errors of a bad node."""
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper

import popart

GC = "ai.graphcore"


def run_inference(builder, anchors, feeds=None):
    flow = popart.DataFlow(1, {a: popart.AnchorReturnType("ALL") for a in anchors})
    session = popart.InferenceSession(builder.getModelProto(), flow,
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 1}))
    session.prepareDevice()
    session.weightsFromHost()
    arrays = session.initAnchorArrays()
    session.run(popart.PyStepIO(feeds or {}, arrays))
    return session, arrays


def cache_store(builder, value, bufferid, offset=None):
    inputs = [value] if offset is None else [value, offset]
    return builder.customOp("CacheStore", 1, GC, inputs, {"bufferid": bufferid}, numOutputs=0)


def cache_load(builder, like, bufferid, offset=None):
    inputs = [like] if offset is None else [like, offset]
    return builder.customOp("CacheLoad", 1, GC, inputs, {"bufferid": bufferid})[0]


def test_cache_store_then_load_gives_back_each_entry():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
    entry0, entry2 = (builder.aiOnnx.constant(np.array([i], np.int32)) for i in (0, 2))
    assert cache_store(builder, builder.aiOnnx.mul([x, x]), 7, entry2) == []
    cache_store(builder, builder.aiOnnx.neg([x]), 7, entry0)
    space = builder.aiGraphcore.init([2, 3], popart.DataType.FLOAT, popart.InitType.NoInit)
    squared, negated = cache_load(builder, space, 7, entry2), cache_load(builder, space, 7, entry0)
    assert builder.getTensorShape(squared) == [2, 3] and builder.getTensorDtypeString(squared) == "float32"
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    session, arrays = run_inference(builder, [squared, negated], {x: xv})
    np.testing.assert_array_equal(arrays[squared], xv * xv)
    np.testing.assert_array_equal(arrays[negated], -xv)
    (buffer,) = session.ir.remote_buffers
    assert (buffer.tensor_shape, buffer.entries) == ((2, 3), 3)  # entries up to the largest offset


def test_cache_load_without_offset_reads_entry_zero_and_a_later_store_overwrites_it():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("INT32", [4]))
    cache_store(builder, x, 0)
    first = cache_load(builder, x, 0)
    cache_store(builder, builder.aiOnnx.add([x, x]), 0)
    second = cache_load(builder, x, 0)
    xv = np.array([1, -2, 3, 40], np.int32)
    _, arrays = run_inference(builder, [first, second], {x: xv})
    np.testing.assert_array_equal(arrays[first], xv)
    np.testing.assert_array_equal(arrays[second], 2 * xv)


def test_cache_offsets_computed_at_run_time_pick_their_entry():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [3]))
    where = builder.addInputTensor(popart.TensorInfo("INT32", [1]))
    cache_store(builder, x, 1, builder.aiOnnx.constant(np.array([1], np.int32)))
    cache_store(builder, builder.aiOnnx.neg([x]), 1, builder.aiOnnx.constant(np.array([0], np.int32)))
    picked = cache_load(builder, x, 1, where)
    xv = np.array([1.5, 2.5, -3.0], np.float32)
    for entry, expected in ((0, -xv), (1, xv)):
        _, arrays = run_inference(builder, [picked], {x: xv, where: np.array([entry], np.int32)})
        np.testing.assert_array_equal(arrays[picked], expected)
    with pytest.raises(Exception, match=r"CacheLoad/remote_load.*offset 5 is outside the 2 entries of remote buffer"):
        run_inference(builder, [picked], {x: xv, where: np.array([5], np.int32)})


def test_cache_nodes_without_bufferid_or_of_another_shape_are_refused_at_session_creation():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [3]))
    builder.customOp("CacheStore", 1, GC, [x], {}, numOutputs=0)
    with pytest.raises(popart.popart_exception, match="CacheStore.*'bufferid' is missing"):
        run_inference(builder, [x], {x: np.zeros(3, np.float32)})

    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [3]))
    cache_store(builder, x, 5)
    wide = builder.aiGraphcore.init([4], popart.DataType.FLOAT, popart.InitType.Zero)
    loaded = cache_load(builder, wide, 5)
    with pytest.raises(popart.popart_exception, match=r"remote buffer 5 holds float32\[3\].*is float32\[4\]"):
        run_inference(builder, [loaded], {x: np.zeros(3, np.float32)})


def flipped(weights: np.ndarray) -> np.ndarray:
    """NumPy's ConvFlipWeights: channels swapped, every kernel axis reversed."""
    swapped = weights.swapaxes(0, 1)
    return swapped[(slice(None), slice(None)) + (slice(None, None, -1),) * (weights.ndim - 2)]


@pytest.mark.parametrize("shape", [(4, 3, 5), (2, 3, 2, 4), (3, 2, 2, 3, 2)], ids=["1d", "2d", "3d"])
def test_conv_flip_weights_swaps_the_channels_and_reverses_the_kernel(shape):
    builder = popart.Builder()
    weights = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    w = builder.addInitializedInputTensor(weights)
    out = builder.customOp("ConvFlipWeights", 1, GC, [w], {})[0]
    assert builder.getTensorShape(out) == [shape[1], shape[0], *shape[2:]]
    _, arrays = run_inference(builder, [out])
    np.testing.assert_array_equal(arrays[out], flipped(weights))


def test_a_conv_with_flipped_weights_is_the_transposed_convolution_onnxruntime_computes():
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((1, 3, 5, 6)).astype(np.float32)
    weights = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)  # ConvTranspose: [in, out, kH, kW]
    builder = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1, "ai.onnx.ml": 1})
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", list(xv.shape)))
    w = builder.addInitializedInputTensor(weights)
    flip = builder.customOp("ConvFlipWeights", 1, GC, [w], {})[0]
    y = builder.aiOnnx.conv([x, flip], pads=[2, 2, 2, 2])
    _, arrays = run_inference(builder, [y], {x: xv})

    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, xv.shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              initializer=[onnx.numpy_helper.from_array(weights, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    expected = onnxruntime.InferenceSession(model.SerializeToString(),
                                            providers=["CPUExecutionProvider"]).run(None, {"x": xv})[0]
    assert arrays[y].shape == expected.shape == (1, 2, 7, 8)
    np.testing.assert_allclose(arrays[y], expected, rtol=1e-5, atol=1e-5)


def test_conv_flip_weights_gradient_matches_finite_differences():
    """The gradient of ``sum(ConvFlipWeights(W) * C)`` with respect to W, anchored from a training
    session, against central finite differences of the same function in NumPy."""
    rng = np.random.default_rng(2)
    weights = rng.uniform(0.5, 1.5, (2, 3, 2, 2)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, (3, 2, 2, 2)).astype(np.float32)
    builder = popart.Builder()
    w = builder.addInitializedInputTensor(weights)
    c = builder.aiOnnx.constant(scale)
    product = builder.aiOnnx.mul([builder.customOp("ConvFlipWeights", 1, GC, [w], {})[0], c])
    loss = builder.aiGraphcore.l1loss([product], 1.0, reduction=popart.ReductionType.Sum)
    gradient = popart.reservedGradientPrefix() + w
    session = popart.TrainingSession(fnModel=builder.getModelProto(), loss=loss, optimizer=popart.ConstSGD(0.1),
                                     dataFlow=popart.DataFlow(1, {gradient: popart.AnchorReturnType("ALL")}),
                                     deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    session.weightsFromHost()
    arrays = session.initAnchorArrays()
    session.run(popart.PyStepIO({}, arrays))

    def f(values: np.ndarray) -> float:
        return float(np.abs(flipped(values) * scale.astype(np.float64)).sum())

    numeric = np.zeros(weights.shape)
    base, delta = weights.astype(np.float64), 1e-6
    for index in np.ndindex(weights.shape):
        up, down = base.copy(), base.copy()
        up[index] += delta
        down[index] -= delta
        numeric[index] = (f(up) - f(down)) / (2 * delta)
    np.testing.assert_allclose(arrays[gradient], numeric, rtol=1e-5, atol=1e-5)


def test_conv_flip_weights_of_a_matrix_is_refused_when_the_node_is_added():
    builder = popart.Builder()
    w = builder.addInitializedInputTensor(np.ones((2, 3), np.float32))
    with pytest.raises(popart.popart_exception, match=r"ConvFlipWeights: expected conv weights .* shape \[2, 3\]"):
        builder.customOp("ConvFlipWeights", 1, GC, [w], {})
