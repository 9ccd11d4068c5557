"""Gradient clipping by global norm (popart.ClipNormSettings) in PopART training sessions, checked against
NumPy: the gradients of each clip group are scaled by maxNorm / max(maxNorm, their global norm) before the
optimiser step; SGD clips the loss-scaled gradient it reads, the Adam family the unscaled one."""
import json

import numpy as np
import pytest

import popart

X = np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)
W1 = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
W2 = np.linspace(0.5, -0.5, 6, dtype=np.float32).reshape(3, 2)


def numpy_gradients() -> dict[str, np.ndarray]:
    """Gradients of sum((x @ w1 @ w2)^2), in float64."""
    x, w1, w2 = (a.astype(np.float64) for a in (X, W1, W2))
    h = x @ w1
    dy = 2 * (h @ w2)
    return {"w1": x.T @ (dy @ w2.T), "w2": h.T @ dy}


def clipped(gradients: dict, groups: list[tuple[list[str], float]]) -> dict:
    out = dict(gradients)
    for names, max_norm in groups:
        norm = np.sqrt(sum(np.sum(gradients[n] ** 2) for n in names))
        out.update({n: gradients[n] * (max_norm / max(norm, max_norm)) for n in names})
    return out


def train_once(optimizer, options=None, anchors=(), pipelined=False):
    """One step of sum((x @ w1 @ w2)^2) (``pipelined``: each matmul on an IPU of its own, 3 micro-batches)."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 4]), "x")
    w1 = builder.addInitializedInputTensor(W1, "w1")
    w2 = builder.addInitializedInputTensor(W2, "w2")
    with builder.virtualGraph(0), builder.pipelineStage(0):
        h = builder.aiOnnx.matmul([x, w1])
    with builder.virtualGraph(1), builder.pipelineStage(1):
        y = builder.aiOnnx.matmul([h, w2])
        loss = builder.aiGraphcore.identityloss([builder.aiOnnx.mul([y, y])], reduction=popart.ReductionType.Sum)
    if pipelined:
        options.enablePipelining = options.enableGradientAccumulation = True
        options.virtualGraphMode = popart.VirtualGraphMode.Manual
        options.accumulationFactor = 3
    session = popart.TrainingSession(
        fnModel=builder.getModelProto(), loss=loss, optimizer=optimizer, userOptions=options,
        dataFlow=popart.DataFlow(1, {name: popart.AnchorReturnType("Final") for name in anchors}),
        deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}))
    session.prepareDevice()
    session.weightsFromHost()
    arrays = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.stack([X] * 3) if pipelined else X}, arrays))
    session.weightsToHost()
    weights = {"w1": np.empty_like(W1), "w2": np.empty_like(W2)}
    session.readWeights(popart.PyWeightsIO(weights))
    return session, weights, arrays


def test_sgd_clips_each_group_to_its_norm_and_leaves_a_group_under_its_norm_alone():
    g = numpy_gradients()
    norms = {name: float(np.linalg.norm(value)) for name, value in g.items()}
    groups = [(["w1"], norms["w1"] / 4), (["w2"], norms["w2"] * 2)]  # w1 clipped to a quarter, w2 untouched
    sgd = popart.SGD({"defaultLearningRate": (0.1, True)},
                     [popart.ClipNormSettings.clipWeights(names, limit) for names, limit in groups])
    _, weights, _ = train_once(sgd)
    expected = clipped(g, groups)
    np.testing.assert_allclose(weights["w1"], W1 - 0.1 * expected["w1"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weights["w2"], W2 - 0.1 * g["w2"], rtol=1e-5, atol=1e-6)
    assert not np.allclose(expected["w1"], g["w1"])


def test_sgd_clips_every_weight_by_one_global_norm_with_clip_all_weights():
    g = numpy_gradients()
    total = float(np.sqrt(sum(np.sum(v ** 2) for v in g.values())))
    sgd = popart.SGD({"defaultLearningRate": (0.1, True)}, [popart.ClipNormSettings.clipAllWeights(total / 3)])
    session, weights, _ = train_once(sgd)
    for name, start in (("w1", W1), ("w2", W2)):
        np.testing.assert_allclose(weights[name], start - 0.1 * g[name] / 3, rtol=1e-5, atol=1e-6)
    main = json.loads(session._serializeIr(popart.IrSerializationFormat.JSON))["maingraph"]
    assert sum(op["type"] == "ReduceSumSquare" for op in main) == 2  # one per weight, as PopART adds them
    assert any(t["name"] == "GlobalNorm___0" for op in main for t in op["outputs"])


def test_adam_clips_the_unscaled_gradient_whatever_the_loss_scaling():
    g = numpy_gradients()
    groups = [(["w1", "w2"], 0.5)]
    adam = popart.Adam({"defaultLearningRate": (0.01, False), "lossScaling": (64.0, False),
                        "defaultEps": (1e-3, True)}, mode=popart.AdamMode.AdamNoBias,
                       clip_norm_settings=[popart.ClipNormSettings(["w1", "w2"], 0.5)])
    _, weights, _ = train_once(adam)
    for name, start in (("w1", W1), ("w2", W2)):
        s = clipped(g, groups)[name]
        m, v = 0.1 * s, 0.001 * s ** 2  # one step from zero state, without bias correction
        np.testing.assert_allclose(weights[name], start - 0.01 * m / (np.sqrt(v) + 1e-3), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("settings, message", [
    ([popart.ClipNormSettings.clipAllWeights(1.0), popart.ClipNormSettings.clipWeights(["w1"], 1.0)],
     "Multiple clip groups specified, but one has the mode 'ClipAllWeights'"),
    ([popart.ClipNormSettings.clipWeights(["w1", "x"], 1.0)], "Could not find a varupdate op for tensor x"),
])
def test_clip_groups_popart_refuses_are_refused_with_its_words(settings, message):
    with pytest.raises(popart.popart_exception, match=message):
        train_once(popart.SGD({"defaultLearningRate": (0.1, True)}, settings))


def test_clip_settings_that_are_not_clip_norm_settings_are_a_type_error():
    with pytest.raises(TypeError, match="clip_norm_settings must be a list of popart.ClipNormSettings"):
        popart.SGD({"defaultLearningRate": (0.1, True)}, [("w1", 1.0)])


def test_clip_norm_settings_say_what_they_clip():
    some = popart.ClipNormSettings.clipWeights(["a", "b"], 2.0)
    every = popart.ClipNormSettings.clipAllWeights(3.0)
    assert (some.weightIds, some.maxNorm, some.getMode()) == (["a", "b"], 2.0,
                                                             popart.ClipNormSettings.Mode.ClipSpecifiedWeights)
    assert (every.getWeightIds(), every.getMaxNorm(), every.getMode()) == (
        [], 3.0, popart.ClipNormSettings.Mode.ClipAllWeights)
    assert popart.ClipNormSettings(["a", "b"], 2.0) == some != every


def test_pipelining_clips_the_accumulated_gradients_unless_the_outer_fragment_is_serial():
    options = popart.SessionOptions()
    sgd = popart.SGD({"defaultLearningRate": (0.01, True)}, [popart.ClipNormSettings.clipAllWeights(1.0)])
    with pytest.raises(popart.popart_exception, match="Incompatible accumulateOuterFragmentSchedule used with "
                                                      "gradient clipping"):
        train_once(sgd, options, pipelined=True)
    options.accumulateOuterFragmentSettings.schedule = popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized
    _, weights, _ = train_once(sgd, options, pipelined=True)
    summed = {name: 3 * value for name, value in numpy_gradients().items()}  # three micro-batches, summed
    expected = clipped(summed, [(["w1", "w2"], 1.0)])
    for name, start in (("w1", W1), ("w2", W2)):
        np.testing.assert_allclose(weights[name], start - 0.01 * expected[name], rtol=1e-5, atol=1e-6)
