"""The Builder: a real ONNX model, PopART's tensor names, opsets, annotations and errors."""
import numpy as np
import onnx
import pytest

import popart


def test_popart_is_the_workbench_face():
    import workbench.popart

    assert popart is workbench.popart
    assert popart.Builder is workbench.popart.builder.Builder


def test_model_proto_is_real_onnx_that_the_checker_accepts():
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 2, 32, 32]))
    b = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 2, 32, 32]))
    o = builder.aiOnnx.add([a, b])
    builder.addOutputTensor(o)
    model = onnx.load_from_string(builder.getModelProto())
    onnx.checker.check_model(model, full_check=True)
    assert [n.op_type for n in model.graph.node] == ["Add"]
    assert [i.name for i in model.graph.input] == ["input", "input/1"]
    assert [o.name for o in model.graph.output] == ["Add:0"]
    assert {(o.domain, o.version) for o in model.opset_import} == {("", 10)}


def test_tensor_names_follow_popart():
    builder = popart.Builder()
    a = builder.addInputTensor("FLOAT", [2])
    b = builder.addInputTensor("FLOAT", [2], "b")
    w = builder.addInitializedInputTensor(np.ones(2, np.float32))
    w1 = builder.addInitializedInputTensor(np.ones(2, np.float32), "weight")
    x = builder.aiOnnx.add([a, b])
    y = builder.aiOnnx.add([x, w], "named")
    with builder.nameScope("layer"):
        z = builder.aiOnnx.mul([y, w1])
        i = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    parts = builder.aiOnnx.split([z], 2, axis=0)
    assert (a, b, w, w1) == ("input", "b", "init_input", "weight")
    assert (x, y, z, i) == ("Add:0", "Add:0/1", "layer/Mul:0", "layer/input")
    assert parts == ["Split:0", "Split:1"]
    nodes = onnx.load_from_string(builder.getModelProto()).graph.node
    assert [n.name for n in nodes] == ["Add", "named", "layer/Mul", "Split"]


def test_shapes_are_inferred_per_node():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT16", [1, 4, 32, 32]))
    w = builder.addInitializedInputTensor(np.zeros([64, 4, 3, 3], np.float16))
    y = builder.aiOnnx.conv([x, w], dilations=[1, 1], pads=[1, 1, 1, 1], strides=[2, 2])
    idx = builder.addInputTensor(popart.TensorInfo("INT32", [5]))
    g = builder.aiOnnx.gather([y, idx], axis=1, debugPrefix="My-Gather")
    assert builder.getTensorShape(y) == [1, 64, 16, 16]
    assert builder.getTensorShape(g) == [1, 5, 16, 16]
    assert builder.getTensorDtypeString(g) == "float16"
    assert builder.getTensorDtypeString(idx) == "int32"
    assert builder.isInitializer(w) and not builder.isInitializer(x)


def test_alike_nodes_with_different_constant_inputs_get_their_own_shapes():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 6]))
    wide = builder.reshape_const(builder.aiOnnx, [x], [1, 12])
    tall = builder.reshape_const(builder.aiOnnx, [x], [12, 1])
    again = builder.reshape_const(builder.aiOnnx, [x], [1, 12])
    assert [builder.getTensorShape(t) for t in (wide, tall, again)] == [[1, 12], [12, 1], [1, 12]]


def test_shape_errors_are_popart_exceptions_naming_the_node():
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
    b = builder.addInputTensor(popart.TensorInfo("FLOAT", [4, 5]))
    with pytest.raises(popart.popart_exception, match="Add 'Add'.*shape inference"):
        builder.aiOnnx.add([a, b])
    with pytest.raises(popart.popart_exception, match="'nope' is not a tensor"):
        builder.aiOnnx.relu(["nope"])
    with pytest.raises(popart.popart_exception, match="No tensor with id 'nope'"):
        builder.getTensorShape("nope")


def test_tensor_id_lists():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.ones(2, np.float32))
    k = builder.addInitializedInputTensor(np.ones(2, np.int32))
    y = builder.aiOnnx.mul([x, w])
    z = builder.aiOnnx.relu([y])
    builder.addOutputTensor(z)
    assert builder.getInputTensorIds() == [x, w, k]
    assert builder.getOutputTensorIds() == [z]
    assert builder.getValueTensorIds() == [y, z]  # a graph output is a value too
    assert builder.getTrainableTensorIds() == [w]


def test_opset_choice_and_mixing_raises_as_popart():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    builder.aiOnnxOpset11.relu([x])
    assert type(builder.aiOnnx).__name__ == "AiOnnxOpset11"
    with pytest.raises(RuntimeError, match="Invalid opset 'aiOnnxOpset9' selected. Opset for domain ai.onnx "
                                          "already defined as 11"):
        builder.aiOnnxOpset9
    fixed = popart.Builder(opsets={"ai.onnx": 9, "ai.graphcore": 1})
    assert type(fixed.aiOnnx).__name__ == "AiOnnxOpset9"


def test_opsets_have_popart_method_counts_and_signatures():
    import inspect

    counts = {v: len([n for n in vars(popart.opset_class(v)) if not n.startswith("_") and n != "version"])
              for v in (6, 7, 8, 9, 10, 11)}
    assert counts == {6: 95, 7: 102, 8: 104, 9: 123, 10: 137, 11: 156}
    opset10 = popart.AiOnnxOpset10
    assert str(inspect.signature(opset10.gemm)) == "(args, alpha=1.0, beta=1.0, transA=0, transB=0, debugContext='')"
    assert str(inspect.signature(opset10.conv)) == ("(args, dilations=[], group=1, kernel_shape=[], pads=[], "
                                                    "strides=[], debugContext='')")
    assert str(inspect.signature(opset10.maxpool)).startswith("(args, num_outputs, kernel_shape, ceil_mode=0")
    assert str(inspect.signature(opset10.reducesum)) == "(args, axes=None, keepdims=1, debugContext='')"
    assert "add(args, axis=None, broadcast=0" in "add" + str(inspect.signature(popart.AiOnnxOpset6.add))


def test_wrong_arguments_raise_pybinds_type_error():
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]))
    with pytest.raises(TypeError, match=r"^add\(\): incompatible function arguments. The following argument "
                                        "types are supported:"):
        builder.aiOnnx.add(a, a)


def test_builder_loads_a_model_and_continues_it(tmp_path):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [3]))
    y = builder.aiOnnx.relu([x])
    builder.addOutputTensor(y)
    path = tmp_path / "model.onnx"
    builder.saveModelProto(str(path))
    for source in (builder.getModelProto(), str(path)):
        loaded = popart.Builder(source)
        assert loaded.getInputTensorIds() == [x]
        assert loaded.getTensorShape(y) == [3]
        z = loaded.aiOnnx.relu([y])
        assert z == "Relu:0/1"


def test_virtual_graph_and_pipeline_stage_annotations():
    builder = popart.Builder()
    i1, i2, i3, i4 = (builder.addInputTensor(popart.TensorInfo("FLOAT", [1])) for _ in range(4))
    with builder.virtualGraph(0), builder.pipelineStage(0):
        o1 = builder.aiOnnx.add([i1, i2])
        o2 = builder.aiOnnx.add([i3, i4])
    with builder.virtualGraph(1):
        o = builder.aiOnnx.add([o1, o2])
    builder.virtualGraph(o2, 1)
    assert [builder.getVirtualGraph(t) for t in (o1, o2, o)] == [0, 1, 1]
    assert builder.getPipelineStage(o1) == 0 and not builder.hasPipelineStage(o)
    node = onnx.load_from_string(builder.getModelProto()).graph.node[0]
    assert {a.name for a in node.attribute} == {"__ipu_number", "__pipeline_stage", "__debug_info_id"}


def test_annotations_name_the_mixed_up_argument():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]))
    y = builder.aiOnnx.relu([x])
    with pytest.raises(popart.popart_exception, match=r"pipelineStage\(nodeOutputNames, value\) takes a tensor id"):
        builder.pipelineStage(1, 2)
    with pytest.raises(popart.popart_exception, match=r"virtualGraph\(value\) opens a scope and takes an int"):
        builder.virtualGraph({y})
    assert not builder.hasPipelineStage(y) and not builder.hasVirtualGraph(y)
    builder.executionPhase({y}, 2)
    assert builder.getExecutionPhase(y) == 2


def test_node_attribute_api():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.relu([x])
    builder.addNodeAttribute("myInt", 3, {y})
    builder.addNodeAttribute("myFloats", [1.0, 2.0], {y})
    builder.addNodeAttribute("myString", "hi", {y})
    assert builder.getInt64NodeAttribute("myInt", {y}) == 3
    assert builder.getFloatVectorNodeAttribute("myFloats", {y}) == [1.0, 2.0]
    assert builder.getStringNodeAttribute("myString", {y}) == "hi"
    assert builder.nodeHasAttribute("myInt", {y})
    assert set(builder.getAllNodeAttributeNames({y})) == {"myInt", "myFloats", "myString", "__debug_info_id"}
    builder.removeNodeAttribute("myInt", {y})
    assert not builder.nodeHasAttribute("myInt", {y})
    with pytest.raises(popart.popart_exception, match="^Node already has attribute myString.$"):
        builder.addNodeAttribute("myString", "again", {y})


@pytest.mark.parametrize("getter, value, message", [
    ("getInt64NodeAttribute", 1.5, "an integer"), ("getInt64VectorNodeAttribute", 3, "an integer vector"),
    ("getFloatNodeAttribute", [1.0], "a float"), ("getFloatVectorNodeAttribute", 2.0, "a float vector"),
    ("getStringNodeAttribute", 4, "a string"), ("getStringVectorNodeAttribute", "one", "a string vector"),
    ("getBoolNodeAttribute", "yes", "a int"),
])
def test_typed_attribute_getters_refuse_other_types(getter, value, message):
    builder = popart.Builder()
    y = builder.aiOnnx.relu([builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))])
    builder.addNodeAttribute("test", value, {y})
    with pytest.raises(popart.popart_exception, match=f"^Attribute test is not {message}.$"):
        getattr(builder, getter)("test", {y})
    with pytest.raises(popart.popart_exception, match="^Node does not have an attribute other.$"):
        getattr(builder, getter)("other", {y})
    with pytest.raises(popart.popart_exception, match="^Cannot remove attribute other as it does not exist.$"):
        builder.removeNodeAttribute("other", {y})


def test_memory_partials_recompute_and_outline_attributes():
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 2]))
    with builder.outlineAttributes({"layer": "1"}), builder.schedulePriority(2.0):
        m = builder.aiOnnx.matmul([a, a])
    builder.setAvailableMemoryProportion(m, 0.3)
    builder.setPartialsType(m, "HALF")
    builder.recomputeOutputInBackwardPass(m)
    node = onnx.load_from_string(builder.getModelProto()).graph.node[0]
    names = {a.name for a in node.attribute}
    assert {"__available_memory", "__partials_type", "__recompute_output_in_backward_pass", "__outline",
            "__schedule_priority"} <= names
    assert builder.getPartialsType(m) == "HALF"
    with pytest.raises(popart.popart_exception):
        builder.setAvailableMemoryProportion(m, 1.5)


def test_graphcore_ops_get_shapes_from_the_workbench_rules():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [4, 6]))
    s = builder.aiGraphcore.subsample([x], [2, 3])
    loss = builder.aiGraphcore.l1loss([x], 0.1, reduction=popart.ReductionType.Sum)
    each = builder.aiGraphcore.l1loss([x], 0.1, popart.ReductionType.NoReduction)
    assert builder.getTensorShape(s) == [2, 2]
    assert builder.getTensorShape(loss) == [] and builder.getTensorShape(each) == [4, 6]
    after = builder.aiOnnx.relu([s])
    builder.addOutputTensor(after)
    model = onnx.load_from_string(builder.getModelProto())
    onnx.checker.check_model(model, full_check=True)  # the ai.graphcore schemas are registered with ONNX
    assert {(o.domain, o.version) for o in model.opset_import} == {("", 10), ("ai.graphcore", 1)}
    del model.graph.value_info[:]  # ONNX's whole-model inference runs the ai.graphcore rules too
    assert popart.Builder(model.SerializeToString()).getTensorShape(after) == [2, 2]


def test_reshape_const_and_tensor_info():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo(np.float32, [2, 6]))
    y = builder.reshape_const(builder.aiOnnx, [x], [3, 4])
    assert builder.getTensorShape(y) == [3, 4]
    info = popart.TensorInfo(np.zeros((2, 3), np.int32))
    assert (info.dataType(), info.shape(), info.nelms(), info.nbytes(), info.data_type_lcase()) == \
        ("INT32", [2, 3], 6, 24, "int32")


@pytest.mark.parametrize("attributes, message", [
    ({"kernel_shape": [3, 3]},
     r"^kernel_shape, \[3 3\], does not match inferred shape from weight input '.*', \[1 1\]$"),
    ({"strides": [1]}, "^Length of strides vector 1 != number of spatial dimensions 2$"),
    ({"pads": [0, 0]}, "^Padding vector \\(length 2\\) does not have 2 values for each spatial dimension 2$"),
    ({"dilations": [1, 1, 1]}, "^Length of dilations vector 3 != number of spatial dimensions 2$"),
])
def test_conv_window_parameters_are_checked_when_the_node_is_added(attributes, message):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 4, 8, 8]))
    w = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 4, 1, 1]))
    with pytest.raises(popart.popart_exception, match=message):
        builder.aiOnnx.conv([x, w], **attributes)
    assert builder.getTensorShape(builder.aiOnnx.conv([x, w])) == [1, 2, 8, 8]


def test_a_window_larger_than_its_input_and_wrong_input_counts_are_refused():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 4, 8, 8]))
    w = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 4, 11, 11]))
    with pytest.raises(popart.popart_exception,
                       match=r"^Window parameter values combine to give invalid spatial output shape: \[-2 -2\]$"):
        builder.aiOnnx.conv([x, w])
    with pytest.raises(popart.popart_exception, match=r"^Abs has invalid number of inputs 0\. Must be between 1\.\.1$"):
        builder.aiOnnx.abs([])
    with pytest.raises(popart.popart_exception, match=r"^Padding vector \(length 4\) doesn't contain 2 entries per "
                                                      r"input dimension 4$"):
        builder.aiOnnx.pad([x], [1, 1, 1, 1], "constant", 0.0)


def test_too_many_outputs_and_untyped_inputs_of_the_main_graph_are_refused():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 1, 1]))
    with pytest.raises(popart.popart_exception,
                       match=r"^RNN has an invalid number of outputs 3\. Must be between 0\.\.2$"):
        builder.aiOnnx.rnn([x, x, x], 3)
    with pytest.raises(popart.popart_exception, match="^Can not add untyped tensors to the top-level graph."):
        builder.addUntypedInputTensor()
    assert builder.createSubgraphBuilder().addUntypedInputTensor()


def test_attribute_arguments_of_the_wrong_kind_raise_pybinds_type_error():
    builder = popart.Builder(opsets={"ai.onnx": 6, "ai.graphcore": 1})
    a = builder.addInitializedInputTensor(np.array([1, 6], np.int64))
    assert builder.getTensorShape(builder.aiOnnx.add([a, a], 1, 0, "with_axis")) == [2]
    with pytest.raises(TypeError, match=r"(?s)^add\(\): incompatible function arguments.*Invoked with: \[.*\], 'add_v9'"):
        builder.aiOnnx.add([a, a], "add_v9")  # opset 9's call shape: the name lands on the int `axis`
    assert len(onnx.load_from_string(builder.getModelProto()).graph.node) == 1
    assert builder.getTensorDtypeString(builder.aiOnnx.cast([a], "INT32")) == "int32"  # Cast's `to` takes a name


def test_list_attributes_take_any_sequence_but_text_as_pybind_does():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3, 4]))
    assert builder.getTensorShape(builder.aiOnnx.reducesum([x], axes=range(0, 2), keepdims=False)) == [4]
    with pytest.raises(TypeError, match=r"^reducesum\(\): incompatible function arguments"):
        builder.aiOnnx.reducesum([x], axes="01")


def test_subsample_shapes_round_down_in_the_builder_and_keep_the_last_window_in_a_session():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [10, 9, 8, 7]))
    y = builder.aiGraphcore.subsample([x], strides=[2, 3, 4, 5])
    z = builder.aiOnnx.relu([y])
    builder.addOutputTensor(z)
    assert builder.getTensorShape(y) == [5, 3, 2, 1]  # ONNX-level inference: 7 // 5
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, {y: popart.AnchorReturnType("All"),
                                                                                   z: popart.AnchorReturnType("All")}),
                                      popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    data = np.random.default_rng(0).standard_normal((10, 9, 8, 7)).astype(np.float32)
    session.run(popart.PyStepIO({x: data}, anchors))
    np.testing.assert_array_equal(anchors[y], data[::2, ::3, ::4, ::5])  # (5, 3, 2, 2)
    np.testing.assert_array_equal(anchors[z], np.maximum(data[::2, ::3, ::4, ::5], 0))
    assert session.getInfo(y).shape() == [5, 3, 2, 2]


def test_value_ids_include_graph_outputs_and_unknown_initializers_are_named():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
    shape = builder.addInitializedInputTensor(np.array([1, 6], np.int64))
    y = builder.aiOnnx.reshape([x, shape])
    builder.addOutputTensor(y)
    assert builder.getValueTensorIds() == [y]
    transformer = popart.GraphTransformer(builder.getModelProto())
    with pytest.raises(popart.popart_exception, match="^TensorId unknown not in the model initalizers$"):
        transformer.convertInitializersToConstants([shape, "unknown"])
    assert [i.name for i in onnx.load_from_string(transformer.getModelProto()).graph.initializer] == [shape]
    transformer.convertInitializersToConstants([shape])
    model = onnx.load_from_string(transformer.getModelProto())
    assert not model.graph.initializer and model.graph.node[0].op_type == "Constant"


def test_numpy_scalar_arrays_are_taken_for_number_arguments_as_pybind_takes_them():
    builder = popart.Builder()
    y = builder.aiOnnx.randomuniform(shape=[3, 1], low=np.array(-1.0, np.float32), high=np.array(1.0, np.float32))
    assert builder.getTensorShape(y) == [3, 1]


def test_a_random_tensor_of_a_type_poplar_does_not_draw_is_refused_when_the_session_is_made():
    builder = popart.Builder()
    y = builder.aiOnnx.randomuniform(shape=[3, 1], dtype=onnx.TensorProto.DOUBLE)
    with pytest.raises(popart.popart_exception, match="The data type DOUBLE is not supported in Poplar"):
        popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                popart.DeviceManager().createCpuDevice())
