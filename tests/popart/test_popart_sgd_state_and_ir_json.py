"""SGD's optimiser state as PopART keeps it (Combined: ``Accl___w`` holding the next step's momentum
and weight decay; Separate: ``Accl1___w`` from zero), anchored weights read when PopART reads them,
and ``_serializeIr``'s JSON layout."""
import json

import numpy as np
import pytest

import popart
from popart_training_oracle import data, loss_and_grads, mlp, session, sgd_step, trained_weights

HYPER = dict(lr=0.05, mm=0.8, wd=0.1, dm=0.25)


def _sgd(separate: bool) -> popart.SGD:
    return popart.SGD({"defaultLearningRate": (HYPER["lr"], True), "defaultMomentum": (HYPER["mm"], True),
                       "defaultWeightDecay": (HYPER["wd"], True), "defaultDampening": (HYPER["dm"], True)},
                      accumulatorAndMomentum=popart.SGDAccumulatorAndMomentum.Separate if separate else
                      popart.SGDAccumulatorAndMomentum.Combined)


def _numpy_steps(model, xs, labels):
    w = {k: v.astype(np.float64) for k, v in model.weights.items()}
    state = {}
    for x, label in zip(xs, labels):
        _, g = loss_and_grads(w, x, label, False)
        sgd_step(w, g, state, **HYPER)
    return w, state


@pytest.mark.parametrize("separate", [False, True], ids=["combined", "separate"])
def test_sgd_state_holds_what_popart_keeps(separate):
    model = mlp()
    prefix = popart.reservedAccl1Prefix() if separate else popart.reservedAcclPrefix()
    training, _ = session(model, _sgd(separate), bps=2, anchors=[prefix + "w2"])
    arrays = training.initAnchorArrays()
    xs, labels = data(model, 2)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, arrays))
    w, kept = _numpy_steps(model, xs, labels)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, w[name], rtol=1e-5, atol=1e-6)  # one update, either way
    after = arrays[prefix + "w2"][-1]
    if separate:  # the velocity of the last step: the kept one less the next step's terms
        velocity = (kept["w2"] - (1 - HYPER["dm"]) * HYPER["wd"] * w["w2"]) / HYPER["mm"]
        np.testing.assert_allclose(after, velocity, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_allclose(after, kept["w2"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("separate, state", [(False, ["Accl___", "AcclIntoUpdate___", "AcclOutOfAcclUpdate___"]),
                                             (True, ["Accl1___"])])
def test_serialized_ir_lists_each_graphs_ops_with_popart_names(separate, state):
    model = mlp()
    training, _ = session(model, _sgd(separate), bps=1)
    document = json.loads(training._serializeIr(popart.IrSerializationFormat.JSON))
    main = document["maingraph"]
    names = {t["name"] for op in main for t in op["inputs"] + op["outputs"]}
    assert {p + w for p in state for w in model.weights} <= names
    assert popart.reservedAcclToUpdatePrefix() == "AcclIntoUpdate___"
    assert list(document) == ["maingraph"]  # the forward pass and its gradient listed in it, as PopART does
    assert not any(op["type"] == "HostLoad" for op in main)  # host transfers: only with useHostCopyOps
    assert {"Relu", "ReluGrad", "Accumulate"} <= {op["type"] for op in main}  # PopART's op types
    matmul = next(op for op in main if op["type"] == "MatMul")
    assert matmul["inputs"][0] == {"name": model.x, "shape": "[4 6]", "type": "FLOAT", "index": 0}
    with pytest.raises(TypeError, match="IrSerializationFormat"):
        training._serializeIr("JSON")


def test_an_anchored_weight_is_read_after_its_update_unless_an_accumulation_loop_holds_it():
    model = mlp()
    plain = popart.SGD({"defaultLearningRate": (0.1, True)})
    training, _ = session(model, plain, bps=2, anchors=["w2"])
    arrays = training.initAnchorArrays()
    xs, labels = data(model, 2)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, arrays))
    w = {k: v.astype(np.float64) for k, v in model.weights.items()}
    for step, (x, label) in enumerate(zip(xs, labels)):
        _, g = loss_and_grads(w, x, label, False)
        sgd_step(w, g, {}, lr=0.1)
        np.testing.assert_allclose(arrays["w2"][step], w["w2"], rtol=1e-5, atol=1e-6)  # after the update
    options = popart.SessionOptions()
    options.enableGradientAccumulation = True
    options.accumulationFactor = 2
    accumulated, _ = session(model, plain, bps=1, anchors=["w2"], options=options)
    arrays = accumulated.initAnchorArrays()
    accumulated.run(popart.PyStepIO({model.x: xs, model.label: labels}, arrays))
    for micro_batch in range(2):  # both micro-batches see the weight they used: the one before the update
        np.testing.assert_array_equal(arrays["w2"][micro_batch], model.weights["w2"])
    assert not np.allclose(trained_weights(accumulated)["w2"], model.weights["w2"])
