"""TrainingSession with popart.Adaptive (AdaGrad, RMSProp, CenteredRMSProp, AdaDelta; momentum,
weight decay, TensorFlow's RMSProp form) against a NumPy reference of the same update, and its
state saved and resumed by modelToHost."""
import numpy as np
import onnx
import pytest

import popart
from popart_training_oracle import data, loss_and_grads, mlp, session, trained_weights

LOSS_SCALING = 2.0


def adaptive_step(w: dict, g: dict, state: dict, mode: str, lr: float, wd: float, alpha: float, mm: float,
                  eps: float, l2: bool, tf: bool) -> None:
    """One Adaptive update of every weight, in float64 (the documented equations)."""
    for name in w:
        s = g[name] + (wd * w[name] if l2 else 0.0)
        v1 = state.setdefault(("v1", name), np.full_like(w[name], 1.0 if tf else 0.0))
        v2 = state.setdefault(("v2", name), np.zeros_like(w[name]))
        v3 = state.setdefault(("v3", name), np.zeros_like(w[name]))
        v1[...] = v1 + s * s if mode == "AdaGrad" else alpha * v1 + (1 - alpha) * s * s
        if mode == "AdaDelta":
            x = s * np.sqrt(v2 + eps) / np.sqrt(v1 + eps)
            v2[...] = alpha * v2 + (1 - alpha) * x * x
        else:
            spread = v1
            if mode == "CenteredRMSProp":
                v2[...] = alpha * v2 + (1 - alpha) * s
                spread = v1 - v2 * v2
            x = s / np.sqrt(spread + eps) if tf else s / (np.sqrt(spread) + eps)
        inside = tf and mm > 0
        if mm > 0:
            v3[...] = mm * v3 + (lr * x if inside else x)
            x = v3
        if not l2:
            x = x + wd * w[name]
        w[name] = w[name] - (x if inside else lr * x)


def optimizer(mode: str, hyper: dict, l2: bool, tf: bool) -> popart.Adaptive:
    return popart.Adaptive({"defaultLearningRate": (hyper["lr"], False), "defaultWeightDecay": (hyper["wd"], True),
                            "defaultAlpha": (hyper["alpha"], False), "defaultMomentum": (hyper["mm"], True),
                            "defaultEps": (hyper["eps"], True), "lossScaling": (LOSS_SCALING, True)},
                           mode=getattr(popart.AdaptiveMode, mode),
                           weight_decay_mode=popart.WeightDecayMode.L2Regularization if l2 else
                           popart.WeightDecayMode.Decay, rmsprop_tf_variant=tf)


CASES = [("AdaGrad", 0.0, False, False), ("RMSProp", 0.0, False, False), ("RMSProp", 0.6, True, False),
         ("CenteredRMSProp", 0.0, False, False), ("CenteredRMSProp", 0.5, False, True),
         ("RMSProp", 0.7, False, True), ("AdaDelta", 0.0, False, False), ("AdaDelta", 0.4, True, False)]


@pytest.mark.parametrize("mode, mm, l2, tf", CASES)
def test_adaptive_modes_against_numpy(mode, mm, l2, tf):
    model = mlp()
    hyper = dict(lr=0.05, wd=0.02, alpha=0.9, mm=mm, eps=1e-4)
    training, _ = session(model, optimizer(mode, hyper, l2, tf), bps=3)
    xs, labels = data(model, 3)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, training.initAnchorArrays()))
    w = {k: v.astype(np.float64) for k, v in model.weights.items()}
    state = {}
    for x, label in zip(xs, labels):
        _, g = loss_and_grads(w, x, label, False)
        adaptive_step(w, g, state, mode, l2=l2, tf=tf, **hyper)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, w[name], rtol=2e-5, atol=2e-6)


def test_adaptive_state_has_popart_names_and_resumes_from_a_saved_model(tmp_path):
    model = mlp()
    hyper = dict(lr=0.05, wd=0.0, alpha=0.9, mm=0.5, eps=1e-4)
    first, loss = session(model, optimizer("CenteredRMSProp", hyper, False, False), bps=2)
    xs, labels = data(model, 4)
    first.run(popart.PyStepIO({model.x: xs[:2], model.label: labels[:2]}, first.initAnchorArrays()))
    saved = tmp_path / "adaptive.onnx"
    first.modelToHost(str(saved))
    names = {i.name for i in onnx.load(str(saved)).graph.initializer}
    assert {"Accl1___w2", "Accl2___w2", "Accl3___w2"} <= names and "Step___w2" not in names
    resumed = popart.TrainingSession(fnModel=str(saved), dataFlow=popart.DataFlow(2, {}), loss=loss,
                                     optimizer=optimizer("CenteredRMSProp", hyper, False, False),
                                     deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}))
    resumed.prepareDevice()
    resumed.weightsFromHost()
    for training in (first, resumed):
        training.run(popart.PyStepIO({model.x: xs[2:], model.label: labels[2:]}, training.initAnchorArrays()))
    for name, value in trained_weights(first).items():
        np.testing.assert_array_equal(trained_weights(resumed)[name], value)


def test_adaptive_refuses_bad_values_and_modes():
    with pytest.raises(popart.popart_exception, match=r"Negative alpha \(-0.5\) in Adaptive"):
        popart.Adaptive({"defaultAlpha": (-0.5, True)})
    with pytest.raises(popart.popart_exception, match="Constant, zero learning rate in Adaptive"):
        popart.Adaptive({"defaultLearningRate": (0.0, True)})
    with pytest.raises(TypeError, match="mode must be a popart.AdaptiveMode"):
        popart.Adaptive({}, mode="RMSProp")
    assert popart.Adaptive({}).learningRates().val() == pytest.approx(0.01)
