"""All-reduces of one step are exchanged together (``replication/buckets.py``): the schedule puts
them side by side, a plain run in processes exchanges each bucket once, and every element keeps the
bits of its own all-reduce, in processes as in turns (which exchange op by op), stepped and profiled."""
import os

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.runtime.options import RunOptions
from workbench.runtime.replication.buckets import bucket_runs, stacked_reducer
from workbench.runtime.replication.process_channel import consecutive
from workbench.runtime.replication.turns import TurnTakingCommunicator

SHAPES = [(40, 30), (3,), (1,), (300, 40), (7, 5)]  # (1,) stays alone: NumPy stacks single values otherwise


def reducing_ir(replicas: int, written_between: bool = False, grouping: tuple = ()):
    """Per replica values from the host, each all-reduced ('mean') and stored, then applied to a
    weight; with ``written_between`` the last value is scaled in place after the first all-reduce;
    ``grouping`` (stride, group size): within those groups only."""
    ir = popxl.Ir(replication=replicas)
    group = ir.replica_grouping(*grouping) if grouping else None
    streams, outputs, weights = [], [], []
    with ir.main_graph, popxl.in_sequence():
        for i, shape in enumerate(SHAPES):
            streams.append(popxl.h2d_stream(shape, popxl.float32, name=f"g{i}"))
            outputs.append(popxl.d2h_stream(shape, popxl.float32, name=f"mean{i}"))
            weights.append(popxl.variable(np.ones(shape, np.float32), name=f"w{i}"))
        values = [ops.host_load(s) for s in streams]
        for i, (value, out, weight) in enumerate(zip(values, outputs, weights)):
            if written_between and i == len(values) - 1:
                value = ops.scaled_add_(value, value, a=2.0, b=0.0)
            reduced = ops.collectives.replicated_all_reduce(value, op="mean", group=group)
            ops.host_store(out, reduced)
            ops.scaled_add_(weight, reduced, b=-0.5)
    return ir, streams, outputs, weights


def data(replicas: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((replicas, *shape)).astype(np.float32) for shape in SHAPES]


def expected_means(values: list, written_between: bool = False) -> list:
    """NumPy's mean over the replicas, element by element in replica order."""
    values = list(values)
    if written_between:
        values[-1] = values[-1] * np.float32(2.0)
    return [np.mean(v, axis=0) for v in values]


def check_run(session, streams, outputs, values, written_between=False):
    result = session.run(dict(zip(streams, values)))
    for out, mean in zip(outputs, expected_means(values, written_between)):
        for replica_value in result[out]:
            np.testing.assert_array_equal(replica_value, mean)


@pytest.mark.parametrize("replicas, strategy, cores", [(4, "turns", 2), (16, "turns", 2)]
                         + ([(4, "processes", 4), (8, "processes", 4), (16, "processes", 2)]
                            if hasattr(os, "fork") else []))
def test_the_all_reduces_of_a_step_are_one_bucket_with_the_bits_of_each_alone(replicas, strategy, cores):
    ir, streams, outputs, weights = reducing_ir(replicas)
    options = RunOptions(replicas=strategy, cores=cores)
    with popxl.Session(ir, "ipu_model", options=options) as session:
        steps = session.graph_code[ir.main_graph].steps
        runs = bucket_runs(steps, lambda op: False)
        sizes = [[steps[i].inputs[0].shape for i in run] for run in runs]
        assert sizes == [[(40, 30), (3,)], [(300, 40), (7, 5)]]  # side by side; (1,) splits them
        for seed in range(2):
            check_run(session, streams, outputs, data(replicas, seed))
        trained = session.get_tensors_data(weights)
    means = [expected_means(data(replicas, seed)) for seed in range(2)]
    for i, weight in enumerate(weights):
        expected = np.ones(SHAPES[i], np.float32)
        for step in means:
            expected = expected + np.float32(-0.5) * step[i]
        np.testing.assert_allclose(trained[weight], expected, rtol=1e-6)


@pytest.mark.parametrize("strategy, replicas, meetings", [("turns", 4, 5)]
                         + ([("processes", 4, 3), ("processes", 8, 3), ("processes", 64, 5)]
                            if hasattr(os, "fork") else []))
def test_a_bucket_meets_the_replicas_once_in_processes_of_few_replicas(monkeypatch, strategy, replicas, meetings):
    combined = []
    plain = TurnTakingCommunicator.combine

    def counting(self, key, *args, **kwargs):
        combined.append(key.op.name)
        return plain(self, key, *args, **kwargs)
    monkeypatch.setattr(TurnTakingCommunicator, "combine", counting)
    ir, streams, outputs, _ = reducing_ir(replicas)
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas=strategy, cores=4)) as session:
        check_run(session, streams, outputs, data(replicas))
    here = replicas if strategy == "turns" else replicas // 4  # the replicas of this process
    # in processes of up to RunOptions.bucket_replicas replicas: two buckets and the single value; of more: op by op
    assert len(combined) == here * meetings


def test_an_all_reduce_stays_after_a_step_that_writes_its_input():
    ir, streams, outputs, _ = reducing_ir(4, written_between=True)
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas="processes", cores=4)) as session:
        steps = session.graph_code[ir.main_graph].steps
        write = next(i for i, op in enumerate(steps) if op.type == "scaled_add_" and op.inputs[0] is op.inputs[1])
        reduces = [i for i, op in enumerate(steps) if op.type == "replicated_all_reduce"]
        assert reduces[0] < write < reduces[-1] and steps[reduces[-1]].inputs[0] is steps[write].outputs[0]
        check_run(session, streams, outputs, data(4), written_between=True)


def test_stepped_and_profiled_runs_exchange_op_by_op_with_the_same_bits():
    ir, streams, outputs, _ = reducing_ir(4)
    strategy = "processes" if hasattr(os, "fork") else "turns"
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas=strategy, cores=4)) as session:
        values = data(4)
        session.profile = True
        check_run(session, streams, outputs, values)
        session.profile = False
        stepper = session.stepper(dict(zip(streams, values)))
        stepper.continue_()
        for out, mean in zip(outputs, expected_means(values)):
            for replica_value in stepper.outputs[out]:
                np.testing.assert_array_equal(replica_value, mean)
        check_run(session, streams, outputs, values)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="worker processes are forked")
@pytest.mark.parametrize("replicas", [2, 4])  # a process each
def test_buckets_in_processes_train_with_the_bits_of_turns(replicas):
    trained = []
    for strategy in ("turns", "processes"):
        ir, streams, outputs, weights = reducing_ir(replicas)
        with popxl.Session(ir, "ipu_model", options=RunOptions(replicas=strategy, cores=replicas)) as session:
            for seed in range(3):
                session.run(dict(zip(streams, data(replicas, seed))))
            trained.append([session.get_tensor_data(w) for w in weights])
    for turns, processes in zip(*trained):
        np.testing.assert_array_equal(processes, turns)


def doubling_ir(replicas: int):
    """Each value all-reduced ('add'), then the reduced value doubled in place and stored: a bucket
    whose outputs are written, which the replicas of a process must not share."""
    ir = popxl.Ir(replication=replicas)
    streams, outputs = [], []
    with ir.main_graph, popxl.in_sequence():
        for i, shape in enumerate(SHAPES):
            streams.append(popxl.h2d_stream(shape, popxl.float32, name=f"g{i}"))
            outputs.append(popxl.d2h_stream(shape, popxl.float32, name=f"doubled{i}"))
        loaded = [ops.host_load(s) for s in streams]
        reduced = [ops.collectives.replicated_all_reduce(value, op="add") for value in loaded]
        for value, out in zip(reduced, outputs):
            ops.host_store(out, ops.scaled_add_(value, value, a=1.0, b=1.0))
    return ir, streams, outputs


@pytest.mark.skipif(not hasattr(os, "fork"), reason="worker processes are forked")
@pytest.mark.parametrize("replicas, cores", [(4, 2), (16, 2), (8, 4)])  # several replicas a process
def test_buckets_of_several_replicas_a_process_keep_the_bits_of_numpy_and_turns(replicas, cores):
    trained = []
    for strategy in ("turns", "processes"):
        ir, streams, outputs, weights = reducing_ir(replicas)
        with popxl.Session(ir, "ipu_model", options=RunOptions(replicas=strategy, cores=cores,
                                                                        bucket_replicas=replicas)) as session:
            for seed in range(3):  # each run's bucket result is a new one
                check_run(session, streams, outputs, data(replicas, seed))
            trained.append([session.get_tensor_data(w) for w in weights])
    for turns, processes in zip(*trained):
        np.testing.assert_array_equal(processes, turns)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="worker processes are forked")
@pytest.mark.parametrize("stride, group_size", [(1, 4), (2, 4), (1, 8)])  # consecutive groups or strided
def test_grouped_buckets_in_processes_keep_the_bits_of_numpy_within_each_group(stride, group_size):
    ir, streams, outputs, _ = reducing_ir(8, grouping=(stride, group_size))
    assignment = ir.replica_grouping(stride, group_size).assignment
    options = RunOptions(replicas="processes", cores=2, bucket_replicas=8)
    with popxl.Session(ir, "ipu_model", options=options) as session:
        for seed in range(2):
            values = data(8, seed)
            result = session.run(dict(zip(streams, values)))
            for out, value in zip(outputs, values):
                for replica, replica_value in enumerate(result[out]):
                    members = [r for r, g in enumerate(assignment) if g == assignment[replica]]
                    assert replica_value.tobytes() == np.mean(value[members], axis=0).tobytes()


@pytest.mark.parametrize("op", ["add", "mean"])
@pytest.mark.parametrize("dtype", [popxl.float32, popxl.float64])
def test_the_stacked_reduction_of_a_bucket_has_the_bits_of_numpys(op, dtype):
    ir = popxl.Ir(replication=16)
    with ir.main_graph:
        reduced = ops.collectives.replicated_all_reduce(popxl.variable(np.zeros(5000, dtype.as_numpy())), op=op)
    all_reduce = reduced.producer
    rng = np.random.default_rng(3)
    stacked = (rng.standard_normal((16, 5000)) * 10.0 ** rng.integers(-6, 7, (16, 5000))).astype(dtype.as_numpy())
    for rows, columns in ((slice(0, 16), slice(0, 5000)), (slice(3, 11), slice(17, 4000))):
        view = stacked[rows, columns]
        out = np.empty(view.shape[1], view.dtype)
        stacked_reducer(all_reduce)(view, out)
        expected = (np.sum if op == "add" else np.mean)(np.stack(list(view)), axis=0)
        assert out.tobytes() == expected.tobytes()


def test_only_float_sums_and_means_reduce_stacked_values_and_only_consecutive_groups_form_one_view():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        floats = popxl.variable(np.zeros(3, np.float32))
        kinds = [ops.collectives.replicated_all_reduce(floats, op=op).producer for op in ("add", "mean", "max")]
        ints = ops.collectives.replicated_all_reduce(popxl.variable(np.zeros(3, np.int32)), op="add").producer
    assert [stacked_reducer(op) is not None for op in [*kinds, ints]] == [True, True, False, False]
    assert consecutive((0, 1, 2)) and consecutive((5,)) and not consecutive((0, 2, 4)) and not consecutive((1, 0))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="worker processes are forked")
def test_a_bucket_whose_outputs_are_written_gives_each_replica_of_a_process_its_own():
    ir, streams, outputs = doubling_ir(8)
    options = RunOptions(replicas="processes", cores=2, bucket_replicas=4)
    with popxl.Session(ir, "ipu_model", options=options) as session:
        for seed in range(2):
            values = data(8, seed)
            result = session.run(dict(zip(streams, values)))
            for out, value in zip(outputs, values):
                doubled = np.sum(value, axis=0) * np.float32(2.0)
                for replica_value in result[out]:
                    np.testing.assert_array_equal(replica_value, doubled)
