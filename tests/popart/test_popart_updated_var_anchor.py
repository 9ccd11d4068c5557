"""``UpdatedVar___w`` (popart.reservedUpdatedVarPrefix() + w) anchors a weight as its step's update left
it; a name that is no trained weight is not a tensor of the program."""
import numpy as np
import pytest

import popart


def model():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    w = builder.addInitializedInputTensor(np.array([1.0, -2.0], np.float32), "w")
    loss = builder.aiGraphcore.l1loss([builder.aiOnnx.mul([x, w])], 1.0, popart.ReductionType.Sum)
    return builder.getModelProto(), x, w, loss


@pytest.mark.parametrize("art", ["ALL", "FINAL"])
def test_the_updated_weight_is_anchored_after_each_step(art):
    proto, x, w, loss = model()
    updated = popart.reservedUpdatedVarPrefix() + w
    session = popart.TrainingSession(proto, popart.DataFlow(2, {updated: popart.AnchorReturnType(art)}), loss,
                                     popart.ConstSGD(0.5), popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    data = np.array([[1.0, 3.0], [2.0, 1.0]], np.float32)  # two batches of one step
    session.run(popart.PyStepIO({x: data}, anchors))
    # d|x*w|/dw = x * sign(x*w); each batch's update moves w by -0.5 times that
    first = np.array([1.0, -2.0]) - 0.5 * data[0] * np.sign(data[0] * [1.0, -2.0])
    second = first - 0.5 * data[1] * np.sign(data[1] * first)
    expected = np.stack([first, second]) if art == "ALL" else second
    np.testing.assert_allclose(anchors[updated], expected)


def test_an_updated_var_of_no_trained_weight_is_not_a_tensor():
    proto, x, w, loss = model()
    with pytest.raises(popart.popart_exception, match="UpdatedVar___nothing' not in Ir Tensors"):
        popart.TrainingSession(proto, popart.DataFlow(1, [popart.reservedUpdatedVarPrefix() + "nothing"]), loss,
                               popart.ConstSGD(0.5), popart.DeviceManager().createIpuModelDevice({}))
