"""An instance that fails ends the whole poprun job at once, whenever it fails: before MPI is set up
(the others then wait inside MPI for ever, which MPICH alone lets them do), while the others are in a
Session, or killed by a signal; even when its output is not shown. No process is left behind."""
import re
import signal
import subprocess
import sys
import time
import uuid

from launch import MPIEXEC, environment, poprun_command, run

# Instance 1 fails before it makes its Session; the others make theirs and train (and would wait for
# instance 1 in MPI for ever).
EARLY = """
import os, sys, numpy as np, popdist, popxl, popxl.ops as ops
ir = popxl.Ir(replication="popdist")
with ir.main_graph:
    w = popxl.variable(np.ones(2, np.float32), name="w")
    ops.host_store(popxl.d2h_stream([2], popxl.float32, name="y"), ops.collectives.replicated_all_reduce(w))
if popdist.getInstanceIndex() == 1:
    {failure}
with popxl.Session(ir, "ipu_hw") as session:
    session.run({{}})
print("instance", popdist.getInstanceIndex(), "ran", flush=True)
"""


def job(failure: str, instances: int = 3, options=(), marker: str = "") -> tuple[subprocess.CompletedProcess, float]:
    program = EARLY.format(failure=failure) + f"# {marker}\n"
    started = time.monotonic()
    done = run([*poprun_command(instances, instances, options), sys.executable, "-c", program])
    return done, time.monotonic() - started


def test_an_instance_failing_before_its_session_ends_the_job_promptly():
    marker = uuid.uuid4().hex
    done, seconds = job('raise ValueError("no such data file: train.npz")', marker=marker)
    assert done.returncode == 1 and seconds < 30, done.stderr
    assert "[1,1]<stderr>:ValueError: no such data file: train.npz" in done.stderr
    assert "ran" not in done.stdout
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout == "", "processes of the job were left behind"


def test_an_instance_exiting_with_a_failure_status_before_its_session_ends_the_job():
    """sys.exit never reaches the hook for uncaught errors: poprun itself sees the instance end."""
    done, seconds = job("sys.exit(5)")
    assert done.returncode == 5 and seconds < 30, done.stderr
    assert "poprun: instance 1 exited with status 5; ending the job" in done.stderr


def test_an_instance_slow_to_end_after_its_failure_still_gives_the_job_its_status():
    """Its process is still ending (here, something it asked to run at exit takes 1.5 s) when the others find
    that it ended: they wait for it before ending the job, so that poprun hears its status first."""
    program = "import atexit, time\natexit.register(time.sleep, 1.5)\n" + EARLY.format(failure="sys.exit(5)")
    done = run([*poprun_command(3, 3, ()), sys.executable, "-c", program])
    assert done.returncode == 5, done.stderr
    assert "poprun: instance 1 exited with status 5; ending the job" in done.stderr


def test_an_instance_killed_by_a_signal_ends_the_job_with_its_status():
    done, seconds = job("os.kill(os.getpid(), 9)")
    assert done.returncode == 137 and seconds < 30, done.stderr
    assert "poprun: instance 1 was killed by signal 9; ending the job" in done.stderr


def test_a_failure_of_an_instance_whose_output_is_hidden_still_ends_the_job():
    done, seconds = job("sys.exit(4)", options=["--only-output-from-instance", "0"])
    assert done.returncode == 4 and seconds < 30, done.stderr
    assert "poprun: instance 1 exited with status 4; ending the job" in done.stderr
    assert not re.search(r"^\[1,", done.stderr, re.M)


def test_a_job_whose_instances_succeed_is_untouched():
    done, _ = job("pass", instances=2)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == ["[1,0]<stdout>:instance 0 ran", "[1,1]<stdout>:instance 1 ran"]
    assert "ending the job" not in done.stderr


def test_ctrl_c_to_poprun_reaches_every_instance_and_ends_the_job():
    program = ("import time, popdist; print('instance', popdist.getInstanceIndex(), 'waiting', flush=True); "
               "time.sleep(120)")
    poprun = subprocess.Popen([*poprun_command(2, 2), sys.executable, "-c", program], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=environment())
    waiting = [poprun.stdout.readline() for _ in range(2)]
    assert sorted(waiting) == ["[1,0]<stdout>:instance 0 waiting\n", "[1,1]<stdout>:instance 1 waiting\n"]
    started = time.monotonic()
    poprun.send_signal(signal.SIGINT)  # not from a terminal: poprun passes it on
    _, errors = poprun.communicate(timeout=60)
    assert poprun.returncode == 130 and time.monotonic() - started < 20, errors
    assert errors.count("<stderr>:KeyboardInterrupt") == 2


def test_under_a_bare_mpiexec_an_error_before_the_session_ends_the_job_too():
    """Without poprun: the instance that fails starts MPI only to abort the job."""
    program = EARLY.format(failure='raise ValueError("bad op argument")')
    started = time.monotonic()
    done = run([MPIEXEC, "-n", "2", sys.executable, "-c", program])
    assert done.returncode != 0 and time.monotonic() - started < 30, done.stdout + done.stderr
    assert "ValueError: bad op argument" in done.stderr and "ran" not in done.stdout
