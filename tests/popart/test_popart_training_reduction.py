"""Gradient accumulation and replication: 2 replicas x 2 accumulated micro-batches train as one step on
the big batch (gradients summed, or meaned), with any optimiser state."""
import numpy as np
import pytest

import popart
from popart_training_oracle import data, loss_and_grads, mlp, session, sgd_step, trained_weights


def options(replicas=1, accumulation=1, mean=False):
    opts = popart.SessionOptions()
    if replicas > 1:
        opts.enableReplicatedGraphs = True
        opts.replicatedGraphCount = replicas
    if accumulation > 1:
        opts.enableGradientAccumulation = True
        opts.accumulationFactor = accumulation
    if mean:
        opts.accumulationAndReplicationReductionType = popart.ReductionType.Mean
    return opts


@pytest.mark.parametrize("mean", [False, True], ids=["sum", "mean"])
@pytest.mark.parametrize("replicas,accumulation", [(2, 2), (2, 1), (1, 3)])
def test_replicas_and_accumulation_equal_one_big_batch_step(replicas, accumulation, mean):
    model = mlp()
    bps = 2
    optimizer = popart.SGD({"defaultLearningRate": (0.05, False), "defaultMomentum": (0.9, True),
                            "defaultWeightDecay": (0.01, True)})
    training, _ = session(model, optimizer, bps=bps, options=options(replicas, accumulation, mean))
    assert training.accumulationFactor == accumulation and training.replicationFactor == replicas
    micro = bps * accumulation * replicas
    xs, labels = data(model, micro)
    shape = [d for d in (bps, accumulation, replicas) if d > 1]
    training.run(popart.PyStepIO({model.x: xs.reshape(shape + [model.batch, model.inputs]),
                                  model.label: labels.reshape(shape + [model.batch])}, training.initAnchorArrays()))
    w = {k: v.astype(np.float64) for k, v in model.weights.items()}
    state = {}
    per_step = accumulation * replicas
    for step in range(bps):
        total = None
        for index in range(step * per_step, (step + 1) * per_step):
            _, g = loss_and_grads(w, xs[index], labels[index], False)
            total = g if total is None else {k: total[k] + g[k] for k in g}
        if mean:
            total = {k: v / per_step for k, v in total.items()}
        sgd_step(w, total, state, lr=0.05, mm=0.9, wd=0.01)
    for name, value in trained_weights(training).items():
        np.testing.assert_allclose(value, w[name], rtol=1e-6, atol=1e-6)


def test_accumulator_and_gradient_anchors_per_micro_batch():
    model = mlp()
    names = [popart.reservedGradientPrefix() + "b2", popart.reservedAccumPrefix() + "b2", "Accl___b2"]
    training, _ = session(model, popart.SGD({"defaultMomentum": (0.5, True)}), bps=1, anchors=names,
                          options=options(accumulation=2))
    arrays = training.initAnchorArrays()
    xs, labels = data(model, 2)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, arrays))
    grads = [loss_and_grads({k: v.astype(np.float64) for k, v in model.weights.items()}, x, y, False)[1]["b2"]
             for x, y in zip(xs, labels)]
    np.testing.assert_allclose(arrays["Gradient___b2"], grads, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(arrays["Accum___b2"], np.cumsum(grads, axis=0), rtol=1e-5, atol=1e-7)
    assert arrays["Accl___b2"].shape == (2, model.classes)


def test_no_reduction_is_refused_for_training():
    model = mlp()
    opts = popart.SessionOptions()
    opts.accumulationAndReplicationReductionType = popart.ReductionType.NoReduction
    with pytest.raises(popart.popart_exception, match="NoReduction is not valid for training"):
        session(model, popart.ConstSGD(0.1), options=opts)
