"""PopART sessions with the distributed options, run as the instances of a job (each a process under
MPI), against one process holding every replica. Every program is ``popart_job.py``."""
import re
import sys
import time
from pathlib import Path

from launch import MPIEXEC, poprun_command, results, run

JOB = str(Path(__file__).with_name("popart_job.py"))
# Lines of several instances may run together: each value has a pattern of its own.
LINE = re.compile(r"instance (\d+): (digest|probabilities|replicas|host weights of seed) "
                  r"([0-9a-f]{16}|\d+ of \d+, loss shape \([\d, ]*\)|\d)")


def test_popart_training_split_into_instances_gives_the_weights_of_one_process_bit_for_bit():
    alone = results(run([sys.executable, JOB, "train"]), 1, LINE)
    assert alone["replicas"] == {"4 of 4, loss shape (4, 4)"} and len(alone["digest"]) == 1
    two = results(run([*poprun_command(2, 4), sys.executable, JOB, "train"]), 2, LINE)
    assert two == {"replicas": {"2 of 4, loss shape (4, 2)"}, "digest": alone["digest"]}
    four = results(run([MPIEXEC, "-n", "4", sys.executable, JOB, "train"]), 4, LINE)  # a bare mpiexec
    assert four == {"replicas": {"1 of 4, loss shape (4,)"}, "digest": alone["digest"]}


def test_broadcast_weights_gives_every_instance_those_of_the_root():
    sent = results(run([*poprun_command(2, 4), sys.executable, JOB, "broadcast", "broadcast"]), 2, LINE)
    assert sent["host weights of seed"] == {"0"} and len(sent["probabilities"]) == 1
    kept = results(run([*poprun_command(2, 4), sys.executable, JOB, "broadcast", "own"]), 2, LINE)
    assert kept["host weights of seed"] == {"0", "1"} and len(kept["probabilities"]) == 2
    assert sent["probabilities"] < kept["probabilities"]  # instance 0's own first step, in both runs


def test_broadcast_weights_reaches_the_instances_of_the_job_from_sessions_of_their_own():
    """Sessions without popdist's options (one replica each) still broadcast over the job poprun started."""
    sent = results(run([*poprun_command(2, 2), sys.executable, JOB, "broadcast", "broadcast", "plain"]), 2, LINE)
    assert sent["host weights of seed"] == {"0"} and len(sent["probabilities"]) == 1
    kept = results(run([*poprun_command(2, 2), sys.executable, JOB, "broadcast", "own", "plain"]), 2, LINE)
    assert kept["host weights of seed"] == {"0", "1"} and len(kept["probabilities"]) == 2


def test_instance_0_writes_the_report_of_the_job_and_its_values_once_every_instance_copied_them(tmp_path):
    started = time.monotonic()
    done = run([*poprun_command(2, 4), sys.executable, JOB, "report", str(tmp_path)])
    assert done.returncode == 0 and time.monotonic() - started < 60, done.stderr
    assert ("instance 0: run {'instances': True, 'timelines': True, 'values': False, 'weightsToHost asked': True}"
            in done.stdout), done.stdout
    assert ("instance 0: weightsToHost {'instances': True, 'timelines': True, 'values': True, "
            "'weightsToHost asked': False}" in done.stdout), done.stdout


def test_options_that_do_not_match_the_launched_job_fail_on_every_instance():
    program = ("import popart, popdist, popdist.popart\n"
               "opts = popart.SessionOptions()\n"
               "popdist.popart.configureSessionOptions(opts)\n"
               "opts.globalReplicationFactor = 8\n"
               "builder = popart.Builder()\n"
               "x = builder.addInputTensor(popart.TensorInfo('FLOAT', [2]))\n"
               "y = builder.aiOnnx.relu([x])\n"
               "try:\n"
               "    popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),\n"
               "                            popdist.popart.getDevice(), userOptions=opts)\n"
               "except popart.popart_exception as error:\n"
               "    print(f'instance {popdist.getInstanceIndex()}: {error}', flush=True)\n")
    done = run([*poprun_command(2, 4), sys.executable, "-c", program])
    assert done.returncode == 0, done.stderr
    for index in (0, 1):
        assert (f"instance {index}: the distributed options do not match the job this process runs in (instance "
                f"{index} of poprun's job of 4 replicas in 2 instances): globalReplicationFactor is 8, expected 4"
                in done.stdout), done.stdout
