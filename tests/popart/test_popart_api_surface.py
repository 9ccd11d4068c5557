"""PopART's API as its scripts and tests use it: grouped weights before the replication factor is known,
patterns, option records, DataType, debug info, device and opset names, and host data PopART converts."""
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
