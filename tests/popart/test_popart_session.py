"""InferenceSession: the seed guide's examples, anchors of each return type, batches per step,
replication, IPU placement, weights, and PopART's errors."""
import json

import numpy as np
import onnx
import pytest

import popart
from workbench.ops.registry import op_def


def add_model(shape=(1,)):
    builder = popart.Builder()
    info = popart.TensorInfo("FLOAT", list(shape))
    a = builder.addInputTensor(info)
    b = builder.addInputTensor(info)
    o = builder.aiOnnx.add([a, b])
    builder.addOutputTensor(o)
    return builder.getModelProto(), a, b, o


def test_simple_addition_example_of_the_guide():
    proto, a, b, o = add_model()
    dataFlow = popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")})
    session = popart.InferenceSession(fnModel=proto, dataFlow=dataFlow,
                                      deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    data_a = np.random.rand(1).astype(np.float32)
    data_b = np.random.rand(1).astype(np.float32)
    session.run(popart.PyStepIO({a: data_a, b: data_b}, anchors))
    np.testing.assert_allclose(anchors[o], data_a + data_b)


def test_data_feed_keyword_and_importing_an_onnx_file(tmp_path):
    proto, a, b, o = add_model((2,))
    path = tmp_path / "onnx.pb"
    path.write_bytes(proto)
    df = popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")})
    s = popart.InferenceSession(str(path), deviceInfo=popart.DeviceManager().createCpuDevice(), dataFeed=df)
    s.prepareDevice()
    anchors = s.initAnchorArrays()
    s.run(popart.PyStepIO({a: np.ones(2, np.float32), b: np.full(2, 2, np.float32)}, anchors))
    np.testing.assert_array_equal(anchors[o], [3, 3])


def batches_session(art, batches=4, replicas=1):
    proto, a, b, o = add_model((3,))
    options = popart.SessionOptions()
    options.enableReplicatedGraphs = replicas > 1
    options.replicatedGraphCount = replicas
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": replicas})
    session = popart.InferenceSession(proto, popart.DataFlow(batches, {o: art}), device, userOptions=options)
    session.prepareDevice()
    return session, a, b, o


@pytest.mark.parametrize("art, shape, pick", [
    (popart.AnchorReturnType("ALL"), [4, 3], lambda s: s),
    (popart.AnchorReturnType("all"), [4, 3], lambda s: s),
    (popart.AnchorReturnType("EVERYN", 2), [2, 3], lambda s: s[1::2]),
    (popart.AnchorReturnType("Final"), [3], lambda s: s[-1]),
    (popart.AnchorReturnType("SUM"), [3], lambda s: s.sum(0)),
])
def test_anchor_return_types(art, shape, pick):
    session, a, b, o = batches_session(art)
    anchors = session.initAnchorArrays()
    assert list(anchors[o].shape) == shape
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    session.run(popart.PyStepIO({a: x, b: 2 * x}, anchors))
    np.testing.assert_allclose(anchors[o], pick(3 * x))


def test_replicated_anchors_lead_with_batches_then_replicas():
    session, a, b, o = batches_session(popart.AnchorReturnType("ALL"), batches=2, replicas=2)
    assert session.replicationFactor == 2
    anchors = session.initAnchorArrays()
    assert anchors[o].shape == (2, 2, 3)
    x = np.random.rand(2, 2, 3).astype(np.float32)
    session.run(popart.PyStepIO({a: x, b: x}, anchors))
    np.testing.assert_allclose(anchors[o], 2 * x)
    final, a2, b2, o2 = batches_session(popart.AnchorReturnType("FINAL"), batches=2, replicas=2)
    assert final.initAnchorArrays()[o2].shape == (2, 3)


def test_every_n_must_divide_batches_per_step():
    proto, a, b, o = add_model()
    with pytest.raises(popart.popart_exception,
                       match="Return period must be a factor of the number of batches per step"):
        popart.InferenceSession(proto, popart.DataFlow(3, {o: popart.AnchorReturnType("EVERYN", 2)}),
                                popart.DeviceManager().createCpuDevice())
    with pytest.raises(popart.popart_exception, match="Invalid anchor return type"):
        popart.AnchorReturnType("SOMETIMES")


def test_dataflow_from_a_list_means_all():
    flow = popart.DataFlow(2, ["x", "y"])
    assert flow.anchors() == ["x", "y"] and flow.art("y").id() is popart.AnchorReturnTypeId.All
    assert flow.batchesPerStep() == 2 and popart.DataFlow(1, {}).nAnchors() == 0


def test_inputs_of_the_wrong_size_or_dtype_and_missing_inputs_are_named():
    session, a, b, o = batches_session(popart.AnchorReturnType("ALL"), batches=2)
    anchors = session.initAnchorArrays()
    good = np.zeros((2, 3), np.float32)
    with pytest.raises(popart.popart_exception, match="Unexpected number of input elements for Tensor input. "
                                                      "Expected 6, but received 5"):
        session.run(popart.PyStepIO({a: np.zeros(5, np.float32), b: good}, anchors))
    with pytest.raises(popart.popart_exception, match="Type discrepancy for tensor input. User provided : DOUBLE and "
                                                      "expected : FLOAT"):
        session.run(popart.PyStepIO({a: good.astype(np.float64), b: good}, anchors))
    with pytest.raises(popart.popart_exception, match="No tensor input/1 provided in PyStepIO's inputs"):
        session.run(popart.PyStepIO({a: good}, anchors))


def test_run_before_prepare_device_and_unknown_anchors_raise():
    proto, a, b, o = add_model()
    session = popart.InferenceSession(proto, popart.DataFlow(1, [o]), popart.DeviceManager().createCpuDevice())
    with pytest.raises(popart.popart_exception, match="Must call prepareDevice"):
        session.run(popart.PyStepIO({}, {}))
    with pytest.raises(popart.popart_exception, match="Anchor tensor `nope' not in Ir Tensors"):
        popart.InferenceSession(proto, popart.DataFlow(1, ["nope"]), popart.DeviceManager().createCpuDevice())


def test_cpu_device_does_not_replicate():
    proto, a, b, o = add_model()
    options = popart.SessionOptions()
    options.enableReplicatedGraphs = True
    options.replicatedGraphCount = 2
    session = popart.InferenceSession(proto, popart.DataFlow(1, [o]), popart.DeviceManager().createCpuDevice(),
                                      userOptions=options)
    with pytest.raises(popart.popart_exception, match="does not support replication"):
        session.prepareDevice()


def two_ipu_model():
    builder = popart.Builder()
    i1, i2, i3, i4 = (builder.addInputTensor(popart.TensorInfo("FLOAT", [1])) for _ in range(4))
    with builder.virtualGraph(0):
        o1 = builder.aiOnnx.add([i1, i2])
        o2 = builder.aiOnnx.add([i3, i4])
    with builder.virtualGraph(1):
        o = builder.aiOnnx.add([o1, o2])
    return builder.getModelProto(), (i1, i2, i3, i4), o


def test_setting_ipu_numbers_places_ops_and_copies_between_ipus():
    proto, inputs, o = two_ipu_model()
    options = popart.SessionOptions()
    options.virtualGraphMode = popart.VirtualGraphMode.Manual
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 2})
    session = popart.InferenceSession(proto, popart.DataFlow(1, [o]), device, userOptions=options)
    ops = [op for graph in session.ir.graphs for op in graph.ops]
    assert {op.ipu for op in ops if op.type == "add"} == {0, 1}
    assert [op.type for op in ops].count("ipu_copy") == 2
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({i: np.array([k + 1.0], np.float32) for k, i in enumerate(inputs)}, anchors))
    np.testing.assert_allclose(anchors[o], [10.0])


def test_auto_virtual_graph_splits_nodes_over_the_ipus():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 2]))
    for _ in range(4):  # four weights of the same bytes: two on each IPU
        x = builder.aiOnnx.matmul([x, builder.addInitializedInputTensor(np.eye(2, dtype=np.float32))])
    options = popart.SessionOptions()
    options.virtualGraphMode = popart.VirtualGraphMode.Auto
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [x]),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}), userOptions=options)
    products = [op for op in session.ir.main_graph.ops if op_def(op.type).matrix_product]
    assert [op.ipu for op in products] == [0, 0, 1, 1]


def weights_session(constant_weights=False):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.array([1.0, 2.0], np.float32), "w")
    y = builder.aiOnnx.mul([x, w])
    options = popart.SessionOptions()
    options.constantWeights = constant_weights
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createIpuModelDevice({}), userOptions=options)
    session.prepareDevice()
    return session, x, w, y


def test_write_read_and_reset_weights(tmp_path):
    session, x, w, y = weights_session()
    session.writeWeights(popart.PyWeightsIO({w: np.array([3.0, 4.0], np.float32)}))
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.ones(2, np.float32)}, anchors))
    np.testing.assert_allclose(anchors[y], [3.0, 4.0])
    session.weightsToHost()
    read = {w: np.zeros(2, np.float32)}
    session.readWeights(popart.PyWeightsIO(read))
    np.testing.assert_allclose(read[w], [3.0, 4.0])
    path = str(tmp_path / "saved.onnx")
    session.modelToHost(path)
    saved = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    np.testing.assert_allclose(saved["w"], [3.0, 4.0])
    other, x2, w2, y2 = weights_session()
    other.resetHostWeights(path)
    other.weightsFromHost()
    anchors = other.initAnchorArrays()
    other.run(popart.PyStepIO({x2: np.ones(2, np.float32)}, anchors))
    np.testing.assert_allclose(anchors[y2], [3.0, 4.0])


def test_constant_weights_are_compiled_in_and_cannot_be_written():
    session, x, w, y = weights_session(constant_weights=True)
    assert not session.ir.variables
    with pytest.raises(popart.popart_exception, match="constantWeights"):
        session.writeWeights(popart.PyWeightsIO({w: np.zeros(2, np.float32)}))
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.ones(2, np.float32)}, anchors))
    np.testing.assert_allclose(anchors[y], [1.0, 2.0])


def test_input_shape_info_gives_shapes_the_model_leaves_open():
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, None)
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 11)]).SerializeToString()
    device = popart.DeviceManager().createCpuDevice()
    with pytest.raises(popart.popart_exception, match="the shape of input 'x' is not known"):
        popart.InferenceSession(proto, popart.DataFlow(1, ["y"]), device)
    shapes = popart.InputShapeInfo()
    shapes.add("x", popart.TensorInfo("FLOAT", [3]))
    session = popart.InferenceSession(proto, popart.DataFlow(1, ["y"]), device, shapes)
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({"x": np.array([-1, 0, 2], np.float32)}, anchors))
    np.testing.assert_array_equal(anchors["y"], [0, 0, 2])


def test_unsupported_op_fails_at_session_creation_naming_op_node_and_opset():
    builder = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 2]))
    y = builder.aiOnnx.det([x], debugContext="determinant")
    with pytest.raises(popart.popart_exception, match=r"Op ai.onnx.Det:11 \(node 'determinant'\) at opset 11 is "
                                                      "not supported"):
        popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                popart.DeviceManager().createCpuDevice())


def test_session_info_and_tensor_ids():
    session, x, w, y = weights_session()
    assert session.getInfo(y).shape() == [2] and session.getInfo(y).data_type_lcase() == "float32"
    assert {x, w, y} <= session.getAllTensorIds()
    assert "Execution profiling not enabled" in session.getSummaryReport()


def test_step_io_callbacks_feed_and_collect_each_batch():
    session, a, b, o = batches_session(popart.AnchorReturnType("ALL"), batches=2)
    fed = {a: iter([np.ones(3, np.float32), 2 * np.ones(3, np.float32)]),
           b: iter([np.zeros(3, np.float32), np.zeros(3, np.float32)])}
    got = []
    stepio = popart.PyStepIOCallback(lambda tensor_id, prefetch: next(fed[tensor_id]), lambda tensor_id: None,
                                     lambda tensor_id: got.append(np.zeros(3, np.float32)) or got[-1],
                                     lambda tensor_id: None)
    session.run(stepio)
    np.testing.assert_array_equal(got, [[1, 1, 1], [2, 2, 2]])


def test_several_batches_repeat_a_step_graph_taking_the_weights():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.ones(2, np.float32), "w")
    y = builder.aiOnnx.mul([x, w])
    options = popart.SessionOptions()
    options.constantWeights = False
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(3, [y]),
                                      popart.DeviceManager().createCpuDevice(), userOptions=options)
    main, step = session.ir.graphs
    assert [op.type for op in main.ops] == ["repeat"] and main.ops[0].attrs["repeat_count"] == 3
    assert [t.name for t in step.inputs] == ["w"]


def test_lowered_program_keeps_onnx_names_for_the_views():
    from workbench.analysis.call_tree import call_tree

    session, x, w, y = weights_session()
    step = session.ir.main_graph
    assert [v.name for v in session.ir.variables] == ["w"]
    assert any(t.name == y for t in step.tensors)
    mul = next(op for op in step.ops if op.type == "mul")
    assert mul.meta["onnx_node"] == "Mul" and mul.meta["onnx_op"] == "ai.onnx.Mul:7"
    assert call_tree(session.ir) is not None
    assert session.workbench_session.memory_report.fits


def test_instrumented_engine_reports_simulated_cycles_and_dot_checks_write_files(tmp_path):
    proto, a, b, o = add_model((4,))
    options = popart.SessionOptions()
    options.engineOptions = {"debug.instrument": "true"}
    options.instrumentWithHardwareCycleCounter = True  # for getCycleCount, as PopART needs
    options.dotChecks = {popart.DotCheck.Final}
    options.logDir = str(tmp_path)
    session = popart.InferenceSession(proto, popart.DataFlow(1, [o]), popart.DeviceManager().createIpuModelDevice({}),
                                      userOptions=options)
    assert list(tmp_path.glob("*.dot"))
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({a: np.ones(4, np.float32), b: np.ones(4, np.float32)}, anchors))
    assert session.getCycleCount() > 0
    assert "Last run:" in session.getSummaryReport()
    assert '"profilerMode":"SIMULATED"' in session.getExecutionReport()


@pytest.mark.parametrize("kind, size, groups", [(popart.CommGroupType.Consecutive, 2, [[0, 1], [2, 3]]),
                                                (popart.CommGroupType.Orthogonal, 2, [[0, 2], [1, 3]])])
def test_variable_settings_give_each_replica_group_its_own_weight(kind, size, groups):
    builder = popart.Builder()
    builder.embedReplicationFactor(4)
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    settings = popart.VariableSettings(popart.CommGroup(kind, size), popart.VariableRetrievalMode.OnePerGroup)
    assert settings.getGroupCount(4) == 2 and settings.numReplicasReturningVariable(4) == 2
    w = builder.addInitializedInputTensor(np.array([[1.0, 1.0], [2.0, 2.0]], np.float32), settings, "w")
    assert builder.getTensorShape(w) == [2]
    y = builder.aiOnnx.mul([x, w])
    options = popart.SessionOptions()
    options.enableReplicatedGraphs, options.replicatedGraphCount = True, 4
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 4}), userOptions=options)
    grouping = session.ir.variables[0].replica_grouping
    assert grouping.group_size == 2 and grouping.num_groups == 2
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.ones((4, 2), np.float32)}, anchors))
    for value, replicas in zip((1.0, 2.0), groups):
        np.testing.assert_allclose(anchors[y][replicas], value)
    read = {w: np.zeros((2, 2), np.float32)}
    session.weightsToHost()
    session.readWeights(popart.PyWeightsIO(read))
    np.testing.assert_allclose(read[w], [[1.0, 1.0], [2.0, 2.0]])


def test_grouped_weights_need_one_value_per_group_and_a_matching_replication_factor():
    builder = popart.Builder()
    builder.embedReplicationFactor(4)
    settings = popart.VariableSettings(popart.CommGroup(popart.CommGroupType.Consecutive, 2))
    with pytest.raises(popart.popart_exception, match="leading dimension of 2"):
        builder.addInitializedInputTensor(np.ones(3, np.float32), settings)
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.ones((2, 2), np.float32), settings)
    y = builder.aiOnnx.mul([x, w])
    with pytest.raises(popart.popart_exception, match="grouped for 4 replicas"):
        popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                popart.DeviceManager().createIpuModelDevice({}))


def test_pipelining_needs_stages_on_ipus_and_enough_batches():
    proto, inputs, o = two_ipu_model()
    options = popart.SessionOptions()
    options.enablePipelining = True
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 2})
    with pytest.raises(popart.popart_exception, match="split over IPUs"):
        popart.InferenceSession(proto, popart.DataFlow(2, [o]), device, userOptions=options)
    options.virtualGraphMode = popart.VirtualGraphMode.Manual
    with pytest.raises(popart.popart_exception, match=r"depth \(batchesPerStep\) must equal at least the number of pipeline stages \(2\)"):
        popart.InferenceSession(proto, popart.DataFlow(1, [o]), device, userOptions=options)
    session = popart.InferenceSession(proto, popart.DataFlow(2, [o]), device, userOptions=options)
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({i: np.full((2, 1), k + 1.0, np.float32) for k, i in enumerate(inputs)}, anchors))
    np.testing.assert_allclose(anchors[o], [[10.0], [10.0]])
    adds = [op for graph in session.ir.graphs for op in graph.ops if op.type == "add"]
    assert {op.meta["popart"]["__ipu_number"] for op in adds} == {0, 1}


@pytest.mark.parametrize("profiled", [False, True])
def test_a_model_too_large_for_the_device_raises_out_of_memory_at_prepare_device(tmp_path, profiled):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [256, 256]))
    w = builder.addInitializedInputTensor(np.ones((256, 256), np.float32))
    y = builder.aiOnnx.matmul([x, w])
    options = popart.SessionOptions()
    if profiled:
        options.engineOptions = {"autoReport.outputGraphProfile": "true", "autoReport.directory": str(tmp_path)}
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": 1}),
                                      userOptions=options)
    with pytest.raises(popart.OutOfMemoryException, match="out of memory") as raised:
        session.prepareDevice()
    assert "largest tensors" in raised.value.getSummaryReport()
    assert str(raised.value).startswith("Out of memory: Cannot fit all variable data onto one or more tiles.\n")
    if not profiled:
        assert raised.value.getProfilePath() == ""
        return
    profile = json.loads(open(raised.value.getProfilePath(), encoding="utf-8").read())
    assert raised.value.getProfilePath().startswith(str(tmp_path))
    assert profile["ipus"][0]["peakBytes"] > profile["ipus"][0]["tileMemoryBytes"] > 0


def test_final_and_sum_anchors_are_carried_through_the_loop_and_stored_once():
    proto, a, b, o = add_model((3,))
    builder = popart.Builder(proto)
    doubled = builder.aiOnnx.add([o, o])
    flow = popart.DataFlow(3, {o: popart.AnchorReturnType("SUM"), doubled: popart.AnchorReturnType("FINAL")})
    session = popart.InferenceSession(builder.getModelProto(), flow, popart.DeviceManager().createCpuDevice())
    main, step = session.ir.graphs
    assert [op.type for op in main.ops].count("host_store") == 2
    assert not [op for op in step.ops if op.type == "host_store"]
    assert [t.name for t in step.inputs[:2]] == [f"{o}/carried", f"{doubled}/carried"]
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    session.run(popart.PyStepIO({a: x, b: x}, anchors))
    np.testing.assert_allclose(anchors[o], (2 * x).sum(0))
    np.testing.assert_allclose(anchors[doubled], 4 * x[-1])
