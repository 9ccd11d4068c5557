"""TrainingSession with Adam in each mode and weight-decay mode, against NumPy (to 1e-6)."""
import numpy as np
import pytest

import popart
from popart_training_oracle import adam_step, data, loss_and_grads, mlp, session, trained_weights

MODES = ["Adam", "AdamNoBias", "Lamb", "LambNoBias", "AdaMax"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("l2", [False, True], ids=["decay", "l2"])
def test_adam_modes_against_numpy(mode, l2):
    model = mlp()
    hyper = dict(lr=0.01, wd=0.05, b1=0.8, b2=0.95, eps=1e-5, mwn=0.7)
    optimizer = popart.Adam({"defaultLearningRate": (hyper["lr"], False), "defaultWeightDecay": (hyper["wd"], True),
                             "defaultBeta1": (hyper["b1"], True), "defaultBeta2": (hyper["b2"], False),
                             "defaultEps": (hyper["eps"], True), "defaultMaxWeightNorm": (hyper["mwn"], True),
                             "lossScaling": (4.0, True)},
                            mode=getattr(popart.AdamMode, mode),
                            weight_decay_mode=popart.WeightDecayMode.L2Regularization if l2 else
                            popart.WeightDecayMode.Decay)
    training, _ = session(model, optimizer, bps=3)
    xs, labels = data(model, 3)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, training.initAnchorArrays()))
    w = {k: v.astype(np.float64) for k, v in model.weights.items()}
    state = {}
    for x, label in zip(xs, labels):
        _, g = loss_and_grads(w, x, label, False)
        adam_step(w, g, state, mode=mode, l2=l2, **hyper)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, w[name], rtol=1e-6, atol=1e-6)


def test_adam_state_anchors_use_popart_reserved_names():
    model = mlp()
    anchors = [popart.reservedAccl1Prefix() + "w2", popart.reservedAccl2Prefix() + "w2",
               popart.reservedStepPrefix() + "w2"]
    training, _ = session(model, popart.Adam({}), bps=2, anchors=anchors)
    arrays = training.initAnchorArrays()
    xs, labels = data(model, 2)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, arrays))
    np.testing.assert_array_equal(arrays["Step___w2"], [1, 2])
    assert arrays["Accl1___w2"].shape == (2,) + model.weights["w2"].shape
    assert anchors[0] == "Accl1___w2" and anchors[1] == "Accl2___w2"


@pytest.mark.parametrize("changeable", ["LearningRate", "Beta1", "Beta2", "WeightDecay"])
def test_float16_adam_trains_alike_with_constant_or_changeable_values(changeable):
    """A value made changeable (a scalar variable) gives the float16 weights the constant one gives."""
    def trained(const: bool) -> dict:
        builder = popart.Builder()
        x = builder.addInputTensor(popart.TensorInfo("FLOAT16", [4, 4]))
        rng = np.random.default_rng(7)
        w = builder.addInitializedInputTensor(rng.random((4, 4)).astype(np.float16), "w")
        loss = builder.aiGraphcore.identityloss([builder.aiOnnx.matmul([x, w])])
        values = {"LearningRate": 0.005, "Beta1": 0.7, "Beta2": 0.8, "WeightDecay": 0.1}
        optimizer = popart.Adam({f"default{k}": (v, const or k != changeable) for k, v in values.items()}
                                | {"lossScaling": (10.0, True)})
        training = popart.TrainingSession(fnModel=builder.getModelProto(), dataFlow=popart.DataFlow(1, {}),
                                          loss=loss, optimizer=optimizer,
                                          deviceInfo=popart.DeviceManager().createCpuDevice())
        training.prepareDevice()
        training.weightsFromHost()
        for _ in range(6):
            training.run(popart.PyStepIO({x: np.ones((4, 4), np.float16)}, {}))
        out = {"w": np.zeros((4, 4), np.float16)}
        training.weightsToHost()
        training.readWeights(popart.PyWeightsIO(out))
        return out
    np.testing.assert_array_equal(trained(const=False)["w"], trained(const=True)["w"])
