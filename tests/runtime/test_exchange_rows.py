"""A value written straight into its row of an exchange window is exchanged without another copy, and
replicas in processes gather their buckets there; a bucket whose outputs are read before the next
meeting of the replicas leaves them where the exchange reduced them. The same bits as NumPy's, always."""
import os

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.analysis.schedule import schedule
from workbench.runtime.job.mpi_window import ExchangeWindow
from workbench.runtime.options import RunOptions
from workbench.runtime.replication.buckets import bucket_runs, gathered_all_reduces, read_before_next_meeting
from workbench.runtime.replication.processes import ProcessRunner
from test_buckets import check_run, data, reducing_ir


def window(part: int, parts: int = 1, part_bytes: int = 256, memory=None):
    memory = np.zeros(ExchangeWindow.size(parts, part_bytes), np.uint8) if memory is None else memory
    return ExchangeWindow(memory, part, parts, part_bytes)


def test_rows_written_before_an_exchange_are_what_it_gathers_without_a_copy():
    memory = np.zeros(ExchangeWindow.size(2, 256), np.uint8)
    theirs, ours = window(0, 2, memory=memory), window(1, 2, memory=memory)
    rows = [ours.row(index, 2, (3, 4), np.float32) for index in range(2)]
    for index, row in enumerate(rows):
        row[...] = np.arange(12, dtype=np.float32).reshape(3, 4) + 100 * index
    their_values = [np.full((3, 4), -1.0, np.float32)] * 2
    # The other part arrives at the barrier while this one waits there.
    everyone = ours.allgather(rows, "op occurrence 0",
                              lambda: theirs.allgather(their_values, "op occurrence 0", lambda: None))
    assert everyone.shape == (4, 3, 4)
    np.testing.assert_array_equal(everyone[:2], -1.0)
    for index, row in enumerate(rows):
        assert np.shares_memory(everyone[2 + index], row)
        np.testing.assert_array_equal(everyone[2 + index], np.arange(12).reshape(3, 4) + 100 * index)


def test_values_elsewhere_are_copied_into_their_rows_and_the_next_exchange_takes_the_other_half():
    ours = window(part=0)
    first_rows = [ours.row(index, 2, (5,), np.float64) for index in range(2)]
    values = [np.full(5, 1.5), np.full(5, -2.0)]
    everyone = ours.allgather(values, "op occurrence 0", lambda: None)
    np.testing.assert_array_equal(everyone[:2], np.stack(values))
    np.testing.assert_array_equal(first_rows[1], values[1])
    second_row = ours.row(0, 2, (5,), np.float64)
    assert not np.shares_memory(second_row, first_rows[0])  # the other half: the last exchange stays readable


def test_a_row_larger_than_the_part_is_refused():
    assert window(part=0, part_bytes=64).row(0, 2, (5,), np.float64) is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="worker processes are forked")
@pytest.mark.parametrize("replicas, cores", [(4, 2), (8, 4)])
def test_replicas_in_processes_gather_their_buckets_in_the_exchange_rows(monkeypatch, replicas, cores):
    stacked = []  # the values the caller's process copies into its part of an exchange (stacked there)
    stack = np.stack
    monkeypatch.setattr(np, "stack", lambda values, *args, out=None, **kwargs: (
        out is not None and stacked.append(len(values))) or stack(values, *args, out=out, **kwargs))
    ir, streams, outputs, _ = reducing_ir(replicas)
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas="processes", cores=cores)) as session:
        assert isinstance(session.executable.runner, ProcessRunner)
        for seed in range(3):
            check_run(session, streams, outputs, data(replicas, seed))  # NumPy's mean, bit for bit
    # Buckets are written in their rows; only the lone all-reduce of one element is copied there.
    assert stacked == [replicas // cores] * 3


LARGE = [(100, 100), (3,), (1,), (90, 100), (5,)]  # the lone (1,) between two buckets of two


def two_buckets_ir(replicas: int):
    """Every value all-reduced first, then each stored: the first bucket's outputs are read after the
    second bucket's exchange, which the exchange's halves take turns for."""
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph, popxl.in_sequence():
        streams = [popxl.h2d_stream(shape, popxl.float32, name=f"g{i}") for i, shape in enumerate(LARGE)]
        outputs = [popxl.d2h_stream(shape, popxl.float32, name=f"sum{i}") for i, shape in enumerate(LARGE)]
        loaded = [ops.host_load(s) for s in streams]
        reduced = [ops.collectives.replicated_all_reduce(value, op="add") for value in loaded]
        for out, value in zip(outputs, reduced):
            ops.host_store(out, value)
    return ir, streams, outputs


def test_only_a_bucket_whose_outputs_are_read_before_the_next_meeting_may_leave_them_in_the_exchange():
    ir, _, _ = two_buckets_ir(4)
    steps = gathered_all_reduces(schedule(ir.main_graph))
    runs = bucket_runs(steps, lambda op: False)
    assert [[steps[i].inputs[0].shape for i in run] for run in runs] == [[(100, 100), (3,)], [(90, 100), (5,)]]
    assert [read_before_next_meeting(steps, run) for run in runs] == [False, True]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="worker processes are forked")
@pytest.mark.parametrize("replicas, cores", [(2, 2), (4, 2)])
def test_buckets_read_before_or_after_the_next_exchanges_give_numpys_sums_in_processes(replicas, cores):
    ir, streams, outputs = two_buckets_ir(replicas)
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas="processes", cores=cores)) as session:
        for seed in range(3):
            rng = np.random.default_rng(seed)
            values = [rng.standard_normal((replicas, *shape)).astype(np.float32) for shape in LARGE]
            result = session.run(dict(zip(streams, values)))
            for out, value in zip(outputs, values):
                for replica_value in result[out]:
                    np.testing.assert_array_equal(replica_value, np.sum(value, axis=0))
