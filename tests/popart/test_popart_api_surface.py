"""PopART's API as its scripts and tests use it: grouped weights before the replication factor is known,
patterns, option records, DataType, device and opset names, and host data PopART converts."""
import re

import numpy as np
import pytest

import popart


def grouped_model(values):
    """y = x * w, with w shared by Consecutive groups of 2 replicas; no replication factor embedded."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    settings = popart.VariableSettings(popart.CommGroup(popart.CommGroupType.Consecutive, 2),
                                       popart.VariableRetrievalMode.OnePerGroup)
    w = builder.addInitializedInputTensor(np.array(values, np.float32), settings, "w")
    return builder, x, w, builder.aiOnnx.mul([x, w])


def replicated(count):
    options = popart.SessionOptions()
    options.enableReplicatedGraphs, options.replicatedGraphCount = True, count
    return options


def test_grouped_weights_take_the_sessions_replication_factor_when_the_model_embeds_none():
    builder, x, w, y = grouped_model([[1.0, 1.0], [2.0, 2.0]])
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 4}),
                                      userOptions=replicated(4))
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    data = np.arange(8, dtype=np.float32).reshape(4, 2)
    session.run(popart.PyStepIO({x: data}, anchors))
    np.testing.assert_array_equal(anchors[y], data * np.array([[1], [1], [2], [2]], np.float32))
    read = {w: np.zeros((2, 2), np.float32)}
    session.weightsToHost()
    session.readWeights(popart.PyWeightsIO(read))
    np.testing.assert_array_equal(read[w], [[1.0, 1.0], [2.0, 2.0]])


def test_grouped_weights_that_do_not_fit_the_sessions_replicas_are_named():
    builder, x, w, y = grouped_model([[1.0, 1.0], [2.0, 2.0]])
    with pytest.raises(popart.popart_exception, match=r"weight 'w' is shared by 4 replica groups of 8 replicas: its "
                                                      r"value needs a leading dimension of 4 .* got shape \[2, 2\]"):
        popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                popart.DeviceManager().createIpuModelDevice({"numIPUs": 8}), userOptions=replicated(8))
    with pytest.raises(popart.popart_exception, match="weight 'w': a Consecutive CommGroup of size 2 does not "
                                                      "divide 3 replicas of the session"):
        popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                popart.DeviceManager().createIpuModelDevice({"numIPUs": 3}), userOptions=replicated(3))


@pytest.mark.parametrize("level, on, off", [
    (popart.PatternsLevel.Default, ["PreUniRepl", "MatMulOp"], ["TiedGather", "LSTMOp"]),
    (popart.PatternsLevel.All, ["TiedGather", "LSTMOp", "MatMulOp"], []),
    (popart.PatternsLevel.Minimal, ["MatMulOp", "CosGradOp"], ["PreUniRepl", "TiedGather"]),
    (popart.PatternsLevel.NoPatterns, [], ["MatMulOp", "PreUniRepl"]),
])
def test_pattern_levels_enable_popart_s_patterns(level, on, off):
    patterns = popart.Patterns(level)
    assert all(patterns.isPatternEnabled(name) for name in on)
    assert not any(patterns.isPatternEnabled(name) for name in off)
    assert patterns.InPlace == (level in (popart.PatternsLevel.Default, popart.PatternsLevel.All))


def test_pattern_toggles_by_name_and_property():
    patterns = popart.Patterns(["PreUniRepl", "InPlace"])
    assert patterns.PreUniRepl and patterns.InPlace and not patterns.PostNRepl
    patterns.PostNRepl = True
    patterns.SoftMaxGradDirect = True  # the property's spelling of SoftmaxGradDirect
    assert patterns.isPatternEnabled("PostNRepl") and patterns.isPatternEnabled("SoftmaxGradDirect")
    assert patterns.enablePattern("PreUniRepl", False) is patterns and not patterns.PreUniRepl
    patterns.InPlace = False
    assert not patterns.isPatternEnabled("InPlace")


def test_pattern_errors_name_the_pattern():
    with pytest.raises(popart.popart_exception, match="Unknown pattern Inplace, did you mean InPlace?"):
        popart.Patterns(["Inplace"])
    with pytest.raises(popart.popart_exception, match="Unknown pattern NoSuchPattern"):
        popart.Patterns().isPatternEnabled("NoSuchPattern")
    with pytest.raises(popart.popart_exception, match="Pattern 'MatMulOp' is mandatory and cannot be disabled"):
        popart.Patterns().enablePattern("MatMulOp", False)


def relu_session(patterns):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.relu([x])
    return popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                   popart.DeviceManager().createIpuModelDevice({}), patterns=patterns)


def test_a_session_needs_the_mandatory_patterns_unless_runtime_asserts_are_off():
    with pytest.raises(popart.popart_exception, match="Pattern '.*' must be enabled"):
        relu_session(popart.Patterns(popart.PatternsLevel.NoPatterns))
    relu_session(popart.Patterns(popart.PatternsLevel.NoPatterns).enableRuntimeAsserts(False))
    relu_session(popart.Patterns(popart.PatternsLevel.Minimal))


def test_session_options_popart_s_tests_set():
    opts = popart.SessionOptions()
    opts.enableExplicitIR(True)
    assert opts.useHostCopyOps and opts.enableExplicitMainLoops and opts.explicitRecomputation
    opts.executionPhaseSettings.phases = 2
    opts.executionPhaseSettings.activationIOSchedule = popart.ExecutionPhaseIOSchedule.OnDemand
    opts.batchSerializationSettings.factor = 4
    opts.weightTensorLocationSettings.location.storage = popart.TensorStorage.OffChip
    opts.activationTensorLocationSettings = popart.TensorLocationSettings(popart.TensorStorage.OffChip, 0)
    opts.automaticLossScalingSettings.enabled = True
    opts.experimentalSettings.customTransformApplierSettings = {"a": ["b"]}
    opts.defaultBufferingDepth = 2
    opts._enableRngStateManagement = True
    assert opts.enableRngStateManagement
    assert opts.activationTensorLocationSettings.location.storage is popart.TensorStorage.OffChip
    assert opts.activationTensorLocationSettings.minElementsForOffChip == 0
    fresh = popart.SessionOptions()  # every SessionOptions has records of its own
    assert (fresh.executionPhaseSettings.phases, fresh.weightTensorLocationSettings.location.storage) == (
        0, popart.TensorStorage.OnChip)
    with pytest.raises(AttributeError, match="'popart.ExecutionPhaseSettings' object has no attribute 'phase'"):
        opts.executionPhaseSettings.phase = 3
    location = popart.TensorLocation(popart.TensorStorage.OffChip, popart.ReplicatedTensorSharding.On)
    assert location.replicatedTensorSharding is popart.ReplicatedTensorSharding.On


def test_data_types_include_float8():
    assert popart.DataType.FLOAT8_143.value == 2 and popart.DataType.FLOAT8_152.value == 3
    info = popart.TensorInfo(popart.DataType.FLOAT8_143, [2, 3])
    assert (info.dataType(), info.nbytes(), info.data_type_lcase()) == ("FLOAT8_143", 6, "float8_143")
    assert popart.TensorInfo(popart.DataType.FLOAT16, [2]).dataType() == "FLOAT16"
    assert popart.Adam({}, accum_type=popart.DataType.FLOAT16) is not None


def test_device_info_num_ipus_and_opset_names():
    assert popart.DeviceManager().createIpuModelDevice({"numIPUs": 4}).num_ipus == 4
    builder = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
    assert str(builder.aiOnnx) == "AiOnnx11" and type(builder.aiOnnx).__name__ == "AiOnnxOpset11"
    assert str(builder.aiGraphcore) == "AiGraphcoreOpset1"


def test_virtual_graph_takes_a_set_or_list_of_tensors():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.relu([x])
    z = builder.aiOnnx.neg([y])
    builder.virtualGraph({y, z}, 1)
    assert builder.getVirtualGraph(y) == builder.getVirtualGraph(z) == 1
    builder.virtualGraph([y], 0)
    assert builder.getVirtualGraph(y) == 0


def test_training_session_whose_only_anchor_is_an_input_gradient():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    w = builder.addInitializedInputTensor(np.array([1.0, 2.0], np.float32), "w")
    loss = builder.aiGraphcore.l1loss([builder.aiOnnx.mul([x, w])], 1.0)
    gradient = popart.reservedGradientPrefix() + x
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [gradient]), loss,
                                     popart.ConstSGD(0.1), popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    data = np.array([1.0, -1.0], np.float32)
    session.run(popart.PyStepIO({x: data}, anchors))
    # d/dx mean(|x * w|) = sign(x * w) * w / 2
    np.testing.assert_allclose(anchors[gradient], np.sign(data * [1.0, 2.0]) * [1.0, 2.0] / 2)


def test_int64_inputs_take_int64_host_data():
    builder = popart.Builder()
    i = builder.addInputTensor(popart.TensorInfo("INT64", [3]))
    o = builder.aiOnnx.add([i, i])
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [o]),
                                      popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    data = np.array([1, -2, 3], np.int64)
    session.run(popart.PyStepIO({i: data}, anchors))
    np.testing.assert_array_equal(anchors[o], data + data)


def test_float16_model_trains_with_a_changeable_loss_scaling():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT16", [2]))
    w = builder.addInitializedInputTensor(np.array([1.0, 2.0], np.float16))
    loss = builder.aiGraphcore.l1loss([builder.aiOnnx.mul([x, w])], 1.0)
    optimizer = popart.SGD({"defaultLearningRate": (0.1, False), "lossScaling": (8.0, False)})
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [loss]), loss, optimizer,
                                     popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    data = np.array([1.0, -1.0], np.float16)
    session.run(popart.PyStepIO({x: data}, anchors))
    session.weightsToHost()
    weights = {w: np.zeros(2, np.float16)}
    session.readWeights(popart.PyWeightsIO(weights))
    # The scaled gradient is unscaled by the update: w - 0.1 * sign(x * w) * x / 2.
    expected = np.array([1.0, 2.0]) - 0.1 * np.sign(data * [1.0, 2.0]) * data / 2
    np.testing.assert_allclose(weights[w], expected, rtol=1e-3)
    assert anchors[loss].dtype == np.float16 and float(anchors[loss]) == 1.5


def test_deprecated_buffering_options_are_aliases_logged_as_popart_warnings(capfd):
    opts = popart.SessionOptions()
    opts.defaultPrefetchBufferingDepth = 3
    opts.prefetchBufferingDepthMap = {"x": 2}
    lines = capfd.readouterr().err.splitlines()
    stamp = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[popart:popart\] \[warning\] "
    assert re.fullmatch(stamp + "The session option defaultPrefetchBufferingDepth has been deprecated and will be "
                        "removed in a future release. Please use the alias defaultBufferingDepth instead.", lines[-2])
    assert re.fullmatch(stamp + ".* prefetchBufferingDepthMap .* Please use the alias bufferingDepthMap instead.",
                        lines[-1])
    assert (opts.defaultBufferingDepth, opts.bufferingDepthMap) == (3, {"x": 2})
    assert opts.defaultPrefetchBufferingDepth == 3


def test_warnings_are_logged_by_default_and_silenced_by_the_log_level(capfd):
    popart.getLogger().setLevel("OFF")
    try:
        popart.SessionOptions().defaultPrefetchBufferingDepth = 3
        assert capfd.readouterr().err == ""
    finally:
        popart.getLogger().setLevel("WARN")
    popart.SessionOptions().defaultPrefetchBufferingDepth = 3
    assert "[popart:popart] [warning]" in capfd.readouterr().err


def test_excluded_patterns_must_be_popart_s():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.identity([x])
    builder.excludePatterns(y, ["PostNRepl"])
    z = builder.aiOnnx.identity([y])
    device = popart.DeviceManager().createCpuDevice()
    popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]), device)
    builder.excludePatterns(z, ["ThisPatternDoesNotExist"])
    with pytest.raises(popart.popart_exception, match="Invalid pattern name 'ThisPatternDoesNotExist' in "
                                                      "Op::excludePatterns"):
        popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [z]), device)


def test_int64_host_data_for_an_input_turned_to_int32():
    builder = popart.Builder()
    data = builder.addInputTensor(popart.TensorInfo("FLOAT", [3, 2]))
    indices = builder.addInputTensor(popart.TensorInfo("INT64", [2]))
    o = builder.aiOnnx.gather([data, indices], 0)
    transformer = popart.GraphTransformer(builder.getModelProto())
    transformer.convertINT64ToINT32()
    session = popart.InferenceSession(transformer.getModelProto(), popart.DataFlow(1, [o]),
                                      popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    session.run(popart.PyStepIO({data: table, indices: np.array([2, 0], np.int64)}, anchors))
    np.testing.assert_array_equal(anchors[o], table[[2, 0]])
    with pytest.raises(popart.popart_exception, match=r"Input '.*' has int64 values outside the range of int32"):
        session.run(popart.PyStepIO({data: table, indices: np.array([2, 2**40], np.int64)}, anchors))


def test_builder_opsets_may_name_ai_onnx_ml():
    builder = popart.Builder(opsets={"ai.onnx": 9, "ai.onnx.ml": 1, "ai.graphcore": 1})
    assert str(builder.aiOnnx) == "AiOnnx9"
    with pytest.raises(popart.popart_exception, match="unknown opset domain\\(s\\) \\['com.example'\\]"):
        popart.Builder(opsets={"ai.onnx": 9, "com.example": 1})
    with pytest.raises(popart.popart_exception, match="Unsupported or unrecognized ai.onnx.ml version: 2"):
        popart.Builder(opsets={"ai.onnx": 9, "ai.onnx.ml": 2})


def test_training_session_without_weights_gives_the_gradients_of_its_inputs():
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
    b = builder.addInputTensor(popart.TensorInfo("FLOAT", [3, 4]))
    product = builder.aiOnnx.matmul([a, b])
    loss = builder.aiGraphcore.l1loss([product], 0.1)  # 0.1 * mean |a b|
    grad_a, grad_b = (popart.reservedGradientPrefix() + t for t in (a, b))
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [grad_a, grad_b]), loss,
                                     popart.ConstSGD(0.01), popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(3, 4)).astype(np.float32)
    session.run(popart.PyStepIO({a: x, b: y}, anchors))
    upstream = 0.1 * np.sign(x @ y) / 8
    np.testing.assert_allclose(anchors[grad_a], upstream @ y.T, rtol=1e-5)
    np.testing.assert_allclose(anchors[grad_b], x.T @ upstream, rtol=1e-5)


def test_gradient_of_an_activation_can_be_anchored():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
    w = builder.addInitializedInputTensor(np.ones((3, 4), np.float32))
    product = builder.aiOnnx.matmul([x, w])
    loss = builder.aiGraphcore.l1loss([builder.aiOnnx.relu([product])], 1.0, popart.ReductionType.Sum)
    gradient = popart.reservedGradientPrefix() + product
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [gradient]), loss,
                                     popart.ConstSGD(0.01), popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    data = np.array([[1.0, 2.0, 0.5], [-1.0, -1.0, -1.0]], np.float32)
    session.run(popart.PyStepIO({x: data}, anchors))
    np.testing.assert_array_equal(anchors[gradient], np.broadcast_to((data.sum(1, keepdims=True) > 0), (2, 4)))


def test_a_training_session_with_nothing_to_train_runs_its_loss():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    scale = builder.aiOnnx.constant(np.array([1.0, 2.0], np.float32))
    loss = builder.aiGraphcore.l1loss([builder.aiOnnx.mul([x, scale])], 1.0)
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [loss]), loss, popart.ConstSGD(0.01),
                                     popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.array([1.0, -1.0], np.float32)}, anchors))
    assert float(anchors[loss]) == 1.5  # mean(|[1, -2]|)


def test_constants_inside_a_virtual_graph_scope_keep_their_value():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("INT32", [3]))
    with builder.virtualGraph(0):  # the node's __ipu_number attribute sorts before its value
        depth = builder.aiOnnx.constant(np.array(4, np.int32))
        hot = builder.aiOnnx.onehot([x, depth, builder.aiOnnx.constant(np.array([0, 1], np.int32))])
    assert builder.getTensorShape(hot) == [3, 4]


def test_int64_constants_out_of_int32_range_are_clipped_or_refused():
    builder = popart.Builder()
    data = builder.addInputTensor(popart.TensorInfo("FLOAT", [3, 2]))
    starts = builder.aiOnnx.constant(np.array([-(2**62)], np.int64))  # "from the very start", out of int32's range
    ends = builder.aiOnnx.constant(np.array([2], np.int64))
    axes = builder.aiOnnx.constant(np.array([0], np.int64))
    o = builder.aiOnnx.slice([data, starts, ends, axes])
    with pytest.raises(popart.popart_exception, match="cannot cast int64 to int32: a number is outside"):
        popart.GraphTransformer(builder.getModelProto()).convertINT64ToINT32()
    transformer = popart.GraphTransformer(builder.getModelProto())
    transformer.convertINT64ToINT32(clip=True)
    session = popart.InferenceSession(transformer.getModelProto(), popart.DataFlow(1, [o]),
                                      popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    session.run(popart.PyStepIO({data: table}, anchors))
    np.testing.assert_array_equal(anchors[o], table[:2])


@pytest.mark.parametrize("container", [set, list])
def test_virtual_graph_of_a_node_with_several_outputs(container):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [4, 1]))
    parts = builder.aiOnnx.split([x], 4)
    total = builder.aiOnnx.add([builder.aiOnnx.add(parts[:2]), builder.aiOnnx.add(parts[2:])])
    builder.virtualGraph(container(parts), 1)
    assert builder.getVirtualGraph(container(parts)) == 1 and builder.hasVirtualGraph(container(parts))
    with pytest.raises(popart.popart_exception, match="are not the outputs of one node"):
        builder.getVirtualGraph(container([parts[0], total]))
    assert not builder.hasVirtualGraph()
    with pytest.raises(popart.popart_exception, match="Virtual graph not set in current scope"):
        builder.getVirtualGraph()
    with builder.virtualGraph(0):
        assert builder.hasVirtualGraph() and builder.getVirtualGraph() == 0
