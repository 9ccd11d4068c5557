"""Data-parallel training: R replicas with an all-reduced gradient equal one replica on the whole batch."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops

STEPS, BATCH, FEATURES, LR = 5, 4, 3, 0.1


def train(replicas: int, x: np.ndarray, y: np.ndarray, grouped: bool = False) -> np.ndarray:
    """Linear regression by SGD; the gradient of the mean squared error is written out by hand."""
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        x_stream = popxl.h2d_stream([BATCH // replicas, FEATURES], popxl.float32, name="x")
        t_stream = popxl.h2d_stream([BATCH // replicas], popxl.float32, name="target")
        w = popxl.variable(np.zeros(FEATURES, np.float32), name="w")

        def step(weights: popxl.TensorByRef):
            xs, target = ops.host_load(x_stream), ops.host_load(t_stream)
            error = xs @ weights - target
            gradient = (error @ xs) * (1.0 / BATCH)
            if replicas > 1:
                group = ir.replica_grouping(group_size=replicas) if grouped else None
                gradient = ops.collectives.replicated_all_reduce(gradient, group=group)
            ops.var_updates.accumulate_(weights, gradient, -LR)

        ops.repeat(ir.create_graph(step, w), STEPS, w)
    ir.num_host_transfers = STEPS
    with popxl.Session(ir, "ipu_model") as session:
        session.run({x_stream: per_replica(x, replicas), t_stream: per_replica(y, replicas)})
        return session.get_tensor_data(w)


def per_replica(a: np.ndarray, replicas: int) -> np.ndarray:
    """[steps, replicas, batch/replicas, ...]: replica r takes rows r*b..(r+1)*b of each step's batch
    (the replica dimension is left out for one replica, as popxl lays inputs out)."""
    split = a.reshape(STEPS, replicas, BATCH // replicas, *a.shape[2:])
    return split[:, 0] if replicas == 1 else split


def numpy_reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    w = np.zeros(FEATURES, np.float32)
    for step in range(STEPS):
        error = x[step] @ w - y[step]
        w = w - LR * (error @ x[step]) / BATCH
    return w


@pytest.mark.parametrize("replicas, grouped", [(2, False), (4, False), (4, True)])
def test_replicated_sgd_equals_single_replica_on_the_concatenated_batch(replicas, grouped):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((STEPS, BATCH, FEATURES)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32)).astype(np.float32)
    single = train(1, x, y)
    replicated = train(replicas, x, y, grouped)
    np.testing.assert_allclose(single, numpy_reference(x, y), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(replicated, single, rtol=1e-5, atol=1e-6)
