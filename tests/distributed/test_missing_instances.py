"""An instance that stalls or ends mid-job is named on every instance still waiting for it: after the
wait limit (``WORKBENCH_INSTANCE_WAIT_SECONDS``, short here) for a stalled one, at once for one that
ended, and the job ends without a second wait."""
import subprocess
import sys
import time
import uuid

import pytest

from launch import MPIEXEC, poprun_command, run

# Every instance trains one run together; then instance 1 {does something} and the others run again.
PROGRAM = """
import sys, time, numpy as np, popdist, popxl, popxl.ops as ops
ir = popxl.Ir(replication="popdist")
with ir.main_graph:
    w = popxl.variable(np.ones(2, np.float32), name="w")
    ops.host_store(popxl.d2h_stream([2], popxl.float32, name="y"), ops.collectives.replicated_all_reduce(w))
session = popxl.Session(ir, "ipu_hw")
with session:
    session.run({{}})
    print("instance", popdist.getInstanceIndex(), "ran once", flush=True)
    if popdist.getInstanceIndex() == 1:
        {then}
    session.run({{}})
print("instance", popdist.getInstanceIndex(), "ran twice", flush=True)
"""


def job(then: str, seconds: str = "2") -> tuple[subprocess.CompletedProcess, float]:
    """Run the job; check that none of its processes is left behind."""
    marker = uuid.uuid4().hex
    started = time.monotonic()
    done = run([*poprun_command(3, 3), sys.executable, "-c", PROGRAM.format(then=then) + f"# {marker}\n"],
               WORKBENCH_INSTANCE_WAIT_SECONDS=seconds)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout == "", "processes of the job were left behind"
    return done, time.monotonic() - started


def test_a_stalled_instance_is_named_on_every_waiting_instance_after_the_wait_limit():
    done, seconds = job("time.sleep(100)")
    assert done.returncode != 0 and seconds < 40, (seconds, done.stderr)
    assert "ran twice" not in done.stdout
    assert "waited 2 s at replicated_all_reduce" in done.stderr, done.stderr
    assert "for instance(s) [1], which never arrived; instance" in done.stderr, done.stderr
    for waiting in (0, 2):
        named = [line for line in done.stderr.splitlines()
                 if line.startswith(f"[1,{waiting}]<stderr>:") and "InstanceMissing" in line]
        assert named and "instance(s) [1]" in named[-1], done.stderr


def test_an_instance_that_ends_mid_job_is_named_at_once():
    done, seconds = job("sys.exit(0)", seconds="100")
    assert done.returncode != 0 and seconds < 40, (seconds, done.stderr)
    assert "for instance(s) [1], which ended (their process exited) without reaching it" in done.stderr, done.stderr
    assert "waited 100 s" not in done.stderr
    assert "ran twice" not in done.stdout


def test_a_wait_limit_that_is_not_a_positive_number_is_refused():
    done = run([MPIEXEC, "-n", "2", sys.executable, "-c", PROGRAM.format(then="pass")],
               WORKBENCH_INSTANCE_WAIT_SECONDS="soon")
    assert done.returncode != 0
    assert "WORKBENCH_INSTANCE_WAIT_SECONDS='soon' must be a positive number of seconds" in done.stderr, done.stderr


def test_the_wait_limit_is_read_from_the_environment(monkeypatch):
    from workbench.runtime.replication.communicator import WAIT_LIMIT, wait_limit
    monkeypatch.delenv("WORKBENCH_INSTANCE_WAIT_SECONDS", raising=False)
    assert wait_limit() == WAIT_LIMIT == 120.0
    monkeypatch.setenv("WORKBENCH_INSTANCE_WAIT_SECONDS", "2.5")
    assert wait_limit() == 2.5
    for bad in ("0", "-1", "nan", "soon"):
        monkeypatch.setenv("WORKBENCH_INSTANCE_WAIT_SECONDS", bad)
        with pytest.raises(ValueError, match="must be a positive number of seconds"):
            wait_limit()


def test_a_session_s_wait_limit_comes_before_the_environment(monkeypatch):
    from workbench.runtime import RunOptions
    from workbench.runtime.replication.communicator import wait_limit
    monkeypatch.setenv("WORKBENCH_INSTANCE_WAIT_SECONDS", "7")
    assert wait_limit(RunOptions(instance_wait_seconds=1.5).instance_wait_seconds) == 1.5
    assert wait_limit(RunOptions().instance_wait_seconds) == 7.0


def test_replicas_within_an_instance_wait_a_moment_longer_than_the_session_s_wait_limit():
    import threading

    from workbench.runtime.replication.communicator import LOCAL_MARGIN, CollectiveMismatchError, Communicator
    communicator = Communicator([0, 1], wait_seconds=0.1)  # replica 1 runs on, far from the collective
    errors = []

    def replica_0():
        try:
            communicator.exchange("key", "all_reduce", 0, [0, 1], 1.0)
        except CollectiveMismatchError as error:
            errors.append(str(error))
    thread = threading.Thread(target=replica_0)
    started = time.monotonic()
    thread.start()
    thread.join(timeout=30)
    assert errors == [f"replica 0 waited {0.1 + LOCAL_MARGIN:g} s at all_reduce for replicas [1]"]
    assert time.monotonic() - started < 0.1 + LOCAL_MARGIN + 5
