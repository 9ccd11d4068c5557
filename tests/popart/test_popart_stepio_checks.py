"""A run's host arrays are all checked before anything runs, with PopART's errors; a refused run
changes nothing. Anchor arrays are laid out as PopART lays them out under gradient accumulation
and replication."""
import numpy as np
import pytest

import popart
from popart_training_oracle import data, loss_and_grads, mlp, sgd_step, trained_weights


def training_with_anchor(art: str, bps=2, accumulation=1, replicas=1):
    model = mlp()
    options = popart.SessionOptions()
    if accumulation > 1:
        options.enableGradientAccumulation = True
        options.accumulationFactor = accumulation
    if replicas > 1:
        options.enableReplicatedGraphs = True
        options.replicatedGraphCount = replicas
    builder = popart.Builder(model.proto)
    loss = builder.aiGraphcore.nllloss([model.probs, model.label], popart.ReductionType.Sum)
    flow = popart.DataFlow(bps, {loss: popart.AnchorReturnType(art), model.probs: popart.AnchorReturnType(art)})
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": replicas})
    training = popart.TrainingSession(fnModel=builder.getModelProto(), dataFlow=flow, loss=loss,
                                      optimizer=popart.ConstSGD(0.1), deviceInfo=device, userOptions=options)
    training.prepareDevice()
    training.weightsFromHost()
    return training, model, loss


@pytest.mark.parametrize("art, shape", [("ALL", [3, 2, 2]), ("FINAL", [2]), ("SUM", [2])])
def test_anchor_arrays_are_laid_out_batches_accumulation_replicas(art, shape):
    training, model, loss = training_with_anchor(art, bps=3, accumulation=2, replicas=2)
    anchors = training.initAnchorArrays()
    assert list(anchors[loss].shape) == shape
    assert list(anchors[model.probs].shape) == shape + [model.batch, model.classes]


def test_every_n_keeps_every_nth_micro_batch():
    model = mlp()
    options = popart.SessionOptions()
    options.enableGradientAccumulation = True
    options.accumulationFactor = 2
    builder = popart.Builder(model.proto)
    loss = builder.aiGraphcore.nllloss([model.probs, model.label], popart.ReductionType.Sum)
    flow = popart.DataFlow(4, {loss: popart.AnchorReturnType("EVERYN", 2), model.probs: popart.AnchorReturnType("ALL")})
    training = popart.TrainingSession(fnModel=builder.getModelProto(), dataFlow=flow, loss=loss,
                                      optimizer=popart.ConstSGD(0.1), userOptions=options,
                                      deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 1}))
    training.prepareDevice()
    training.weightsFromHost()
    xs, labels = data(model, 8)
    anchors = training.initAnchorArrays()
    assert anchors[loss].shape == (2, 2)
    training.run(popart.PyStepIO({model.x: xs.reshape(4, 2, 4, 6), model.label: labels.reshape(4, 2, 4)}, anchors))
    probs = anchors[model.probs].reshape(8, model.batch, model.classes)
    rows = np.arange(model.batch)
    per_micro_batch = np.array([-np.log(probs[i][rows, labels[i]]).sum() for i in range(8)])
    np.testing.assert_allclose(anchors[loss], per_micro_batch[1::2].reshape(2, 2), rtol=1e-5)


def test_wrong_anchor_arrays_are_refused_before_the_weights_move():
    training, model, loss = training_with_anchor("ALL")
    xs, labels = data(model, 2)
    inputs = {model.x: xs, model.label: labels}
    before = trained_weights(training)

    anchors = training.initAnchorArrays()
    anchors[loss] = np.zeros(anchors[loss].shape, np.int32)
    with pytest.raises(popart.popart_exception, match=f"Type discrepancy for tensor {loss}. User provided : INT32 "
                                                      "and expected : FLOAT"):
        training.run(popart.PyStepIO(inputs, anchors))

    anchors = training.initAnchorArrays()
    anchors[loss].flags.writeable = False
    with pytest.raises(popart.popart_exception, match=f"anchor array of tensor '{loss}': the numpy array is read-only"):
        training.run(popart.PyStepIO(inputs, anchors))

    anchors = training.initAnchorArrays()
    anchors[loss] = np.zeros(3, np.float32)
    with pytest.raises(popart.popart_exception, match=f"Unexpected number of output elements for Tensor {loss}. "
                                                      "Expected 2, but received 3"):
        training.run(popart.PyStepIO(inputs, anchors))

    anchors = training.initAnchorArrays()
    del anchors[loss]
    with pytest.raises(popart.popart_exception, match=f"No tensor {loss} provided in PyStepIO's outputs"):
        training.run(popart.PyStepIO(inputs, anchors))

    with pytest.raises(popart.popart_exception, match="No tensor label provided in PyStepIO's inputs"):
        training.run(popart.PyStepIO({model.x: xs}, training.initAnchorArrays()))
    for name, value in trained_weights(training).items():
        np.testing.assert_array_equal(value, before[name])

    # The same session then trains exactly one step from where it was.
    training.run(popart.PyStepIO(inputs, training.initAnchorArrays()))
    w = {k: v.astype(np.float64) for k, v in model.weights.items()}
    for index in range(2):
        _, g = loss_and_grads(w, xs[index], labels[index], False)
        sgd_step(w, g, {}, lr=0.1)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, w[name], rtol=1e-5, atol=1e-6)


def test_inputs_that_are_no_model_inputs_are_named():
    training, model, loss = training_with_anchor("ALL")
    xs, labels = data(model, 2)
    anchors = training.initAnchorArrays()
    with pytest.raises(popart.popart_exception, match=f"The tensor '{model.probs}' has been provided as one of the "
                                                      "inputs to the stepIO, but it is not registered"):
        training.run(popart.PyStepIO({model.x: xs, model.label: labels, model.probs: anchors[model.probs]}, anchors))
    with pytest.raises(popart.popart_exception, match="there is no Tensor named foo in the Ir's main Graph"):
        training.run(popart.PyStepIO({model.x: xs, model.label: labels, "foo": xs}, anchors))


def test_int64_data_for_an_int32_input_is_converted():
    training, model, loss = training_with_anchor("ALL")
    xs, labels = data(model, 2)
    anchors = training.initAnchorArrays()
    training.run(popart.PyStepIO({model.x: xs, model.label: labels.astype(np.int64)}, anchors))
    rows = np.arange(model.batch)
    expected = [-np.log(anchors[model.probs][i][rows, labels[i]]).sum() for i in range(2)]
    np.testing.assert_allclose(anchors[loss], expected, rtol=1e-5)


def test_non_contiguous_arrays_are_refused_by_the_step_io():
    with pytest.raises(popart.popart_exception, match="input array for tensor 'x' as it is not c-contiguous"):
        popart.PyStepIO({"x": np.zeros((3, 4), np.float32).T}, {})
    with pytest.raises(popart.popart_exception, match="output array for tensor 'y' as it is not c-contiguous"):
        popart.PyStepIO({}, {"y": np.zeros((3, 4), np.float32)[:, ::2]})
    with pytest.raises(popart.popart_exception, match="PyWeightsIO is unable to use .* tensor 'w'"):
        popart.PyWeightsIO({"w": np.zeros((3, 4), np.float32).T})


def test_anchor_return_periods_are_checked_as_popart_checks_them():
    with pytest.raises(popart.popart_exception, match="^Must specify return period with option 'EVERYN'$"):
        popart.AnchorReturnType("EVERYN")
    with pytest.raises(popart.popart_exception, match="^Anchor return period must be greater than zero$"):
        popart.AnchorReturnType("EveryN", 0)
    with pytest.raises(popart.popart_exception, match="^A return period should not be supplied"):
        popart.AnchorReturnType("ALL", 2)
    with pytest.raises(popart.popart_exception, match="Return period must be <= to the number of batches per step"):
        popart.DataFlow(2, {"x": popart.AnchorReturnType("EVERYN", 4)})
    with pytest.raises(popart.popart_exception, match="Return period must be a factor of the number of batches"):
        popart.DataFlow(3, {"x": popart.AnchorReturnType("EVERYN", 2)})


def test_gradients_of_model_inputs_can_be_the_only_anchors():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
    weight = np.arange(6, dtype=np.float32).reshape(3, 2)
    w = builder.addInitializedInputTensor(weight, "w")
    loss = builder.aiGraphcore.l1loss([builder.aiOnnx.matmul([x, w])], 1.0, popart.ReductionType.Sum)
    gradient = popart.reservedGradientPrefix() + x
    flow = popart.DataFlow(2, {gradient: popart.AnchorReturnType("ALL")})
    training = popart.TrainingSession(builder.getModelProto(), flow, loss, popart.ConstSGD(0.1),
                                      popart.DeviceManager().createCpuDevice())
    training.prepareDevice()
    training.weightsFromHost()
    anchors = training.initAnchorArrays()
    xs = np.array([[[1, -1, 2], [0.5, 1, -3]], [[2, 0.5, 1], [-1, -2, 1]]], np.float32)
    training.run(popart.PyStepIO({x: xs}, anchors))
    # d|x @ w|/dx = sign(x @ w) @ w.T, with the weight of each step's start (SGD: w -= 0.1 * x.T @ sign).
    second = weight - 0.1 * xs[0].T @ np.sign(xs[0] @ weight)
    for step, w_step in enumerate((weight, second)):
        np.testing.assert_allclose(anchors[gradient][step], np.sign(xs[step] @ w_step) @ w_step.T, rtol=1e-6)


def test_a_grouped_weight_anchored_all_gives_each_replicas_value():
    builder = popart.Builder()
    builder.embedReplicationFactor(4)
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    settings = popart.VariableSettings(popart.CommGroup(popart.CommGroupType.Consecutive, 2),
                                       popart.VariableRetrievalMode.OnePerGroup)
    w = builder.addInitializedInputTensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), settings, "w")
    y = builder.aiOnnx.mul([x, w])
    options = popart.SessionOptions()
    options.enableReplicatedGraphs = True
    options.replicatedGraphCount = 4
    flow = popart.DataFlow(2, {w: popart.AnchorReturnType("ALL"), y: popart.AnchorReturnType("FINAL")})
    session = popart.InferenceSession(builder.getModelProto(), flow,
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 4}), userOptions=options)
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    assert anchors[w].shape == (2, 4, 2) and anchors[y].shape == (4, 2)
    xs = np.arange(16, dtype=np.float32).reshape(2, 4, 2)
    session.run(popart.PyStepIO({x: xs}, anchors))
    per_replica = np.array([[1.0, 2.0], [1.0, 2.0], [3.0, 4.0], [3.0, 4.0]], np.float32)
    np.testing.assert_array_equal(anchors[w], np.stack([per_replica] * 2))
    np.testing.assert_array_equal(anchors[y], xs[1] * per_replica)
