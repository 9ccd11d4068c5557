"""Interrupting a weight write (Ctrl-C during ``write_variables_data``) changes all of it or none of it.

Each try writes new values into many variables of a replicated session while an interrupt lands at a
random moment, then checks that the host copy (what ``get_tensor_data`` shows), every replica's copy
and what the next run computes from are the same values: all the old ones or all the new ones.

The moment is drawn among the lines the write executes (counted by a trace function, which raises
the interrupt as SIGINT or as Jupyter's flag when the drawn line comes), so every part of the write is
hit, on any machine, in a fraction of a second; a second test lands interrupts by a timer thread.
"""
import gc
import sys
import time

import numpy as np
import popxl
import popxl.ops as ops
import pytest
from support.interrupts import LineInterrupt, interrupted, interrupts_raise  # noqa: F401 - a fixture
from support.strategies import session as session_of

REPLICAS, VARIABLES, SIZE, TRIES = 2, 64, 4, 100
pytestmark = pytest.mark.usefixtures("interrupts_raise")


def reading_ir():
    """``VARIABLES`` variables that a run only reads: it returns them all, concatenated."""
    ir = popxl.Ir(replication=REPLICAS)
    with ir.main_graph:
        ws = [popxl.variable(np.zeros(SIZE, np.float32), name=f"w{i}") for i in range(VARIABLES)]
        stream = popxl.d2h_stream([VARIABLES * SIZE], popxl.float32, name="all")
        ops.host_store(stream, ops.concat(ws, 0))
    return ir, ws, stream


def values_for(number: int) -> dict:
    """The ``number``-th write: every variable gets a value made of ``number`` and its own index."""
    return {i: np.full(SIZE, number * 1000.0 + i, np.float32) for i in range(VARIABLES)}


def written_number(ws: list, host: dict, replicas: list, outputs: np.ndarray) -> int:
    """Which write the session holds, checked to be the same whole write on the host, on every replica
    and in what a run computes."""
    expected = np.stack([host[w] for w in ws])
    number = int(round(float(expected[0, 0]) / 1000.0))
    np.testing.assert_array_equal(expected, np.stack(list(values_for(number).values())),
                                  err_msg="the host copy holds parts of different writes")
    for replica, values in enumerate(replicas):
        np.testing.assert_array_equal(np.stack([values[w] for w in ws]), expected,
                                      err_msg=f"replica {replica} differs from the host copy")
    computed = outputs.reshape(REPLICAS, VARIABLES, SIZE)
    np.testing.assert_array_equal(computed, np.broadcast_to(expected, computed.shape),
                                  err_msg="the run computed from other values than the host copy shows")
    return number


def test_interrupts_at_every_moment_of_a_weight_write_change_all_of_it_or_none():
    ir, ws, stream = reading_ir()
    rng = np.random.default_rng(1)
    with session_of(ir) as session:
        session.progress = False
        counter = LineInterrupt(None)
        session.run()  # each try writes after a run, so the write first refreshes the host copy
        first = {ws[i]: v for i, v in values_for(1).items()}
        interrupted(lambda: session.write_variables_data(first), counter)
        lines = counter.count
        held, outcomes = 1, {"old": 0, "new": 0}
        for number in range(2, TRIES + 2):
            session.run()
            interrupt = LineInterrupt(int(rng.integers(1, lines + 1)), ("signal", "flag")[number % 2])
            writes = {ws[i]: v for i, v in values_for(number).items()}
            during = interrupted(lambda: session.write_variables_data(writes), interrupt)
            host = session.get_tensors_data(ws)  # the host copy, read before anything refreshes it
            replicas = [dict(values) for values in session.executable.device_values]
            now = written_number(ws, host, replicas, session.run()[stream])
            assert now in (held, number), f"the session holds write {now}, neither the old {held} nor the new {number}"
            assert during, f"try {number}: the interrupt at line {interrupt.at} of {lines} did not reach the write"
            outcomes["new" if now == number else "old"] += 1
            held = now
        # The moments are spread over the whole write: some before it takes effect, some after.
        assert min(outcomes.values()) >= TRIES // 10, outcomes


@pytest.mark.parametrize("threads", [False, True], ids=["taking turns", "replica threads"])
def test_interrupts_by_a_timer_during_weight_writes_change_all_or_nothing(threads):
    # The timer thread takes the interpreter lock at once, so the interrupt lands inside the write. No
    # collection meanwhile: an interrupt landing in a finalizer would be ignored.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    gc.collect()
    gc.disable()
    try:
        ir, ws, stream = reading_ir()
        rng = np.random.default_rng(2)
        with session_of(ir, threads) as session:
            session.progress = False
            start = time.perf_counter()
            for number in range(3):
                session.write_variables_data({ws[i]: v for i, v in values_for(number).items()})
            whole = (time.perf_counter() - start) / 3
            held = 2
            for number in range(3, 3 + TRIES // 4):
                writes = {ws[i]: v for i, v in values_for(number).items()}
                interrupted(lambda: session.write_variables_data(writes), float(rng.uniform(0, whole)))
                host = session.get_tensors_data(ws)
                replicas = [dict(values) for values in session.executable.device_values]
                now = written_number(ws, host, replicas, session.run()[stream])
                assert now in (held, number), f"the session holds write {now}, neither {held} nor {number}"
                held = now
    finally:
        gc.enable()
        sys.setswitchinterval(switch_interval)
