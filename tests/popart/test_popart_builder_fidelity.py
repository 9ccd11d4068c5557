"""The Builder as PopART's behaves: setEnableConvDithering's checks, printtensor's argument order and
print options, If on a non-bool condition, and subgraphs whose inputs are untyped."""
import numpy as np
import pytest

import popart


def run(builder, outputs, inputs=None):
    session = popart.InferenceSession(
        fnModel=builder.getModelProto(),
        dataFlow=popart.DataFlow(1, {o: popart.AnchorReturnType("All") for o in outputs}),
        deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO(inputs or {}, anchors))
    return anchors


def conv_and_relu():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 2, 4, 4]))
    w = builder.addInitializedInputTensor(np.ones([3, 2, 3, 3], np.float32))
    conv = builder.aiOnnx.conv([x, w], pads=[1, 1, 1, 1])
    return builder, conv, builder.aiOnnx.relu([conv])


def test_conv_dithering_is_written_on_convolutions():
    builder, conv, _ = conv_and_relu()
    builder.setEnableConvDithering(conv, True)
    assert builder.getInt64NodeAttribute("__enable_conv_dithering", {conv}) == 1


def test_conv_dithering_is_refused_for_other_ops_and_non_bool_values():
    builder, conv, relu = conv_and_relu()
    with pytest.raises(popart.popart_exception) as error:
        builder.setEnableConvDithering(relu, True)
    assert error.value.args[0] == ("Builder::setEnableConvDithering should only be called on convolutions but "
                                   "was given: Relu")
    with pytest.raises(popart.popart_exception) as error:
        builder.setEnableConvDithering(conv, 44)
    assert error.value.args[0] == "enableConvDithering must be a bool value"


def test_printtensor_takes_popart_argument_order_and_print_options(capfd):
    builder = popart.Builder()
    x = builder.addInitializedInputTensor(np.arange(2000, dtype=np.float32))
    # args, print_gradient, debugContext, title, summariseThreshold (0: never), edgeItems, maxLineWidth (0: no wrap)
    out = builder.aiGraphcore.printtensor([x], 1, "print", "t", 0, 3, 0)
    assert builder.getStringNodeAttribute("title", {out}) == "t"
    run(builder, [out])
    printed = capfd.readouterr().err
    assert printed.startswith("t: [")
    values = np.array(printed.partition("[")[2].partition("]")[0].split(), np.float32)
    np.testing.assert_array_equal(values, np.arange(2000))


@pytest.mark.parametrize("cond, expected", [(1.0, 9.0), (0.0, 3.0)])
def test_if_takes_a_non_zero_float_condition_as_true(cond, expected):
    builder = popart.Builder()
    a = builder.addInitializedInputTensor(np.array([3.0], np.float32))
    b = builder.addInitializedInputTensor(np.array([6.0], np.float32))
    c = builder.addInitializedInputTensor(np.array([cond], np.float32))
    then_builder = builder.createSubgraphBuilder()
    then_builder.addInputTensorFromParentGraph(a)
    then_builder.addInputTensorFromParentGraph(b)
    then_builder.addOutputTensor(then_builder.aiOnnx.add([a, b]))
    else_builder = builder.createSubgraphBuilder()
    else_builder.addInputTensorFromParentGraph(a)
    else_builder.addInputTensorFromParentGraph(b)
    else_builder.addOutputTensor(else_builder.aiOnnx.sub([b, a]))
    out = builder.aiOnnx.logical_if([c], 1, else_builder, then_builder)[0]
    np.testing.assert_array_equal(run(builder, [out])[out], [expected])


def test_a_subgraph_with_an_untyped_input_takes_its_callers_type():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [5]))
    body = builder.createSubgraphBuilder()
    inner = body.addUntypedInputTensor()
    dropped = body.aiOnnx.dropout([inner], 1, 0.5)[0]  # ONNX cannot type it here: left open
    body.addOutputTensor(body.aiOnnx.mul([dropped, dropped]))
    called = builder.aiGraphcore.call([x], 1, body)[0]
    loss = builder.aiGraphcore.identityloss([called])
    data = np.arange(5, dtype=np.float32)
    anchors = run(builder, [called, loss], {x: data})
    np.testing.assert_array_equal(anchors[called], data * data)  # inference: dropout passes its input on
    np.testing.assert_allclose(anchors[loss], np.mean(data * data))


def test_builder_getattr_is_annotated_with_every_onnx_opset_class():
    from inspect import signature
    annotated = signature(popart.Builder.__getattr__).return_annotation.__args__
    assert set(annotated) == {getattr(popart, f"AiOnnxOpset{v}") for v in range(6, 12)}


def test_a_sparse_constant_is_refused_in_popart_words():
    import onnx
    from onnx import helper
    sparse = helper.make_sparse_tensor(helper.make_tensor("v", onnx.TensorProto.FLOAT, [2], [1.0, 2.0]),
                                       helper.make_tensor("i", onnx.TensorProto.INT64, [2], [0, 3]), [5])
    node = helper.make_node("Constant", [], ["c"], sparse_value=sparse)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    with pytest.raises(popart.popart_exception) as error:
        popart.InferenceSession(model.SerializeToString(), popart.DataFlow(1, ["c"]),
                                popart.DeviceManager().createCpuDevice())
    assert error.value.args[0] == "The Constant op attribute 'sparse_value' is not supported."


def test_printtensor_prints_gradients_under_popart_titles(capfd):
    builder = popart.Builder()
    w = builder.addInitializedInputTensor(np.array([1.0, 2.0], np.float32), "w")
    titled = builder.aiGraphcore.printtensor([w], title="foo")  # print_gradient defaults to 1
    untitled = builder.aiGraphcore.printtensor([titled])
    quiet = builder.aiGraphcore.printtensor([untitled], print_gradient=0, title="quiet")
    loss = builder.aiGraphcore.l1loss([quiet], 0.5, reduction=popart.ReductionType.Sum)
    session = popart.TrainingSession(fnModel=builder.getModelProto(), loss=loss, optimizer=popart.ConstSGD(0.1),
                                     dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("All")}),
                                     deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    session.weightsFromHost()
    capfd.readouterr()
    session.run(popart.PyStepIO({}, session.initAnchorArrays()))
    titles = [line.split(": ")[0] for line in capfd.readouterr().err.splitlines()]
    assert titles == ["foo", titled, "quiet", popart.reservedGradientPrefix() + titled, "foo_gradient"]
