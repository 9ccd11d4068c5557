"""TrainingSession with SGD: the guide's training example, and each SGD hyperparameter against a NumPy
re-implementation of PopART's SGD equations (to 1e-6)."""
import numpy as np
import pytest

import popart
from popart_training_oracle import data, loss_and_grads, mlp, session, sgd_step, trained_weights

TOL = dict(rtol=1e-6, atol=1e-6)


def reference(model, xs, labels, mean=False, **hyper):
    w = {k: v.astype(np.float64) for k, v in model.weights.items()}
    state, losses = {}, []
    for x, label in zip(xs, labels):
        loss, g = loss_and_grads(w, x, label, mean)
        losses.append(loss)
        sgd_step(w, g, state, **hyper)
    return w, np.array(losses)


def train(model, optimizer, bps, anchors=("loss",), **kwargs):
    training, loss = session(model, optimizer, bps=bps, anchors=anchors, **kwargs)
    arrays = training.initAnchorArrays()
    xs, labels = data(model, bps)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, arrays))
    return training, loss, arrays, xs, labels


def test_guide_training_example_mlp_nllloss_sgd_32_batches_per_step():
    """The seed's example: an MLP, ``losses=[popart.NllLoss(probs, label, ...)]``, SGD with a
    changeable learning rate, batchesPerStep 32, the loss anchored for every batch."""
    model = mlp()
    loss = popart.NllLoss(model.probs, model.label, "nllLossVal")
    flow = popart.DataFlow(32, {model.probs: popart.AnchorReturnType("ALL"),
                                loss.output(0): popart.AnchorReturnType("ALL")})
    training = popart.TrainingSession(fnModel=model.proto, dataFlow=flow, losses=[loss],
                                      optimizer=popart.SGD({"defaultLearningRate": (0.1, False)}),
                                      deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
    training.prepareDevice()
    training.weightsFromHost()
    anchors = training.initAnchorArrays()
    xs, labels = data(model, 32)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, anchors))
    expected, losses = reference(model, xs, labels, lr=0.1)
    np.testing.assert_allclose(anchors["nllLossVal"], losses, rtol=1e-5)
    assert anchors[model.probs].shape == (32, model.batch, model.classes)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, expected[name], **TOL)


@pytest.mark.parametrize("hyper", [
    dict(lr=0.05),
    dict(lr=0.05, wd=0.1),
    dict(lr=0.05, wd=0.01, dm=0.3),
    dict(lr=0.05, mm=0.9),
    dict(lr=0.05, mm=0.9, dm=0.2, wd=0.02),
    dict(lr=0.05, mm=0.8, wd=0.01, nesterov=True),
], ids=["lr", "weight-decay", "dampening", "momentum", "momentum-dampening-decay", "nesterov"])
@pytest.mark.parametrize("const", [True, False], ids=["const", "non-const"])
def test_sgd_hyperparameters_against_numpy(hyper, const):
    model = mlp()
    keys = {"lr": "defaultLearningRate", "wd": "defaultWeightDecay", "mm": "defaultMomentum",
            "dm": "defaultDampening"}
    params = {keys[k]: (v, const) for k, v in hyper.items() if k in keys}
    if hyper.get("nesterov"):
        params["nesterov"] = True
    training, _, arrays, xs, labels = train(model, popart.SGD(params), bps=4)
    expected, losses = reference(model, xs, labels, **hyper)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, expected[name], **TOL)


def test_velocity_scaling_and_loss_scaling_leave_the_numbers_unchanged():
    model = mlp()
    optimizer = popart.SGD({"defaultLearningRate": (0.05, True), "defaultMomentum": (0.9, True),
                            "defaultWeightDecay": (0.01, True), "defaultVelocityScaling": (8.0, True),
                            "lossScaling": (64.0, False)})
    training, _, _, xs, labels = train(model, optimizer, bps=3)
    expected, _ = reference(model, xs, labels, lr=0.05, mm=0.9, wd=0.01)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, expected[name], **TOL)


def test_loss_scaling_scales_the_anchored_gradient():
    model = mlp()
    grad = popart.reservedGradientPrefix() + "w2"
    training, _, arrays, xs, labels = train(model, popart.SGD({"lossScaling": (16.0, True)}), bps=1,
                                            anchors=(grad,))
    _, g = loss_and_grads({k: v.astype(np.float64) for k, v in model.weights.items()}, xs[0], labels[0], False)
    np.testing.assert_allclose(arrays[grad], 16 * g["w2"], rtol=1e-5)


def test_insert_specific_gives_one_weight_its_own_values():
    model = mlp()
    optimizer = popart.SGD({"defaultLearningRate": (0.05, False), "defaultMomentum": (0.5, True)})
    optimizer.insertSpecific("w1", {"learningRate": (0.2, False), "momentum": (0.9, True)})
    training, _, _, xs, labels = train(model, optimizer, bps=3)
    expected, _ = reference(model, xs, labels, lr=0.05, mm=0.5, specific={"w1": dict(lr=0.2, mm=0.9)})
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, expected[name], **TOL)
    assert "negScaledLearningRate___specific___w1" in training.program.scalars


def test_const_sgd_compiles_its_values_in():
    model = mlp()
    training, _, _, xs, labels = train(model, popart.ConstSGD(0.05, weight_decay=0.01), bps=2)
    expected, _ = reference(model, xs, labels, lr=0.05, wd=0.01)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, expected[name], **TOL)
    assert training.program.scalars == {}


def test_mean_reduction_of_the_loss():
    model = mlp()
    training, _, _, xs, labels = train(model, popart.ConstSGD(0.1), bps=2, mean=True)
    expected, _ = reference(model, xs, labels, mean=True, lr=0.1)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, expected[name], **TOL)


def test_l1_loss_object_and_identity_loss():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [3]), "x")
    w = builder.addInitializedInputTensor(np.array([1.0, -2.0, 0.5], np.float32), "w")
    y = builder.aiOnnx.mul([x, w])
    flow = popart.DataFlow(1, {"l1": popart.AnchorReturnType("ALL")})
    training = popart.TrainingSession(builder.getModelProto(), flow, losses=[popart.L1Loss(y, "l1", 0.5)],
                                      optimizer=popart.ConstSGD(0.1),
                                      deviceInfo=popart.DeviceManager().createCpuDevice())
    training.prepareDevice()
    training.weightsFromHost()
    anchors = training.initAnchorArrays()
    xs = np.array([1.0, 2.0, -1.0], np.float32)
    training.run(popart.PyStepIO({x: xs}, anchors))
    w0 = np.array([1.0, -2.0, 0.5])
    assert anchors["l1"] == pytest.approx(0.5 * np.abs(xs * w0).sum())
    np.testing.assert_allclose(trained_weights(training)["w"], w0 - 0.1 * 0.5 * np.sign(xs * w0) * xs, **TOL)

    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [3]), "x")
    w = builder.addInitializedInputTensor(np.ones(3, np.float32), "w")
    loss = builder.aiGraphcore.identityloss([builder.aiOnnx.mul([x, w])], popart.ReductionType.Sum)
    training = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, []), loss,
                                      popart.ConstSGD(0.5), popart.DeviceManager().createCpuDevice())
    training.prepareDevice()
    training.weightsFromHost()
    training.run(popart.PyStepIO({x: xs}, {}))
    np.testing.assert_allclose(trained_weights(training)["w"], 1 - 0.5 * xs, **TOL)


def test_errors_name_what_was_wrong():
    model = mlp()
    device = popart.DeviceManager().createCpuDevice()
    flow = popart.DataFlow(1, [])
    with pytest.raises(popart.popart_exception, match="'nope' is not a tensor"):
        popart.TrainingSession(model.proto, flow, "nope", popart.ConstSGD(0.1), device)
    with pytest.raises(TypeError, match="optimizer must be"):
        popart.TrainingSession(model.proto, flow, model.probs, object(), device)
    with pytest.raises(popart.popart_exception, match="Invalid SGD parameter"):
        popart.SGD({"learningRate": (0.1, True)})
    with pytest.raises(popart.popart_exception, match="not in Ir Tensors"):
        builder = popart.Builder(model.proto)
        loss = builder.aiGraphcore.nllloss([model.probs, model.label])
        popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, ["Accl___w1"]), loss,
                               popart.ConstSGD(0.1), device)


def test_final_and_sum_anchors_of_a_training_run():
    model = mlp()
    builder = popart.Builder(model.proto)
    loss = builder.aiGraphcore.nllloss([model.probs, model.label], popart.ReductionType.Sum)
    flow = popart.DataFlow(4, {loss: popart.AnchorReturnType("SUM"), model.probs: popart.AnchorReturnType("FINAL"),
                               "Gradient___b2": popart.AnchorReturnType("EVERYN", 2)})
    training = popart.TrainingSession(builder.getModelProto(), flow, loss, popart.ConstSGD(0.05),
                                      popart.DeviceManager().createIpuModelDevice({}))
    training.prepareDevice()
    training.weightsFromHost()
    arrays = training.initAnchorArrays()
    xs, labels = data(model, 4)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, arrays))
    _, losses = reference(model, xs, labels, lr=0.05)
    assert arrays[loss] == pytest.approx(losses.sum(), rel=1e-5)
    assert arrays[model.probs].shape == (model.batch, model.classes)
    assert arrays["Gradient___b2"].shape == (2, model.classes)
