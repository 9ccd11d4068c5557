"""Interrupting a run (Ctrl-C, Jupyter's "Interrupt kernel") stops every replica and changes nothing.

Each test interrupts the main thread (``_thread.interrupt_main``, what SIGINT does) at a random moment
of a long multi-replica run with collectives, many times, and checks that the weights and remote
buffers are exactly as before the run, that no replica goes on writing them, and that the next run
starts at once and gives the right numbers.
"""
import gc
import sys
import threading
import time
import traceback

import numpy as np
import pytest
import popxl
import popxl.ops as ops
from support.interrupts import interrupt_main, interrupts_raise, let_pending_signals_raise  # noqa: F401 - a fixture
from workbench.runtime.options import RunOptions

REPLICAS, ITERATIONS = 4, 400
pytestmark = pytest.mark.usefixtures("interrupts_raise")


def counting_ir(replicas: int = REPLICAS, iterations: int = ITERATIONS, unrolled: bool = False):
    """Each iteration adds the all-reduced sum of ones (``replicas``) to an on-chip variable and to a
    remote variable, and stores the on-chip one into a remote buffer entry: after a whole run each
    of them has grown by ``replicas * iterations``, and a partial run leaves a smaller multiple.
    Unrolled, the iterations are ops of the main graph."""
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph, popxl.in_sequence():
        buffer = popxl.remote_buffer((8,), popxl.float32, entries=2)
        w = popxl.variable(np.zeros(8, np.float32), name="w")
        r = popxl.remote_variable(np.zeros(8, np.float32), buffer, 0, name="r")

        def body(weights: popxl.TensorByRef):
            total = ops.collectives.replicated_all_reduce(weights * 0.0 + 1.0)
            ops.var_updates.accumulate_(weights, total)
            ops.remote_store(buffer, 0, ops.remote_load(buffer, 0) + total)
            ops.remote_store(buffer, 1, weights)

        if unrolled:
            for _ in range(iterations):
                body(w)
        else:
            ops.repeat(ir.create_graph(body, w), iterations, w)
        stream = popxl.d2h_stream([8], popxl.float32, name="w_out")
        ops.host_store(stream, w)
    return ir, w, r, buffer, stream


def device_state(session, w, r, buffer):
    """Every replica's on-chip weight and remote buffer, copied."""
    weights = [values[w].copy() for values in session.executable.device_values]
    buffers = [b[buffer].copy() for b in session.executable.buffers]
    return np.stack(weights), np.stack(buffers)


def interrupted_run(session, delay: float, kind: str) -> str:
    """Run once with an interrupt after ``delay`` seconds: 'during' if ``run`` raised KeyboardInterrupt,
    'outside' if the interrupt landed here, before or after ``run``, and 'none' if it came too late."""
    timer = threading.Timer(delay, interrupt_main, (kind,))
    try:
        try:
            timer.start()
            session.run()
        finally:
            timer.join()  # whatever happened, the interrupt is raised here at the latest
            let_pending_signals_raise()
    except KeyboardInterrupt as interrupt:
        timer.join()
        inside = any(frame.f_code.co_filename.endswith("session.py")
                     for frame, _ in traceback.walk_tb(interrupt.__traceback__))
        return "during" if inside else "outside"
    return "none"


def check_all_or_nothing(before, after, step: float, completed: bool) -> bool:
    """Every replica's weight and buffers as before the run, or one whole run later when the run
    completed (an interrupt may also land after that, as ``run`` returns); True if before."""
    grown = step if completed else 0.0
    np.testing.assert_array_equal(after[0], before[0] + grown)
    np.testing.assert_array_equal(after[1], before[1] + grown)
    return grown == 0.0


@pytest.mark.parametrize("strategy, unrolled", [("turns", False), ("turns", True), ("threads", False),
                                                ("processes", False), ("processes", True)],
                         ids=["taking turns", "taking turns, unrolled", "replica threads", "worker processes",
                              "worker processes, unrolled"])
def test_interrupts_at_random_moments_leave_weights_and_buffers_as_before_the_run(strategy, unrolled):
    iterations = 100 if unrolled else ITERATIONS
    ir, w, r, buffer, _ = counting_ir(iterations=iterations, unrolled=unrolled)
    rng = np.random.default_rng(0)
    step = float(REPLICAS * iterations)
    options = RunOptions(replicas=strategy, cores=2)
    with popxl.Session(ir, "ipu_model", options=options) as session:
        assert session.executable.runner.threaded == (strategy == "threads")
        assert getattr(session.executable.runner, "processes", 1) == (2 if strategy == "processes" else 1)
        # Unrolled, the replicas of one process share the weight they all update alike (``shared_weights.py``),
        # each worker process its own copy.
        values = session.executable.device_values
        assert (values[0][w] is values[1][w]) == unrolled
        assert (values[0][w] is values[-1][w]) == (unrolled and strategy != "processes")
        session.progress = False
        session.run()  # the first run starts the worker processes, if any: the next ones are timed
        durations = []
        for _ in range(3):  # the quickest of three: interrupts within it land during the runs
            start = time.perf_counter()
            session.run()
            durations.append(time.perf_counter() - start)
        whole = min(durations)
        runs, interrupts = 4, 0
        started = time.perf_counter()  # 2.5 s of tries, longer (up to 20 s) until 5 have landed inside a run
        while time.perf_counter() - started < (2.5 if interrupts >= 5 else 20.0):
            before = device_state(session, w, r, buffer)
            kind = ("signal", "flag")[interrupts % 2]
            count = session.run_count
            interrupted = interrupted_run(session, rng.uniform(0, whole), kind)
            completed = session.run_count > count
            after = device_state(session, w, r, buffer)
            time.sleep(0.002)  # a replica still running would go on writing
            for now, then in zip(device_state(session, w, r, buffer), after):
                np.testing.assert_array_equal(now, then)
            unchanged = check_all_or_nothing(before, after, step, completed)
            runs, interrupts = runs + (not unchanged), interrupts + (interrupted == "during" and not completed)
        assert interrupts >= 5, f"only {interrupts} of {runs + interrupts} runs were interrupted"
        total = np.full(8, runs * step, np.float32)
        np.testing.assert_array_equal(session.get_tensor_data(w), total)
        np.testing.assert_array_equal(session.get_tensor_data(r), total)
        # Usable at once: the next run takes its usual time and gives the right numbers.
        start = time.perf_counter()
        session.run()
        assert time.perf_counter() - start < max(durations) * 5 + 0.5
        np.testing.assert_array_equal(session.get_tensor_data(w), total + step)


def test_an_interrupt_during_a_single_replica_run_keeps_the_weights():
    ir, w, r, buffer, _ = counting_ir(replicas=1, iterations=2000)
    with popxl.Session(ir, "ipu_model") as session:
        session.progress = False
        for delay in np.linspace(0.0, 0.03, 12):
            before, count = device_state(session, w, r, buffer), session.run_count
            interrupted_run(session, float(delay), "flag")
            check_all_or_nothing(before, device_state(session, w, r, buffer), 2000.0, session.run_count > count)


def test_an_interrupted_stepped_run_is_abandoned_with_the_weights_restored():
    ir, w, r, buffer, stream = counting_ir(iterations=100)
    with popxl.Session(ir, "ipu_model") as session:
        session.progress = False
        before = device_state(session, w, r, buffer)
        stepper = session.stepper()
        stepper.step()
        stepper.step()  # into the repeat body
        for _ in range(10):
            stepper.step_over()  # some iterations in, the weights have changed
        timer = threading.Timer(0.05, interrupt_main, ("signal",))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            while True:
                stepper.step()
        timer.join()
        assert stepper.status == "abandoned"
        after = device_state(session, w, r, buffer)
        np.testing.assert_array_equal(after[0], before[0])
        np.testing.assert_array_equal(after[1], before[1])
        with pytest.raises(RuntimeError, match="abandoned because the run was interrupted"):
            stepper.step()
        np.testing.assert_array_equal(session.run()[stream], np.full((REPLICAS, 8), 400.0))


def test_an_interrupt_during_a_weight_copy_is_raised_once_every_replica_has_its_copy():
    # The timer thread takes the interpreter lock at once, so the interrupt lands inside the copy.
    # No collection meanwhile: an interrupt landing in a finalizer would be ignored.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    gc.collect()
    gc.disable()
    try:
        check_weight_copies_whole()
    finally:
        gc.enable()
        sys.setswitchinterval(switch_interval)


def check_weight_copies_whole():
    ir = popxl.Ir(replication=REPLICAS)
    with ir.main_graph:
        ws = [popxl.variable(np.zeros(10, np.float32), name=f"w{i}") for i in range(1000)]
    with popxl.Session(ir, "ipu_model") as session:
        session.write_variables_data({w: np.full(10, 7.0, np.float32) for w in ws})
        start = time.perf_counter()
        session.weights_from_host()
        whole = time.perf_counter() - start
        for delay in np.linspace(0.0, whole, 12):
            for values in session.executable.device_values:  # the device holds other values than the host
                for w in ws:
                    values[w][...] = 0.0
            timer = threading.Timer(float(delay), interrupt_main, ("flag",))
            try:
                try:
                    timer.start()
                    session.weights_from_host()
                finally:
                    timer.join()
                    let_pending_signals_raise()
            except KeyboardInterrupt:
                pass
            # Copied whole, or not at all (when the interrupt came before the call): never in part.
            seen = set(np.unique([values[w] for values in session.executable.device_values for w in ws]))
            assert seen in ({7.0}, {0.0})


def test_an_interrupt_after_a_run_counted_leaves_the_run_standing():
    ir, w, r, buffer, _ = counting_ir(replicas=2, iterations=3)
    with popxl.Session(ir, "ipu_model", options=RunOptions(replicas="turns")) as session:
        session.progress = False
        runner = session.executable.runner

        def interrupted_commit():
            raise KeyboardInterrupt  # as if Ctrl-C came just as the finished run was being confirmed
        runner.commit = interrupted_commit
        with pytest.raises(KeyboardInterrupt):
            session.run()
        assert session.run_count == 1
        np.testing.assert_array_equal(session.get_tensor_data(w), np.full(8, 2 * 3, np.float32))
