"""Replicas taking turns in one thread: the numbers of one thread per replica, collectives anywhere
(in called graphs and loops too), and replicas that cannot meet are told at once."""
import gc
import os
import weakref

import numpy as np
import pytest

import popxl
import popxl.ops as ops
import workbench.runtime.replication.replicas as replicas_module
from support.strategies import session as session_of
from workbench.runtime import RunOptions
from workbench.runtime.replication.communicator import CollectiveMismatchError, ReplicaAborted
from workbench.runtime.replication.processes import ProcessRunner
from workbench.runtime.replication.turns import TurnTakingCommunicator

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


def run(collective_in_subgraph: bool, threads: bool):
    ir, x_stream, out, w = sgd_ir(collective_in_subgraph)
    data = np.random.default_rng(0).standard_normal((2, REPLICAS, 2, 3)).astype(np.float32)
    with session_of(ir, threads) as session:
        assert session.executable.runner.threaded == threads
        results = [session.run({x_stream: data})[out] for _ in range(2)]
        return results, session.get_tensor_data(w)


@pytest.mark.parametrize("collective_in_subgraph", [False, True], ids=["main graph", "called graph"])
def test_taking_turns_gives_the_numbers_of_one_thread_per_replica(collective_in_subgraph):
    turns_results, turns_w = run(collective_in_subgraph, False)
    threaded_results, threaded_w = run(collective_in_subgraph, True)
    for ours, theirs in zip(turns_results, threaded_results):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(turns_w, threaded_w)
    assert not np.array_equal(turns_w, np.ones((3, 1), np.float32))


def take_turns(replicas, work):
    """Run ``work(communicator, replica)`` for each replica, taking turns; each one's error or result."""
    communicator = TurnTakingCommunicator(replicas)
    outcomes = {}

    def replica_work(r):
        try:
            outcomes[r] = work(communicator, r)
        except BaseException as error:
            outcomes[r] = error
            raise
    raised = None
    try:
        communicator.take_turns([lambda r=r: replica_work(r) for r in replicas])
    except BaseException as error:
        raised = error
    return outcomes, raised


def test_each_group_combines_its_values_once_and_the_members_share_the_result():
    calls = []

    def combine(values):
        calls.append(len(values))
        return np.sum(values, axis=0)
    outcomes, raised = take_turns(range(3), lambda c, r: c.combine(("op", (0, 1, 2), 0), "op", r, [0, 1, 2],
                                                                   np.full(2, r + 1.0), combine))
    assert raised is None and calls == [3]
    assert outcomes[0] is outcomes[1] is outcomes[2]
    np.testing.assert_array_equal(outcomes[0], [6.0, 6.0])


def test_an_exchange_gives_every_member_every_value_in_member_order_in_a_list_of_its_own():
    outcomes, raised = take_turns([5, 2], lambda c, r: c.exchange(("op", (2, 5), 0), "op", r, [2, 5], r * 10))
    assert raised is None and outcomes == {5: [20, 50], 2: [20, 50]}
    assert outcomes[5] is not outcomes[2]


def test_a_failing_combination_fails_its_replica_and_stops_the_others():
    def combine(values):
        raise FloatingPointError("overflow")
    outcomes, raised = take_turns(range(2), lambda c, r: c.combine(("op", (0, 1), 0), "op", r, [0, 1],
                                                                   np.zeros(1), combine))
    assert isinstance(raised, FloatingPointError)
    assert isinstance(outcomes[0], ReplicaAborted) and "another replica failed" in str(outcomes[0])
    assert outcomes[1] is raised


def test_replicas_at_different_collectives_are_told_at_once():
    def work(c, r):
        label = "first" if r == 0 else "second"
        return c.combine((label, (0, 1), 0), label, r, [0, 1], np.zeros(1), sum)
    outcomes, raised = take_turns(range(2), work)
    assert isinstance(raised, CollectiveMismatchError)
    assert str(raised) == ("the replicas reached different collectives and wait on each other: replica 0 at "
                           "first; replica 1 at second")
    assert all(isinstance(outcomes[r], CollectiveMismatchError) for r in range(2))


def test_a_replica_waiting_for_one_that_finished_without_the_collective_is_told_which():
    def work(c, r):
        if r == 1:
            return c.exchange(("op", (0, 1), 0), "op (all_gather)", r, [0, 1], r)
        return "done"
    outcomes, raised = take_turns(range(2), work)
    assert outcomes[0] == "done"
    assert isinstance(raised, CollectiveMismatchError) and raised is outcomes[1]
    assert "replica 1 waits at op (all_gather) for replica(s) [0], which finished the run" in str(raised)


def test_an_interrupt_in_one_replica_unwinds_every_other_before_it_is_raised():
    unwound = []

    def work(c, r):
        try:
            c.exchange(("op", (0, 1, 2), 0), "op", r, [0, 1, 2], r)
            if r == 0:
                raise KeyboardInterrupt
            c.exchange(("op", (0, 1, 2), 1), "op", r, [0, 1, 2], r)
        finally:
            unwound.append(r)
    outcomes, raised = take_turns(range(3), work)
    assert isinstance(raised, KeyboardInterrupt)
    assert sorted(unwound) == [0, 1, 2]
    assert all(isinstance(outcomes[r], ReplicaAborted) and "the run was interrupted" in str(outcomes[r])
               for r in (1, 2))


def test_a_session_whose_replicas_take_branches_with_other_collectives_fails_at_once():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x = popxl.variable(np.ones(4, np.float32), name="x")
        index = ops.host_load(popxl.h2d_stream([], popxl.int32, name="branch"))

        def reduce_twice(t: popxl.TensorByRef):
            ops.collectives.replicated_all_reduce_(t)
            ops.collectives.replicated_all_reduce_(t)

        def reduce_once(t: popxl.TensorByRef):
            ops.collectives.replicated_all_reduce_(t)
        twice, once = ir.create_graph(reduce_twice, x), ir.create_graph(reduce_once, x)
        ops.conditional(index > 0, twice, once, then_inputs=[x], else_inputs=[x])
    stream = ir.get_all_h2d_streams().pop()
    with popxl.Session(ir, "ipu_model") as session:
        assert not session.executable.runner.threaded
        with pytest.raises(CollectiveMismatchError, match=r"reached different collectives and wait on each "
                           r"other: replica 0 at replicated_all_reduce_.5 \(replicated_all_reduce_\); replica 1 at "
                           r"replicated_all_reduce_.3"):
            session.run({stream: np.array([0, 1], np.int32)})
        np.testing.assert_array_equal(session.get_tensor_data(x), np.ones(4, np.float32))
        session.run({stream: np.array([1, 1], np.int32)})
        np.testing.assert_array_equal(session.get_tensor_data(x), np.full(4, 4.0, np.float32))


def matmul_ir(size: int):
    """Replicas that all-reduce the product of two ``size`` x ``size`` matrices."""
    ir = popxl.Ir(replication=REPLICAS)
    with ir.main_graph:
        a = popxl.variable(np.ones((size, size), np.float32), name="a")
        ops.collectives.replicated_all_reduce(a @ a)
    return ir


def test_small_matrix_products_take_turns_in_one_thread_and_large_ones_run_on_several_cores():
    small, large = matmul_ir(64), matmul_ir(512)
    assert replicas_module.mean_matmul_flops(small) == 2 * 64 ** 3 < replicas_module.PARALLEL_MATMUL_FLOPS
    assert replicas_module.mean_matmul_flops(large) == 2 * 512 ** 3 >= replicas_module.PARALLEL_MATMUL_FLOPS
    assert not replicas_module.replicas_in_threads(small, cores=3)
    assert replicas_module.replicas_in_threads(large, cores=3)
    assert not replicas_module.replicas_in_threads(large, instances=2, cores=3)  # one core each
    assert not replicas_module.replicas_in_threads(large, cores=1)
    three_cores = RunOptions(cores=3, check_kernels=True)
    with popxl.Session(large, "ipu_model", options=three_cores) as session:  # processes, where they can be had
        runner = session.executable.runner
        assert isinstance(runner, ProcessRunner) if hasattr(os, "fork") else runner.threaded
    with popxl.Session(large, "ipu_model", options=three_cores.with_changes(replicas="threads")) as session:
        assert session.executable.runner.threaded
    with popxl.Session(small, "ipu_model", options=three_cores) as session:
        assert not session.executable.runner.threaded
    with popxl.Session(large, "ipu_model", options=three_cores.with_changes(replicas="turns")) as session:
        assert not session.executable.runner.threaded
    with popxl.Session(small, "ipu_model", options=three_cores.with_changes(replicas="threads")) as session:
        assert session.executable.runner.threaded


def test_turns_serve_the_next_run_and_keep_nothing_of_the_last_alive():
    class Work:
        def __init__(self, communicator, replica):
            self.communicator, self.replica, self.result = communicator, replica, None

        def __call__(self):
            self.result = self.communicator.combine(("op", (0, 1), 0), "op", self.replica, [0, 1], 1, sum)
    kept = []
    for _ in range(2):
        communicator = TurnTakingCommunicator(range(2))
        works = [Work(communicator, r) for r in range(2)]
        communicator.take_turns(works)
        assert [work.result for work in works] == [2, 2]
        kept += [weakref.ref(work) for work in works]
        del works, communicator
    gc.collect()
    assert [ref() for ref in kept] == [None] * 4


def test_a_run_after_an_interrupted_one_starts_every_replica_afresh():
    def interrupted(c, r):
        c.exchange(("op", (0, 1), 0), "op", r, [0, 1], r)
        if r == 1:
            raise KeyboardInterrupt
        c.exchange(("op", (0, 1), 1), "op", r, [0, 1], r)
    _, raised = take_turns(range(2), interrupted)
    assert isinstance(raised, KeyboardInterrupt)
    outcomes, raised = take_turns(range(3), lambda c, r: c.exchange(("op", (0, 1, 2), 0), "op", r, [0, 1, 2], r))
    assert raised is None and outcomes == {r: [0, 1, 2] for r in range(3)}
