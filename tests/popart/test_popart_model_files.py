"""Bad model files and bytes: each is a popart_exception naming the source and the problem, the same
through Builder and InferenceSession, by path and by bytes; nothing hangs or reads without end."""
import os
import stat

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import popart


def relu_model() -> tuple[bytes, str]:
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.relu([x])
    builder.addOutputTensor(y)
    return builder.getModelProto(), y


def session_of(model):
    _, anchor = relu_model()
    return popart.InferenceSession(model, popart.DataFlow(1, {anchor: popart.AnchorReturnType("ALL")}),
                                   popart.DeviceManager().createCpuDevice())


LOADERS = {"Builder": popart.Builder, "InferenceSession": session_of}
BAD_CONTENTS = {
    "empty": (b"", "it is empty (0 bytes)"),
    "garbage": (b"\x01\x02garbage\xff\xff" * 10, "it is not a serialized ONNX ModelProto"),
    "truncated": (relu_model()[0][:40], "it is not a serialized ONNX ModelProto"),
    # Bytes that happen to parse (field 1, ir_version = 8) but hold no graph.
    "graphless": (b"\x08\x08", "it parses, but holds no graph"),
}


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("content", BAD_CONTENTS)
def test_bad_model_is_the_same_error_by_path_and_by_bytes(tmp_path, loader, content):
    data, problem = BAD_CONTENTS[content]
    path = tmp_path / f"{content}.onnx"
    path.write_bytes(data)
    with pytest.raises(popart.popart_exception) as by_path:
        LOADERS[loader](str(path))
    with pytest.raises(popart.popart_exception) as by_bytes:
        LOADERS[loader](data)
    assert str(by_path.value) == f"Failed to load a ModelProto from file {path}: " + \
        str(by_bytes.value).split(f"from the string of {len(data):,} bytes: ", 1)[1]
    assert problem in str(by_bytes.value)
    assert str(by_bytes.value).endswith("Check that it is either a valid path to an existing onnx model file, or is "
                                        "a valid onnx ModelProto string.")  # PopART's advice


@pytest.mark.parametrize("loader", LOADERS)
def test_devices_and_directories_are_refused_before_reading(tmp_path, loader):
    for path, kind in (("/dev/zero", "a character device"), ("/dev/null", "a character device"),
                       (str(tmp_path), "a directory")):
        with pytest.raises(popart.popart_exception, match=f"from file {path}: it is {kind}, not a regular file"):
            LOADERS[loader](path)


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    with pytest.raises(popart.popart_exception, match="it is a FIFO, not a regular file"):
        popart.Builder(str(fifo))  # opening it for reading would wait for a writer forever


def test_file_over_protobufs_limit_is_refused_before_reading(tmp_path):
    huge = tmp_path / "huge.onnx"
    with open(huge, "wb") as file:
        file.truncate(2**31)  # sparse: no disk used, and never read
    with pytest.raises(popart.popart_exception, match=r"2,147,483,648 bytes, over protobuf's limit of 2,147,483,647"):
        popart.Builder(str(huge))


def test_missing_file_is_a_popart_exception_naming_it(tmp_path):
    with pytest.raises(popart.popart_exception, match="^Failed to load a ModelProto from the string '.*missing.onnx'"):
        popart.Builder(str(tmp_path / "missing.onnx"))


def test_good_model_loads_the_same_by_path_and_by_bytes(tmp_path):
    proto, output = relu_model()
    path = tmp_path / "relu.onnx"
    path.write_bytes(proto)
    assert popart.Builder(str(path)).getModelProto() == popart.Builder(proto).getModelProto()
    session = session_of(str(path))
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    data = np.array([-1.0, 2.0], np.float32)
    session.run(popart.PyStepIO({"input": data}, anchors))
    np.testing.assert_array_equal(anchors[output], np.maximum(data, 0))


@pytest.mark.parametrize("shape", [[2.5], [2.0], ["2"], [None]])
def test_tensor_info_refuses_dimensions_that_are_not_whole_numbers(shape):
    with pytest.raises(popart.popart_exception, match=rf"TensorInfo shape .* has the dimension {shape[0]!r}"):
        popart.TensorInfo("FLOAT", shape)


def test_tensor_info_takes_numpy_integers():
    assert popart.TensorInfo("FLOAT", [np.int64(2), np.int32(3)]).shape() == [2, 3]


def test_unknown_domain_is_named_at_session_creation():
    node = helper.make_node("Foo", ["x"], ["y"], domain="com.example")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11), helper.make_opsetid("com.example", 1)])
    popart.Builder(model.SerializeToString())  # a custom domain may be built on, as PopART's custom ops are
    with pytest.raises(popart.popart_exception, match=r"No class for com\.example\.Foo:1 \(node 'y'\): the domain "
                                                      r"'com\.example' is unknown"):
        popart.InferenceSession(model.SerializeToString(), popart.DataFlow(1, {"y": popart.AnchorReturnType("ALL")}),
                                popart.DeviceManager().createCpuDevice())


def test_model_with_external_data_loads_its_weights(tmp_path, monkeypatch):
    """External data is read from the working directory, as PopART reads it."""
    monkeypatch.chdir(tmp_path)
    weight = np.arange(2048, dtype=np.float32)
    builder = popart.Builder()
    w = builder.addInitializedInputTensor(weight)
    y = builder.aiOnnx.relu([w])
    builder.addOutputTensor(y)
    model = onnx.load_from_string(builder.getModelProto())
    # ONNX moves only raw_data to an external file; the builder writes float_data, as PopART's does.
    model.graph.initializer[0].CopyFrom(onnx.numpy_helper.from_array(weight, model.graph.initializer[0].name))
    onnx.save_model(model, str(tmp_path / "m.onnx"), save_as_external_data=True, location="m.data",
                    size_threshold=0)
    assert (tmp_path / "m.data").exists()
    session = popart.InferenceSession(str(tmp_path / "m.onnx"), popart.DataFlow(1, {y: popart.AnchorReturnType("ALL")}),
                                      popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({}, anchors))
    np.testing.assert_array_equal(anchors[y], weight)


def test_external_data_not_found_from_the_working_directory_is_refused_with_onnx_s_words(tmp_path, monkeypatch):
    """PopART looks for a model's external data from the working directory, not beside the model."""
    monkeypatch.chdir(tmp_path)
    builder = popart.Builder()
    w = builder.addInitializedInputTensor(np.array([7, 4], np.float16))
    builder.aiOnnx.add([w, w])
    builder.saveInitializersExternally([w], "tensors.onnx")
    builder.saveModelProto("model.onnx")
    assert popart.Builder("model.onnx").getTensorShape(w) == [2]
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(popart.popart_exception, match=rf"^Data of TensorProto \( tensor name: {w}\) should be stored "
                                                      r"in tensors.onnx, but it doesn't exist or is not accessible.$"):
        popart.Builder("../model.onnx")


def test_reset_host_weights_and_graph_transformer_refuse_bad_models_alike(tmp_path):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.ones(2, np.float32))
    loss = builder.aiGraphcore.l1loss([builder.aiOnnx.mul([x, w])], 1.0)
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [loss]), loss, popart.ConstSGD(0.1),
                                     popart.DeviceManager().createIpuModelDevice({}))
    for load in (session.resetHostWeights, popart.GraphTransformer):
        with pytest.raises(popart.popart_exception, match="from file /dev/zero: it is a character device"):
            load("/dev/zero")
        with pytest.raises(popart.popart_exception, match="from the string of 0 bytes: it is empty"):
            load(b"")


@pytest.mark.parametrize("dim, shown", [("batch", "batch"), (-1, "-1")])
def test_inputs_of_unknown_size_must_be_given_in_input_shape_info(dim, shown):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]).SerializeToString()
    flow, device = popart.DataFlow(1, {"y": popart.AnchorReturnType("ALL")}), popart.DeviceManager().createCpuDevice()
    with pytest.raises(popart.popart_exception) as error:
        popart.InferenceSession(model, flow, device)
    assert str(error.value) == (f"Input tensor 'x' must be specified in InputShapeInfo, as it has shape [{shown}, 3], "
                                f"which uses an unknown value '{shown}'.")
    shapes = popart.InputShapeInfo()
    shapes.add("x", popart.TensorInfo("FLOAT", [2, 3]))
    session = popart.InferenceSession(model, flow, device, inputShapeInfo=shapes)
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    data = np.array([[-1.0, 0.5, 2.0], [3.0, -4.0, 0.0]], np.float32)
    session.run(popart.PyStepIO({"x": data}, anchors))
    np.testing.assert_array_equal(anchors["y"], np.maximum(data, 0))
