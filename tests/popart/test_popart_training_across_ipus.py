"""Training a model whose loss is on another IPU than the ops that first read its inputs: the loss's
gradient starts on the loss's IPU, activations and gradients are copied to the IPUs that read them,
and the numbers are those of the same model on one IPU."""
import numpy as np
import pytest

import popart


def model(w_start: float):
    """h = x * w on IPU 1; the loss 0.5 * |x + h| (summed) on IPU 0."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    with builder.virtualGraph(1):
        w = builder.addInitializedInputTensor(np.full(2, w_start, np.float32), "w")
        h = builder.aiOnnx.mul([x, w])
    with builder.virtualGraph(0):
        loss = builder.aiGraphcore.l1loss([builder.aiOnnx.add([x, h])], 0.5, popart.ReductionType.Sum)
    return builder.getModelProto(), x, w, loss


@pytest.mark.parametrize("optimizer", [popart.ConstSGD(0.1),
                                       popart.SGD({"defaultLearningRate": (0.1, True), "lossScaling": (4.0, False)})])
def test_the_loss_gradient_starts_on_the_loss_ipu(optimizer):
    proto, x, w, loss = model(2.0)
    options = popart.SessionOptions()
    options.virtualGraphMode = popart.VirtualGraphMode.Manual
    flow = popart.DataFlow(1, {loss: popart.AnchorReturnType("All"),
                               popart.reservedGradientPrefix() + x: popart.AnchorReturnType("All")})
    session = popart.TrainingSession(proto, flow, loss, optimizer,
                                     popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}), userOptions=options)
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    data = np.array([1.0, -3.0], np.float32)
    session.run(popart.PyStepIO({x: data}, anchors))
    session.weightsToHost()
    weights = {w: np.zeros(2, np.float32)}
    session.readWeights(popart.PyWeightsIO(weights))
    total = data + data * 2.0
    np.testing.assert_allclose(anchors[loss], 0.5 * np.abs(total).sum(), rtol=1e-6)
    sign = np.sign(total)
    scale = optimizer.getLossScalingVal()  # the input's gradient is that of the scaled loss
    np.testing.assert_allclose(anchors[popart.reservedGradientPrefix() + x], scale * 0.5 * sign * (1 + 2.0), rtol=1e-6)
    np.testing.assert_allclose(weights[w], 2.0 - 0.1 * 0.5 * sign * data, rtol=1e-6)
