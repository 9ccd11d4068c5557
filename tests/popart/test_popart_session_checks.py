"""PopART's checks at session creation and of host weights, with its wording."""
import numpy as np
import onnx
import pytest

import popart


def model_with_open_batch(dim):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 2]), "input_0")
    y = builder.aiOnnx.relu([x])
    model = onnx.load_from_string(builder.getModelProto())
    batch = model.graph.input[0].type.tensor_type.shape.dim[0]
    if isinstance(dim, str):
        batch.dim_param = dim
    else:
        batch.dim_value = dim
    return model.SerializeToString(), y


@pytest.mark.parametrize("dim", ["batch", -1])
def test_an_input_with_an_open_dimension_must_be_given_its_shape(dim):
    proto, y = model_with_open_batch(dim)
    with pytest.raises(popart.popart_exception, match=rf"^Input tensor 'input_0' must be specified in InputShapeInfo, "
                                                      rf"as it has shape \[{dim}, 2\], which uses an unknown value "
                                                      rf"'{dim}'\.$"):
        popart.InferenceSession(proto, popart.DataFlow(1, [y]), popart.DeviceManager().createCpuDevice())
    shapes = popart.InputShapeInfo()
    shapes.add("input_0", popart.TensorInfo("FLOAT", [3, 2]))
    session = popart.InferenceSession(proto, popart.DataFlow(1, [y]), popart.DeviceManager().createCpuDevice(),
                                      inputShapeInfo=shapes)
    assert session.getInfo(y).shape() == [3, 2]


def test_reset_host_weights_names_a_weight_the_session_lacks(tmp_path):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.ones(2, np.float32), "w")
    y = builder.aiOnnx.mul([x, w])
    options = popart.SessionOptions()
    options.constantWeights = False
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createCpuDevice(), userOptions=options)
    other = popart.Builder()
    other.addInitializedInputTensor(np.ones(2, np.float32), "Accl___w")
    path = str(tmp_path / "other.onnx")
    onnx.save(onnx.load_from_string(other.getModelProto()), path)
    with pytest.raises(popart.popart_exception, match=r"^resetWeights, no tensor 'Accl___w' in tensors$"):
        session.resetHostWeights(path)
    session.resetHostWeights(path, ignoreWeightsInModelWithoutCorrespondingHostWeight=True)
