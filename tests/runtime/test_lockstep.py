"""Replicas in lockstep: when every collective is in the main graph, the replicas run in a few threads
(one per core), each taking several replicas op by op, with the numbers of one thread per replica."""
import threading

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.runtime.communicator import Communicator
from workbench.runtime.lockstep import runs_in_lockstep

REPLICAS = 4


def sgd_ir(collective_in_subgraph: bool):
    """Two SGD steps of a linear model, the gradient all-reduced in the main graph or inside a call."""
    ir = popxl.Ir(replication=REPLICAS)
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2, 3], popxl.float32, name="x")
        w = popxl.variable(np.ones((3, 1), np.float32), name="w")
        grouped = ir.replica_grouping(group_size=2)
        reduce_graph = ir.create_graph(lambda g: ops.collectives.replicated_all_reduce(g, op="mean"),
                                       popxl.TensorSpec((3, 1), popxl.float32))
        outputs = []
        for _ in range(2):
            x = ops.host_load(x_stream)
            grad = ops.transpose(x) @ (x @ w)
            if collective_in_subgraph:
                grad = ops.call(reduce_graph, grad)[0]
            else:
                grad = ops.collectives.replicated_all_reduce(grad, op="mean")
            pair_sum = ops.collectives.replicated_all_reduce(grad, group=grouped)
            gathered = ops.collectives.replicated_all_gather(pair_sum)
            ops.scaled_add_(w, grad, b=-0.1)
            outputs.append(gathered)
        out = popxl.d2h_stream(outputs[-1].shape, popxl.float32, name="gathered")
        ops.host_store(out, outputs[-1] + outputs[0])
    ir.num_host_transfers = 2
    return ir, x_stream, out, w


def run(collective_in_subgraph: bool):
    ir, x_stream, out, w = sgd_ir(collective_in_subgraph)
    data = np.random.default_rng(0).standard_normal((2, REPLICAS, 2, 3)).astype(np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        results = [session.run({x_stream: data})[out] for _ in range(2)]
        return results, session.get_tensor_data(w), session._runner


def test_lockstep_gives_the_numbers_of_one_thread_per_replica():
    assert runs_in_lockstep(sgd_ir(False)[0]) and not runs_in_lockstep(sgd_ir(True)[0])
    lockstep_results, lockstep_w, lockstep_runner = run(False)
    threaded_results, threaded_w, threaded_runner = run(True)
    assert lockstep_runner._lockstep is not None and threaded_runner._lockstep is None
    for ours, theirs in zip(lockstep_results, threaded_results):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(lockstep_w, threaded_w)
    assert not np.array_equal(lockstep_w, np.ones((3, 1), np.float32))


def test_each_group_combines_its_values_once_and_the_members_share_the_result():
    communicator = Communicator(range(3))
    calls, results = [], [None] * 3

    def combine(values):
        calls.append(len(values))
        return np.sum(values, axis=0)

    def replica(r):
        results[r] = communicator.combine(("op", (0, 1, 2), 0), "op", r, [0, 1, 2], np.full(2, r + 1.0),
                                          combine)
    threads = [threading.Thread(target=replica, args=(r,)) for r in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [3]
    assert results[0] is results[1] is results[2]
    np.testing.assert_array_equal(results[0], [6.0, 6.0])


def test_a_failing_combination_fails_its_replica_and_stops_the_others():
    communicator = Communicator(range(2))
    errors = [None, None]

    def combine(values):
        raise FloatingPointError("overflow")

    def replica(r):
        try:
            communicator.combine(("op", (0, 1), 0), "op", r, [0, 1], np.zeros(1), combine)
        except BaseException as error:
            errors[r] = error
    threads = [threading.Thread(target=replica, args=(r,)) for r in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kinds = sorted(type(e).__name__ for e in errors)
    assert kinds == ["FloatingPointError", "ReplicaAborted"]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_any_number_of_lockstep_threads_gives_the_same_numbers(threads, monkeypatch):
    import workbench.runtime.session as session_module

    monkeypatch.setattr(session_module, "lockstep_threads", lambda ir, replicas, instances=1: threads)
    results, w, runner = run(False)
    assert len(runner._lockstep.groups) == threads
    reference, reference_w, _ = run(True)
    np.testing.assert_array_equal(results[-1], reference[-1])
    np.testing.assert_array_equal(w, reference_w)


def test_a_profiled_lockstep_run_times_each_replica_in_order_with_calls_around_their_ops():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([16], popxl.float32, name="x"))
        total = ops.collectives.replicated_all_reduce(x)
        body = ir.create_graph(lambda t: t * 0.5 + 1.0, total)
        (y,) = ops.repeat(body, 3, total)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    stream, data = ir.get_all_h2d_streams().pop(), np.arange(32, dtype=np.float32).reshape(2, 16)
    with popxl.Session(ir, "ipu_model") as session:
        assert session._runner._lockstep is not None
        plain = session.run({stream: data})
        unprofiled = session.last_trace
        session.profile = True
        profiled_outputs = session.run({stream: data})
        profiled = session.last_trace
    for expected, got in zip(plain.values(), profiled_outputs.values()):
        np.testing.assert_array_equal(got, expected)
    assert profiled.profiled and len(profiled) == len(unprofiled)
    for replica in range(2):
        events = profiled.of(replica=replica)
        leaves = [e for e in events if e.kind != "control"]
        assert all(a.end_seconds <= b.start_seconds for a, b in zip(leaves, leaves[1:]))
        for event in events:
            if event.parent is not None:
                parent = profiled.events[event.parent]
                assert parent.start_seconds <= event.start_seconds <= event.end_seconds <= parent.end_seconds


def matmul_ir(size: int):
    """Replicas that all-reduce the product of two ``size`` x ``size`` matrices."""
    ir = popxl.Ir(replication=REPLICAS)
    with ir.main_graph:
        a = popxl.variable(np.ones((size, size), np.float32), name="a")
        ops.collectives.replicated_all_reduce(a @ a)
    return ir


def test_small_matrix_products_run_every_replica_in_one_thread_and_large_ones_in_one_per_core(monkeypatch):
    import workbench.runtime.lockstep as lockstep

    monkeypatch.setattr(lockstep.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    small, large = matmul_ir(64), matmul_ir(512)
    assert lockstep.mean_matmul_flops(small) == 2 * 64 ** 3 < lockstep.PARALLEL_MATMUL_FLOPS
    assert lockstep.mean_matmul_flops(large) == 2 * 512 ** 3 >= lockstep.PARALLEL_MATMUL_FLOPS
    assert lockstep.lockstep_threads(small, REPLICAS) == 1
    assert lockstep.lockstep_threads(large, REPLICAS) == 3
    assert lockstep.lockstep_threads(large, REPLICAS, instances=2) == 1
    with popxl.Session(large, "ipu_model") as session:
        assert len(session._runner._lockstep.groups) == 3
    with popxl.Session(small, "ipu_model") as session:
        assert len(session._runner._lockstep.groups) == 1
