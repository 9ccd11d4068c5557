"""What a training script does between runs: change the optimiser (updateOptimizerFromHost and the
older updateOptimizer/optimizerFromHost), save the trained model and continue from it, and weights
held per replica group (VariableSettings)."""
import numpy as np
import pytest

import popart
from popart_training_oracle import data, loss_and_grads, mlp, session, sgd_step, trained_weights

TOL = dict(rtol=1e-6, atol=1e-6)


def run(training, model, xs, labels):
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, training.initAnchorArrays()))


def test_update_optimizer_from_host_changes_non_const_values_between_runs():
    model = mlp()
    training, _ = session(model, popart.SGD({"defaultLearningRate": (0.1, False), "defaultMomentum": (0.9, False),
                                             "defaultWeightDecay": (0.01, True)}), bps=2)
    xs, labels = data(model, 4)
    run(training, model, xs[:2], labels[:2])
    training.updateOptimizerFromHost(popart.SGD({"defaultLearningRate": (0.02, False),
                                                 "defaultMomentum": (0.5, False), "defaultWeightDecay": (0.01, True)}))
    run(training, model, xs[2:], labels[2:])
    w = {k: v.astype(np.float64) for k, v in model.weights.items()}
    state = {}
    for index in range(4):
        _, g = loss_and_grads(w, xs[index], labels[index], False)
        sgd_step(w, g, state, lr=0.1 if index < 2 else 0.02, mm=0.9 if index < 2 else 0.5, wd=0.01)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, w[name], **TOL)


def test_older_update_optimizer_then_optimizer_from_host():
    model = mlp()
    training, _ = session(model, popart.SGD({"defaultLearningRate": (0.1, False)}), bps=1)
    xs, labels = data(model, 2)
    training.updateOptimizer(popart.SGD({"defaultLearningRate": (0.0, False)}))
    training.optimizerFromHost()
    run(training, model, xs[:1], labels[:1])
    for name, value in trained_weights(training).items():
        np.testing.assert_array_equal(value, model.weights[name])


def test_constant_values_and_the_optimizer_type_cannot_change():
    model = mlp()
    training, _ = session(model, popart.SGD({"defaultLearningRate": (0.1, True)}))
    with pytest.raises(popart.popart_exception, match="constant 'negScaledLearningRate0'.*cannot change"):
        training.updateOptimizerFromHost(popart.SGD({"defaultLearningRate": (0.2, True)}))
    with pytest.raises(popart.popart_exception, match="compiled with SGD, got Adam"):
        training.updateOptimizerFromHost(popart.Adam({}))
    with pytest.raises(popart.popart_exception, match="compiled constant"):
        training.updateOptimizerFromHost(popart.SGD({"defaultLearningRate": (0.1, False)}))
    training.updateOptimizerFromHost(popart.ConstSGD(0.1))  # the same constants: accepted


def test_model_to_host_writes_the_trained_weights_and_a_new_session_continues(tmp_path):
    model = mlp()
    xs, labels = data(model, 2)
    training, loss = session(model, popart.ConstSGD(0.1))
    run(training, model, xs[:1], labels[:1])
    path = str(tmp_path / "trained.onnx")
    training.modelToHost(path)
    after_one = trained_weights(training)
    continued = popart.TrainingSession(path, popart.DataFlow(1, []), loss, popart.ConstSGD(0.1),
                                       popart.DeviceManager().createCpuDevice())
    continued.prepareDevice()
    continued.weightsFromHost()
    run(continued, model, xs[1:], labels[1:])
    w = {k: v.astype(np.float64) for k, v in model.weights.items()}
    for index in range(2):
        _, g = loss_and_grads(w, xs[index], labels[index], False)
        sgd_step(w, g, {}, lr=0.1)
        if index == 0:
            for name in w:
                np.testing.assert_allclose(after_one[name], w[name], **TOL)
    for name, value in trained_weights(continued).items():
        np.testing.assert_allclose(value, w[name], **TOL)


def test_weights_per_replica_reduce_their_gradients_over_their_group_only():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    settings = popart.VariableSettings(popart.CommGroup(popart.CommGroupType.Consecutive, 1),
                                       popart.VariableRetrievalMode.AllReplicas)
    w = builder.addInitializedInputTensor(np.ones((2, 2), np.float32), settings, "w")
    loss = builder.aiGraphcore.identityloss([builder.aiOnnx.mul([x, w])], popart.ReductionType.Sum)
    opts = popart.SessionOptions()
    opts.enableReplicatedGraphs = True
    opts.replicatedGraphCount = 2
    training = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, []), loss, popart.ConstSGD(0.5),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}), userOptions=opts)
    training.prepareDevice()
    training.weightsFromHost()
    xs = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)  # one row per replica
    training.run(popart.PyStepIO({x: xs}, {}))
    training.weightsToHost()
    out = {w: np.zeros((2, 2), np.float32)}
    training.readWeights(popart.PyWeightsIO(out))
    np.testing.assert_allclose(out[w], 1 - 0.5 * xs, **TOL)  # each replica moved by its own gradient


def test_replicated_weights_on_a_second_ipu_reduce_their_gradients_there():
    """Two replicas of a model split over two IPUs: the weight on IPU 1 has its gradient summed over the
    replicas on IPU 1."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    w0 = builder.addInitializedInputTensor(np.ones(2, np.float32), "w0")
    w1 = builder.addInitializedInputTensor(np.full(2, 2.0, np.float32), "w1")
    with builder.virtualGraph(0):
        h = builder.aiOnnx.mul([x, w0])
    with builder.virtualGraph(1):
        loss = builder.aiGraphcore.identityloss([builder.aiOnnx.mul([h, w1])], popart.ReductionType.Sum)
    opts = popart.SessionOptions()
    opts.enableReplicatedGraphs, opts.replicatedGraphCount = True, 2
    opts.virtualGraphMode = popart.VirtualGraphMode.Manual
    training = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, []), loss, popart.ConstSGD(0.5),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 4}), userOptions=opts)
    training.prepareDevice()
    training.weightsFromHost()
    xs = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)  # one row per replica
    training.run(popart.PyStepIO({x: xs}, {}))
    training.weightsToHost()
    out = {w0: np.zeros(2, np.float32), w1: np.zeros(2, np.float32)}
    training.readWeights(popart.PyWeightsIO(out))
    np.testing.assert_allclose(out[w0], 1 - 0.5 * (xs * 2.0).sum(0), **TOL)  # d/dw0 of x*w0*w1, summed
    np.testing.assert_allclose(out[w1], 2 - 0.5 * xs.sum(0), **TOL)
