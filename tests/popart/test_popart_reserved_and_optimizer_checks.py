"""PopART's reserved prefixes and its checks of optimiser values, and a float16 model trained with a
loss scaling that can change."""
import numpy as np
import pytest

import popart


def test_every_reserved_prefix_popart_names_exists():
    expected = {"reservedAcclPrefix": "Accl___", "reservedAccl1Prefix": "Accl1___", "reservedAccl2Prefix": "Accl2___",
                "reservedAccumPrefix": "Accum___", "reservedStepPrefix": "Step___",
                "reservedGradientPrefix": "Gradient___",
                "reservedUpdatedVarPrefix": "UpdatedVar___", "reservedLossScalingPrefix": "lossScaling_",
                "reservedDefaultScaledLearningRate0Prefix": "scaledLearningRate0___default___",
                "reservedSpecificAdamBeta1Prefix": "adamBeta1___specific___", "reservedCounterPrefix": "Counter___"}
    for name, prefix in expected.items():
        assert getattr(popart, name)() == prefix
    assert len([n for n in dir(popart) if n.startswith("reserved") and n.endswith("Prefix")]) >= 80


@pytest.mark.parametrize("make, message", [
    (lambda: popart.SGD({"defaultLearningRate": (0.0, True)}), "^Constant, zero learning rate in SGD"),
    (lambda: popart.ConstSGD(0.0), "^Constant, zero learning rate in SGD"),
    (lambda: popart.SGD({"defaultLearningRate": (-0.1, False)}), r"^Negative learning rate \(-0.1\) in SGD"),
    (lambda: popart.SGD({"defaultMomentum": (-0.5, True)}), r"^Negative momentum \(-0.5\) in SGD"),
    (lambda: popart.SGD({"defaultVelocityScaling": (0.0, True)}), r"^Non-positive velocity scaling \(0.0\) in SGD"),
    (lambda: popart.Adam({"defaultLearningRate": (0.0, True)}), "^Constant, zero learning rate in Adam"),
    (lambda: popart.Adam({"defaultEps": (0.0, True)}), r"^Non-positive eps \(0.0\) in Adam"),
    (lambda: popart.SGD({}).insertSpecific("w", {"learningRate": (0.0, True)}), "^Constant, zero learning rate"),
])
def test_optimizer_values_are_checked_as_popart_checks_them(make, message):
    with pytest.raises(popart.popart_exception, match=message):
        make()


def test_a_zero_learning_rate_that_can_change_is_accepted():
    assert popart.SGD({"defaultLearningRate": (0.0, False)}).learningRates().val() == 0.0


def test_float16_model_with_a_changeable_loss_scaling_trains():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT16", [2]))
    w = builder.addInitializedInputTensor(np.array([1.0, 2.0], np.float16), "w")
    loss = builder.aiGraphcore.identityloss([builder.aiOnnx.mul([x, w])], popart.ReductionType.Sum)
    optimizer = popart.SGD({"defaultLearningRate": (0.5, False), "lossScaling": (4.0, False)})
    training = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, {}), loss, optimizer,
                                      popart.DeviceManager().createCpuDevice())
    training.prepareDevice()
    training.weightsFromHost()
    training.run(popart.PyStepIO({x: np.array([3.0, -1.0], np.float16)}, {}))
    training.weightsToHost()
    weights = {w: np.zeros(2, np.float16)}
    training.readWeights(popart.PyWeightsIO(weights))
    np.testing.assert_array_equal(weights[w], np.array([1.0 - 0.5 * 3.0, 2.0 + 0.5], np.float16))


@pytest.mark.parametrize("changeable", ["lossScaling", "defaultLearningRate", "defaultBeta1", "defaultEps"])
def test_float16_adam_with_a_changeable_value_matches_the_constant_one(changeable):
    values = {"defaultLearningRate": 0.05, "defaultBeta1": 0.7, "defaultEps": 1e-3, "lossScaling": 8.0}

    def trained(optimizer):
        builder = popart.Builder()
        x = builder.addInputTensor(popart.TensorInfo("FLOAT16", [2, 2]))
        w = builder.addInitializedInputTensor(np.array([[1.0, -2.0], [0.5, 3.0]], np.float16), "w")
        loss = builder.aiGraphcore.identityloss([builder.aiOnnx.matmul([x, w])], popart.ReductionType.Sum)
        training = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, {}), loss, optimizer,
                                          popart.DeviceManager().createCpuDevice())
        training.prepareDevice()
        training.weightsFromHost()
        training.run(popart.PyStepIO({x: np.array([[1.0, 2.0], [-1.0, 0.5]], np.float16)}, {}))
        training.weightsToHost()
        weights = {w: np.zeros((2, 2), np.float16)}
        training.readWeights(popart.PyWeightsIO(weights))
        return weights[w]

    constant = trained(popart.Adam({k: (v, True) for k, v in values.items()}))
    mixed = trained(popart.Adam({k: (v, k != changeable) for k, v in values.items()}))
    np.testing.assert_allclose(mixed.astype(np.float32), constant.astype(np.float32), rtol=1e-3, atol=1e-3)
    assert not np.array_equal(constant, np.array([[1.0, -2.0], [0.5, 3.0]], np.float16))


def test_changeable_sgd_scalars_and_loss_scaling_can_be_anchored_by_popart_names():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.array([1.0, 2.0], np.float32), "w")
    loss = builder.aiGraphcore.identityloss([builder.aiOnnx.mul([x, w])], popart.ReductionType.Sum)
    names = [popart.reservedDefaultScaledLearningRate0Prefix() + "FLOAT",
             popart.reservedDefaultWeightDecayScaleFactor0Prefix() + "FLOAT",
             popart.reservedLossScalingPrefix() + "FLOAT"]
    optimizer = popart.SGD({"defaultLearningRate": (0.5, False), "defaultWeightDecay": (0.1, False),
                            "lossScaling": (4.0, False)})
    training = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, names), loss, optimizer,
                                      popart.DeviceManager().createCpuDevice())
    training.prepareDevice()
    training.weightsFromHost()
    for lr, wd, ls in [(0.5, 0.1, 4.0), (0.25, 0.2, 2.0)]:
        training.updateOptimizerFromHost(popart.SGD({"defaultLearningRate": (lr, False),
                                                     "defaultWeightDecay": (wd, False), "lossScaling": (ls, False)}))
        anchors = training.initAnchorArrays()
        training.run(popart.PyStepIO({x: np.ones(2, np.float32)}, anchors))
        np.testing.assert_allclose([anchors[n] for n in names], [lr / ls, 1 - wd * lr, ls], rtol=1e-6)
    with pytest.raises(popart.popart_exception, match="the optimizer's value is constant"):
        popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, names[:1]), loss, popart.ConstSGD(0.1),
                               popart.DeviceManager().createCpuDevice())
