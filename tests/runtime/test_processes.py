"""Replicas spread over worker processes (``RunOptions(replicas='processes')``) compute the same bits as
replicas taking turns in one process, fail as they do, and leave no process behind."""
import gc
import os
import time

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.runtime.options import RunOptions
from workbench.runtime.replication.communicator import CollectiveMismatchError
from workbench.runtime.replication.process_channel import (Bells, ProcessChannel, Slots, arrival, is_shared,
                                                           results_halves, shared_zeros)
from workbench.runtime.replication.processes import ProcessRunner, split
from workbench.runtime.replication.cores import busy_threads, cores_left, free_cores
from workbench.runtime.replication.replicas import (ProcessPlan, ReplicaExecutionError, process_plan,
                                                    replica_strategy)
from support.faulty_ops import exploding_op  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="worker processes are forked")

BATCH, IN, OUT, LR = 4, 160, 128, 0.05  # OUT x IN weights: large enough to be reduced in slices


def training_ir(replicas: int, transfers: int = 1):
    """A step with an all-reduced weight gradient, a bias per group of 2 replicas (all-reduced in its
    group), a replica-sharded scale (reduce-scattered gradient, all-gathered back) and anchors: the
    loss and the activations of each replica, ``transfers`` times a run."""
    ir = popxl.Ir(replication=replicas)
    ir.num_host_transfers = transfers
    rng = np.random.default_rng(0)
    pairs = ir.replica_grouping(group_size=2)
    with ir.main_graph, popxl.in_sequence():
        x_stream = popxl.h2d_stream([BATCH, IN], popxl.float32, name="x")
        w = popxl.variable(rng.standard_normal((IN, OUT)).astype(np.float32) / 10, name="w")
        groups = (pairs.num_groups,) if pairs.num_groups > 1 else ()
        b = popxl.variable(rng.standard_normal((*groups, OUT)).astype(np.float32), name="b", replica_grouping=pairs)
        scale, shard = popxl.replica_sharded_variable(np.ones(OUT, np.float32), name="scale")
        loss_stream = popxl.d2h_stream([], popxl.float32, name="loss")
        h_stream = popxl.d2h_stream([BATCH, OUT], popxl.float32, name="h")

        def step():
            x = ops.host_load(x_stream)
            h = (x @ w + b) * ops.collectives.replicated_all_gather(shard)
            ops.host_store(h_stream, h)
            ops.host_store(loss_stream, ops.mean(h * h))
            grad_h = h * (2.0 / (BATCH * OUT))
            grad_w = ops.collectives.replicated_all_reduce(x.transpose() @ grad_h, op="mean")
            grad_b = ops.collectives.replicated_all_reduce(ops.sum(grad_h, axis=0), op="add", group=pairs)
            grad_scale = ops.collectives.replicated_reduce_scatter(ops.sum(grad_h * h, axis=0), op="add")
            ops.scaled_add_(w, grad_w, b=-LR)
            ops.scaled_add_(b, grad_b, b=-LR)
            ops.scaled_add_(shard, grad_scale, b=-LR)
        for _ in range(transfers):
            step()
    return ir, x_stream, loss_stream, h_stream, [w, b, scale]


def train(options: RunOptions, replicas: int, steps: int = 3, transfers: int = 1):
    """Outputs of every run and the weights after them."""
    ir, x_stream, loss_stream, h_stream, weights = training_ir(replicas, transfers)
    data = np.random.default_rng(1).standard_normal((steps, transfers, replicas, BATCH, IN)).astype(np.float32)
    outputs = []
    with popxl.Session(ir, "ipu_model", options=options) as session:
        runner = session.executable.runner
        # the weights of replicas in processes lie in memory the processes share, and only then
        in_processes = isinstance(runner, ProcessRunner)
        assert all(is_shared(array) == in_processes
                   for values in session.executable.device_values for array in values.values())
        for step in range(steps):
            result = session.run({x_stream: data[step] if transfers > 1 else data[step, 0]})
            outputs.append((result[loss_stream], result[h_stream]))
        trained = session.get_tensors_data(weights)
    return runner, outputs, [trained[w] for w in weights]


@pytest.mark.parametrize("replicas, cores, processes", [(4, 2, 2), (4, 4, 4), (8, 3, 2), (16, 2, 2), (2, 16, 2)])
def test_processes_train_with_the_same_bits_as_turns(replicas, cores, processes):
    turns_runner, turns_outputs, turns_weights = train(RunOptions(replicas="turns"), replicas)
    runner, outputs, weights = train(RunOptions(replicas="processes", cores=cores), replicas)
    assert isinstance(runner, ProcessRunner) and runner.processes == processes  # as many replicas in each
    assert not isinstance(turns_runner, ProcessRunner)
    for (loss, h), (turns_loss, turns_h) in zip(outputs, turns_outputs):
        np.testing.assert_array_equal(loss, turns_loss)
        np.testing.assert_array_equal(h, turns_h)
    for weight, turns_weight in zip(weights, turns_weights):
        np.testing.assert_array_equal(weight, turns_weight)
    assert not np.array_equal(weights[0], training_ir(replicas)[4][0].host_data)  # it did train


def test_several_transfers_a_run_fill_every_anchor_alike():
    _, turns_outputs, turns_weights = train(RunOptions(replicas="turns"), 4, steps=2, transfers=3)
    _, outputs, weights = train(RunOptions(replicas="processes", cores=2), 4, steps=2, transfers=3)
    for (loss, h), (turns_loss, turns_h) in zip(outputs, turns_outputs):
        assert loss.shape == (3, 4) and h.shape == (3, 4, BATCH, OUT)
        np.testing.assert_array_equal(loss, turns_loss)
        np.testing.assert_array_equal(h, turns_h)
    for weight, turns_weight in zip(weights, turns_weights):
        np.testing.assert_array_equal(weight, turns_weight)


@pytest.mark.usefixtures("exploding_op")
def test_a_failing_replica_in_a_worker_is_raised_naming_it_and_every_weight_is_kept():
    from workbench.ops.registry import apply

    ir = popxl.Ir(replication=4)
    with ir.main_graph, popxl.in_sequence():
        w = popxl.variable(np.zeros(2, np.float32), name="w")
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        ops.var_updates.accumulate_(w, x)
        total = ops.collectives.replicated_all_reduce(apply("test_explode", x))
        out = popxl.d2h_stream(total.shape, total.dtype, name="total")
        ops.host_store(out, total)
    stream = ir.get_all_h2d_streams().pop()
    bad = np.ones((4, 2), np.float32)
    bad[3] = -1
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas="processes", cores=2)) as session:
        for _ in range(2):  # and again: the workers serve the next run
            with pytest.raises(ReplicaExecutionError, match=r"replica 3 failed in op .*test_explode.*negative input") \
                    as caught:
                session.run({stream: bad})
            assert caught.value.replica == 3 and caught.value.op.type == "test_explode"
            np.testing.assert_array_equal(session.get_tensor_data(w), np.zeros(2))
        good = np.ones((4, 2), np.float32)
        np.testing.assert_array_equal(session.run({stream: good})[out], np.full((4, 2), 4.0))
        np.testing.assert_array_equal(session.get_tensor_data(w), np.ones(2))


def test_replicas_in_processes_that_miss_a_collective_raise_instead_of_hanging():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        flag = ops.host_load(popxl.h2d_stream([], popxl.bool, name="flag"))
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        then_graph = ir.create_graph(lambda t: ops.collectives.replicated_all_reduce(t), x)
        else_graph = ir.create_graph(lambda t: t * 2, x)
        (y,) = ops.conditional(flag, then_graph, else_graph, [x], [x])
        out = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(out, y)
    streams = {s.name: s for s in ir.get_all_h2d_streams()}
    data = np.ones((4, 2), np.float32)
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas="processes", cores=2)) as session:
        with pytest.raises(CollectiveMismatchError, match="finished the run without reaching"):
            session.run({streams["flag"]: np.array([True, True, False, False]), streams["x"]: data})
        result = session.run({streams["flag"]: np.ones(4, bool), streams["x"]: data})
        # replica 3 runs in the worker: its branch log came back, and its trace shows the branch taken
        assert any(e.op.type == "replicated_all_reduce" for e in session.last_trace.of(replica=3))
    np.testing.assert_array_equal(result[out], np.full((4, 2), 4.0))


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def small_session(**options):
    ir, x_stream, _, _, _ = training_ir(4)
    session = popxl.Session(ir, "ipu_model", options=RunOptions(replicas="processes", cores=2, **options))
    return session, {x_stream: np.ones((4, BATCH, IN), np.float32)}


def test_workers_start_with_the_first_run_and_end_when_the_session_detaches():
    session, inputs = small_session()
    with session:
        assert session.executable.runner.worker_pids == []
        session.run(inputs)
        pids = session.executable.runner.worker_pids
        assert len(pids) == 1 and not gone(pids[0])
    assert session.executable.runner.worker_pids == [] and gone(pids[0])
    with session:  # attached again: new workers, the weights as they were left
        session.run(inputs)
        assert session.executable.runner.worker_pids != pids
    assert session.executable.runner.worker_pids == []


def test_workers_end_when_the_session_is_garbage_collected():
    session, inputs = small_session()
    session.__enter__()
    session.run(inputs)
    pids = session.executable.runner.worker_pids
    del session, inputs  # the streams lead to the Ir, which leads to its session
    gc.collect()
    assert all(gone(pid) for pid in pids)


def test_a_worker_that_dies_is_named_and_the_next_run_starts_a_new_one():
    session, inputs = small_session(instance_wait_seconds=5.0)
    with session:
        session.run(inputs)
        (pid,) = session.executable.runner.worker_pids
        os.kill(pid, 9)
        with pytest.raises(ReplicaExecutionError, match=r"replica 2 failed: its worker process ended .*signal 9"):
            session.run(inputs)
        session.run(inputs)
        assert session.executable.runner.worker_pids not in ([], [pid])


def test_a_worker_ends_when_its_parent_process_ends():
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # a process that starts a session's workers, says their pids and dies
        try:
            os.close(read)
            session, inputs = small_session()
            session.__enter__()
            session.run(inputs)
            os.write(write, " ".join(map(str, session.executable.runner.worker_pids)).encode())
        finally:
            os._exit(0)
    os.close(write)
    pids = [int(p) for p in os.read(read, 100).split()]
    os.close(read)
    os.waitpid(child, 0)
    assert pids
    deadline = time.monotonic() + 10  # a worker looks at its parent every 0.1 s; a loaded machine may delay it
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(gone(pid) for pid in pids)


def matmul_ir(size: int):
    """Replicas that all-reduce the product of two ``size`` x ``size`` matrices."""
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        a = popxl.variable(np.ones((size, size), np.float32), name="a")
        ops.collectives.replicated_all_reduce(a @ a)
    return ir


def test_auto_takes_processes_for_large_steps_with_cores_to_spare():
    large, small = matmul_ir(256), matmul_ir(64)  # 34 and 0.5 MFLOP a step
    assert replica_strategy(large, RunOptions(cores=2)) == "processes"
    assert replica_strategy(large, RunOptions(cores=1)) == "turns"
    assert replica_strategy(small, RunOptions(cores=16)) == "turns"
    assert replica_strategy(large, RunOptions(cores=2), instances=2) == "turns"
    with pytest.raises(ValueError, match="one instance of 2"):
        replica_strategy(large, RunOptions(replicas="processes"), instances=2)


def test_cores_beyond_the_processes_go_to_matrix_products_that_keep_their_bits_on_more_threads():
    assert process_plan(matmul_ir(256), RunOptions(cores=16)) == ProcessPlan(processes=4, blas_threads=4)
    assert process_plan(matmul_ir(256), RunOptions(cores=3)) == ProcessPlan(processes=2, blas_threads=1)
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        a_stream = popxl.h2d_stream([32, 784], popxl.float32, name="a")
        out_stream = popxl.d2h_stream([32, 384], popxl.float32, name="out")
        w = popxl.variable(np.random.default_rng(3).standard_normal((784, 256)).astype(np.float32), name="w")
        v = popxl.variable(np.random.default_rng(4).standard_normal((256, 384)).astype(np.float32), name="v")
        h = ops.host_load(a_stream) @ w  # a product that OpenBLAS may sum otherwise on several threads
        ops.host_store(out_stream, ops.collectives.replicated_all_reduce(h @ v))
    data = np.random.default_rng(2).standard_normal((2, 32, 784)).astype(np.float32)
    results = {}
    for strategy in ("turns", "processes"):
        with popxl.Session(ir, "ipu_model", options=RunOptions(replicas=strategy, cores=4)) as session:
            names = [binder.name for binder in session.executable.programs[0].binders]
            assert ("threads_product" in names) == (strategy == "processes")  # 2 processes of 2 threads
            results[strategy] = session.run({a_stream: data})[out_stream]
    np.testing.assert_array_equal(results["processes"], results["turns"])


def test_shares_of_replicas_are_contiguous_and_even():
    assert split(8, 3) == [range(0, 2), range(2, 5), range(5, 8)]
    assert split(4, 4) == [range(i, i + 1) for i in range(4)]


@pytest.mark.usefixtures("exploding_op")
def test_a_run_that_fails_after_the_last_collective_gives_every_replica_its_weights_back():
    from workbench.ops.registry import apply

    ir = popxl.Ir(replication=4)
    with ir.main_graph, popxl.in_sequence():
        own = ir.replica_grouping(group_size=1)  # a value per replica: the host sees each replica's
        w = popxl.variable(np.zeros((4, 2), np.float32), name="w", replica_grouping=own)
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        ops.var_updates.accumulate_(w, ops.collectives.replicated_all_reduce(x))
        out = popxl.d2h_stream([2], popxl.float32, name="y")
        ops.host_store(out, apply("test_explode", x))  # after every collective: the workers finish
    stream = ir.get_all_h2d_streams().pop()
    bad = np.ones((4, 2), np.float32)
    bad[0] = -1  # replica 0 runs in this process
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas="processes", cores=2)) as session:
        with pytest.raises(ReplicaExecutionError, match=r"replica 0 failed in op .*test_explode"):
            session.run({stream: bad})
        np.testing.assert_array_equal(session.get_tensor_data(w), np.zeros((4, 2)))
        session.run({stream: np.ones((4, 2), np.float32)})
        np.testing.assert_array_equal(session.get_tensor_data(w), np.full((4, 2), 4.0))


def test_a_stepped_run_between_runs_in_processes_moves_the_weights_the_workers_read():
    results = {}
    for strategy in ("turns", "processes"):
        ir, x_stream, loss_stream, _, weights = training_ir(4)
        data = np.random.default_rng(2).standard_normal((3, 4, BATCH, IN)).astype(np.float32)
        with popxl.Session(ir, "ipu_model", options=RunOptions(replicas=strategy, cores=2)) as session:
            losses = [session.run({x_stream: data[0]})[loss_stream]]
            stepper = session.stepper({x_stream: data[1]})
            assert stepper.continue_().finished
            losses.append(stepper.outputs[loss_stream])
            losses.append(session.run({x_stream: data[2]})[loss_stream])
            results[strategy] = losses, list(session.get_tensors_data(weights).values())
    (turns_losses, turns_weights), (losses, weights) = results["turns"], results["processes"]
    for value, turns_value in zip(losses + weights, turns_losses + turns_weights):
        np.testing.assert_array_equal(value, turns_value)


def test_auto_counts_only_the_cores_that_other_work_leaves_free():
    large = matmul_ir(256)
    assert replica_strategy(large, RunOptions(cores=4)) == "processes"  # cores given: taken as free
    assert process_plan(large, RunOptions(cores=16)).processes == 4  # one process per replica at most
    assert cores_left(16, runnable=2) == 16  # this thread and one more are not counted
    assert cores_left(16, runnable=10) == 8
    assert cores_left(2, runnable=9) == 1  # a machine busy with other work: turns
    assert 1 <= free_cores() <= len(os.sched_getaffinity(0)) and free_cores(3) == 3
    assert busy_threads("0.52 0.40 0.33 2/412 9811") == 2  # quiet: the threads runnable now
    assert busy_threads("6.73 7.14 5.92 1/900 1234") == 7  # between two bursts of other work: the last minute's
    # load, and the thread looking
    assert cores_left(2, busy_threads("6.73 7.14 5.92 1/900 1234")) == 1


def test_a_profiled_run_in_processes_traces_every_replica_with_its_clock_readings():
    ir, x_stream, _, _, _ = training_ir(4)
    inputs = {x_stream: np.ones((4, BATCH, IN), np.float32)}
    traces = {}
    for strategy in ("turns", "processes"):
        with popxl.Session(ir if strategy == "turns" else training_ir(4)[0], "ipu_model",
                           options=RunOptions(replicas=strategy, cores=2)) as session:
            session.profile = True
            session.run(inputs if strategy == "turns" else {session.ir.get_all_h2d_streams().pop(): inputs[x_stream]})
            traces[strategy] = session.last_trace
    turns, processes = traces["turns"], traces["processes"]
    for replica in range(4):  # replicas 2 and 3 ran in the worker
        events = processes.of(replica=replica)
        assert [e.op.name for e in events] == [e.op.name for e in turns.of(replica=replica)]
        assert all(e.start_seconds is not None and 0 <= e.start_seconds <= e.end_seconds < processes.seconds
                   for e in events)


def test_a_long_profiled_run_in_processes_sends_more_clock_readings_than_a_pipe_holds():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        w = popxl.variable(np.zeros(4, np.float32), name="w")

        def body(weights: popxl.TensorByRef):
            ops.var_updates.accumulate_(weights, ops.collectives.replicated_all_reduce(weights * 0.0 + 1.0))
        ops.repeat(ir.create_graph(body, w), 1500, w)
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas="processes", cores=2)) as session:
        session.profile = True
        session.run()  # 2 replicas x 1500 iterations x some 10 readings of 8 bytes from the worker: > 64 KiB
        assert len(session.last_trace.of(replica=3)) == len(session.last_trace.of(replica=0))


def test_a_process_that_arrives_and_finishes_while_another_looks_is_not_taken_for_one_that_never_came():
    slots = Slots(2)
    channel = ProcessChannel(slots, Bells(slots), shared_zeros((ProcessChannel.window_bytes(2, 64),), np.uint8),
                             results_halves(2, 64), 64, 0, lambda p: [p], 1.0)
    channel.begin(1)
    target = slots.arrived[0] = arrival(1, 1)  # process 0 waits at its first barrier of run 1

    class FinishedMeanwhile:
        """Process 1 passes the barrier and ends its run between the looks at its slots."""

        def __getitem__(self, process):
            slots.arrived[1] = target
            return int(process == 1)
    slots.finished = FinishedMeanwhile()
    channel._check_can_wait("the barrier", target)  # no CollectiveMismatchError
    slots.arrived[1] = arrival(1, 0)
    slots.finished = np.array([0, 1])
    with pytest.raises(CollectiveMismatchError, match="finished the run without reaching the barrier"):
        channel._check_can_wait("the barrier", target)
