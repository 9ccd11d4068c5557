"""The fault matrix of a job of several instances: whatever goes wrong with one instance, before, while
or after the others are in their Session, the job ends within seconds of the wait limit (short here),
the instance is named on the others (or, for a signal or an exit status, by poprun), and no process of
the job is left behind.

The other cells of the matrix are tested beside the features they check:
error before the Session (raise, ``sys.exit(5)``, SIGKILL) in ``test_poprun_failures.py``; an error
while in the Session in ``test_jobs.py`` (``test_an_uncaught_error_ends_every_instance_promptly``); a stall
and an early exit mid-job in ``test_missing_instances.py``; another collective, op or branch in
``test_jobs.py``; another reduction in ``test_reduction_mismatch.py``.
"""
import re
import subprocess
import sys
import time
import uuid

import pytest

from launch import MPIEXEC, poprun_command, run

# Every instance does {setup} first; instance 1 does {before} before making its Session, {during} after the first run; the others train.
PROGRAM = """
import os, sys, time, numpy as np, popdist, popxl, popxl.ops as ops
from workbench.runtime import RunOptions
instance = popdist.getInstanceIndex()
{setup}
ir = popxl.Ir(replication="popdist")
with ir.main_graph:
    w = popxl.variable(np.ones({shape}, np.float32), name="w")
    ops.host_store(popxl.d2h_stream([{shape}], popxl.float32, name="y"), ops.collectives.replicated_all_reduce(w))
if instance == 1:
    {before}
print("instance", instance, "makes its Session", flush=True)
with popxl.Session(ir, "ipu_hw", options=RunOptions({options})) as session:
    try:
        session.run({{}})
    except Exception as error:
        print(f"instance {{instance}}: {{type(error).__name__}}: {{error}}", flush=True)
    if instance == 1:
        {during}
    session.run({{}})
print("instance", instance, "ran", flush=True)
if instance == 1:
    {after}
with popxl.Session(ir, "ipu_hw") as session:
    session.run({{}})
print("instance", instance, "ran again", flush=True)
"""


# Instance 1 does {first} before it even imports popxl, {then} between the imports and its settings.
EARLY = """
import os, sys, time
if os.environ["PMI_RANK"] == "1":
    {first}
import numpy as np, popxl, popxl.ops as ops
if os.environ["PMI_RANK"] == "1":
    {then}
ir = popxl.Ir(replication="popdist")
with ir.main_graph:
    ops.host_store(popxl.d2h_stream([2], popxl.float32, name="y"),
                   ops.collectives.replicated_all_reduce(popxl.variable(np.ones(2, np.float32))))
with popxl.Session(ir, "ipu_hw") as session:
    session.run({{}})
print("ran", flush=True)
"""


def no_process_left(marker: str, grace_seconds: float = 5.0) -> None:
    """Fail if a process of the job is still alive once a short grace for the kernel's teardown has passed."""
    deadline = time.monotonic() + grace_seconds
    while True:
        left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
        if left.stdout == "" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left.stdout == "", "processes of the job were left behind"


def job(before: str = "pass", during: str = "pass", after: str = "pass", shape: str = "2", options: str = "",
        setup: str = "pass",
        poprun_options=("--instance-wait-seconds", "2"), **environment) -> tuple[subprocess.CompletedProcess, float]:
    """Run a job of 3 instances; check that none of its processes is left behind."""
    marker = uuid.uuid4().hex
    program = PROGRAM.format(setup=setup, before=before, during=during, after=after, shape=shape, options=options)
    started = time.monotonic()
    done = run([*poprun_command(3, 3, poprun_options), sys.executable, "-c", program + f"# {marker}\n"],
               **environment)
    seconds = time.monotonic() - started
    no_process_left(marker)
    return done, seconds


def missing_lines(done: subprocess.CompletedProcess, instance: int) -> list[str]:
    return [line for line in done.stderr.splitlines()
            if line.startswith(f"[1,{instance}]<stderr>:") and "InstanceMissing" in line]


def test_an_instance_that_stalls_before_its_session_is_named_on_every_other_after_the_wait_limit():
    done, seconds = job(before="time.sleep(100)")
    assert done.returncode != 0 and seconds < 30, (seconds, done.stderr)
    assert "ran" not in done.stdout
    said = {waiting: missing_lines(done, waiting)[-1] for waiting in (0, 2)}  # each has one
    # The first to give up says so to the others waiting there, so that they all raise before the job ends.
    first = re.compile(r"instance (\d) waited 2 s at opening the channel of a session for instance\(s\) \[1\], which "
                       r"never arrived \(stalled or failed before reaching it\); where the others were: instance "
                       r"(\d) at opening the channel of a session")
    told = re.compile(r"instance (\d) waits at opening the channel of a session for instance\(s\) \[1\], which "
                      r"never arrived: instance (\d) gave up waiting for them after 2 s; where the others were: "
                      r"instance \d at opening the channel of a session")
    assert any(first.search(line) for line in said.values()), said
    for waiting, line in said.items():
        found = first.search(line) or told.search(line)
        assert found and found.groups() == (str(waiting), str(2 - waiting)), said


def test_an_instance_that_ends_before_its_session_is_named_at_once():
    done, seconds = job(before="sys.exit(0)", poprun_options=("--instance-wait-seconds", "100"))
    assert done.returncode != 0 and seconds < 30, (seconds, done.stderr)
    for waiting in (0, 2):
        named = missing_lines(done, waiting)
        assert named and (f"instance {waiting} waits at opening the channel of a session for instance(s) "
                          "[1], which ended (their process exited) without reaching it") in named[-1], done.stderr
    assert "waited 100 s" not in done.stderr


SLOW_TO_REPORT = "if instance == 2: sys.excepthook = (lambda hook: lambda *error: (time.sleep(2), hook(*error)))(sys.excepthook)"
LATE = "if instance == 2: time.sleep(3)"


@pytest.mark.parametrize("setup", [SLOW_TO_REPORT, LATE], ids=["told-but-slow-to-report", "yet-to-arrive"])
def test_the_first_instance_to_give_up_ends_the_job_only_once_the_others_have_reported(setup):
    # Instance 2 reports late (its hook is slow, or it reaches the meeting after instance 0 gave up there):
    # the job still ends only after it has said which instance it misses.
    done, seconds = job(setup=setup, before="sys.exit(0)", poprun_options=("--instance-wait-seconds", "100"))
    assert done.returncode != 0 and seconds < 30, (seconds, done.stderr)
    assert all(missing_lines(done, waiting) for waiting in (0, 2)), done.stderr


def test_an_instance_that_fails_after_its_session_ends_the_job_while_the_others_make_their_next():
    done, seconds = job(after='raise ValueError("cannot write the checkpoint")')
    assert done.returncode == 1 and seconds < 30, (seconds, done.stderr)
    assert "[1,1]<stderr>:ValueError: cannot write the checkpoint" in done.stderr
    assert done.stdout.count(" ran\n") == 3 and "ran again" not in done.stdout


def test_an_instance_killed_while_in_its_session_ends_the_job_with_its_signal():
    done, seconds = job(during="os.kill(os.getpid(), 9)")
    assert done.returncode == 137 and seconds < 30, (seconds, done.stderr)
    assert "poprun: instance 1 was killed by signal 9; ending the job" in done.stderr
    assert " ran" not in done.stdout


def test_instances_that_exchange_different_shapes_are_refused_on_every_instance():
    done, _ = job(shape="2 if instance != 1 else 3", during="sys.exit(0)")
    for instance in (0, 1, 2):
        # Each refuses it, or hears first that another refused it.
        assert re.search(rf"instance {instance}: (CollectiveMismatchError|InstanceMismatch: CollectiveMismatchError "
                         r"on instance \d): the instances reached different "
                         r"collectives: instance 0 at replicated_all_reduce\S* \(replicated_all_reduce\) occurrence 0: "
                         r"float32\[2\], add, groups \[0, 0, 0\]; instance 1 at replicated_all_reduce\S* "
                         r"\(replicated_all_reduce\) occurrence 0: float32\[3\], add", done.stdout), done.stdout


def test_the_wait_limit_of_a_session_beats_poprun_which_beats_the_environment():
    done, _ = job(before="time.sleep(100)", WORKBENCH_INSTANCE_WAIT_SECONDS="100")
    assert re.search(r"instance \d waited 2 s at opening the channel", done.stderr), done.stderr
    done, _ = job(before="time.sleep(100)", options="instance_wait_seconds=1.5",
                  poprun_options=("--instance-wait-seconds", "100"))
    assert re.search(r"instance \d waited 1.5 s at opening the channel", done.stderr), done.stderr


def test_an_instance_that_stalls_before_reading_its_settings_is_named_under_a_bare_mpiexec_too():
    """MPI starts as popxl loads, so it runs everywhere even if one instance stalls right after."""
    marker = uuid.uuid4().hex
    started = time.monotonic()
    done = run([MPIEXEC, "-n", "2", sys.executable, "-c", EARLY.format(first="pass", then="time.sleep(100)")
                + f"# {marker}\n"], WORKBENCH_INSTANCE_WAIT_SECONDS="2")
    assert done.returncode != 0 and time.monotonic() - started < 30, done.stderr
    no_process_left(marker)
    assert ("InstanceMissing: instance 0 waited 2 s at opening the channel of a session for instance(s) [1], "
            "which never arrived") in done.stderr, done.stderr
    assert "ran" not in done.stdout


def test_an_instance_that_stalls_before_it_imports_popxl_ends_the_job_after_the_wait_limit():
    """Before the workbench loads nothing says where an instance is: the others say that MPI never
    started everywhere."""
    marker = uuid.uuid4().hex
    started = time.monotonic()
    done = run([*poprun_command(2, 2, ["--instance-wait-seconds", "2"]), sys.executable, "-c",
                EARLY.format(first="time.sleep(100)", then="pass") + f"# {marker}\n"])
    assert done.returncode != 0 and time.monotonic() - started < 30, done.stderr
    no_process_left(marker)
    assert ("[1,0]<stderr>:workbench.runtime.job.mpi.InstanceMissing: instance 0 waited 2 s for MPI to start: some "
            "of the job's 2 instances have not loaded the workbench") in done.stderr, done.stderr
