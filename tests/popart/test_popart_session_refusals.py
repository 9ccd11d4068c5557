"""Sessions PopART refuses to make or calls it refuses: a program whose anchors no node produces
computes nothing; auto recomputation with nodes marked for recomputation; seeding the random ops of
a program before its device is prepared."""
import numpy as np
import pytest

import popart


def test_anchoring_only_an_input_prunes_every_node():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.sqrt([x])
    device = popart.DeviceManager().createCpuDevice()
    with pytest.raises(popart.popart_exception) as error:
        popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [x]), device)
    assert error.value.args[0] == "All operations in the main graph were pruned, nothing to compute"
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [x, y]), device)
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.array([4.0, 9.0], np.float32)}, anchors))
    np.testing.assert_allclose(anchors[y], [2.0, 3.0])


def relu_model(mark: bool):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]))
    r = builder.aiOnnx.relu([x])
    out = builder.aiGraphcore.identityloss([builder.aiOnnx.relu([r])])
    if mark:
        builder.recomputeOutputInBackwardPass(r)
    return builder.getModelProto(), out


@pytest.mark.parametrize("mark", [True, False])
def test_auto_and_manual_recomputation_do_not_mix(mark):
    proto, out = relu_model(mark)
    options = popart.SessionOptions()
    options.autoRecomputation = popart.RecomputationType.Standard

    def make():
        return popart.TrainingSession(proto, popart.DataFlow(1, [out]), out, popart.ConstSGD(0.1),
                                      popart.DeviceManager().createIpuModelDevice({}), userOptions=options)
    if not mark:
        assert make() is not None
        return
    with pytest.raises(popart.popart_exception) as error:
        make()
    assert error.value.args[0] == "A mixture of auto and manual recomputation is not supported"


def test_seeding_random_ops_needs_a_prepared_device():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [10]))
    [y] = builder.aiOnnx.dropout([x], num_outputs=1, ratio=0.3)
    loss = builder.aiGraphcore.identityloss([y])
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [y]), loss, popart.ConstSGD(0.1),
                                     popart.DeviceManager().createIpuModelDevice({}))
    with pytest.raises(popart.popart_exception, match=r"Devicex::prepare\(\) must be called before"):
        session.setRandomSeed(0)
    session.prepareDevice()
    session.setRandomSeed(7)
    assert session.getRandomSeed() == 7
    inference = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                        popart.DeviceManager().createIpuModelDevice({}))
    inference.setRandomSeed(3)  # inference passes dropout's input on: nothing random to seed


def test_an_inference_session_without_anchors_is_refused():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    builder.addOutputTensor(builder.aiOnnx.sqrt([x]))
    with pytest.raises(popart.popart_exception) as error:
        popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, {}),
                                popart.DeviceManager().createCpuDevice())
    assert error.value.args[0] == "User must specify an anchor tensor when doing inference."
