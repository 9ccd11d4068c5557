"""An interrupt at any line of the caller's part of a run in worker processes (posting the run, running
its own replicas, hearing the workers, taking their outputs, counting the run) leaves every replica's
weights and buffers as before the run, or one whole run later where the run counted: the worker
processes' replicas too, whose weights the caller does not restore itself."""
import os
import sys

import numpy as np
import pytest

import popxl
from support.interrupts import LineInterrupt, interrupted, interrupts_raise  # noqa: F401 - a fixture
from test_interrupts import check_all_or_nothing, counting_ir, device_state
from workbench.runtime.options import RunOptions
from workbench.runtime.replication.processes import ProcessRunner, _Link
from workbench.runtime.replication.replicas import ReplicaRunner
from workbench.runtime.session import Session

pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="worker processes are forked"),
              pytest.mark.usefixtures("interrupts_raise")]
REPLICAS, ITERATIONS = 4, 3
# The caller's code around its replicas: lines only these functions run themselves are counted (how
# long the caller waits for the workers changes nothing of the count).
AROUND_THE_REPLICAS = {f.__code__ for f in (Session.run_with_outputs, Session._undo, ProcessRunner.run,
                                            ProcessRunner._ended_here, ProcessRunner._hear_workers,
                                            ProcessRunner.undo, ProcessRunner._take_results,
                                            ReplicaRunner.run, ReplicaRunner._run_instance, _Link.run_ended)}


@pytest.mark.parametrize("unrolled", [True, False], ids=["unrolled", "repeat"])
def test_an_interrupt_at_any_line_around_the_replicas_leaves_every_process_all_or_nothing(unrolled):
    ir, w, r, buffer, _ = counting_ir(replicas=REPLICAS, iterations=ITERATIONS, unrolled=unrolled)
    step = float(REPLICAS * ITERATIONS)
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas="processes", cores=2)) as session:
        session.progress = False
        assert isinstance(session.executable.runner, ProcessRunner)
        values = session.executable.device_values
        assert (values[2][w] is values[3][w]) == unrolled  # the worker's replicas share the weight unrolled
        session.run()  # the workers start
        counter = LineInterrupt(None, "flag", AROUND_THE_REPLICAS)
        sys.settrace(counter)
        try:
            session.run()
        finally:
            sys.settrace(None)
        runs, stopped = 2, 0
        for at in range(1, counter.count + 1):
            before, count = device_state(session, w, r, buffer), session.run_count
            stopped += interrupted(session.run, LineInterrupt(at, ("signal", "flag")[at % 2], AROUND_THE_REPLICAS))
            completed = session.run_count > count
            check_all_or_nothing(before, device_state(session, w, r, buffer), step, completed)
            runs += completed
        assert stopped > counter.count // 2, f"only {stopped} of {counter.count} runs were interrupted inside"
        total = np.full(8, runs * step, np.float32)
        np.testing.assert_array_equal(session.get_tensor_data(w), total)
        np.testing.assert_array_equal(session.get_tensor_data(r), total)
        session.run()  # and the next run is whole
        np.testing.assert_array_equal(session.get_tensor_data(w), total + step)
