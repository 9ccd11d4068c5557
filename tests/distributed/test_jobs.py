"""Jobs of several instances, each a process under MPI, against one process holding every replica.

Every program is ``job.py``; each instance prints ``instance I: WHAT VALUE`` lines.
"""
import re
import subprocess
import sys
import time
from pathlib import Path

from launch import MPIEXEC, poprun_command, results
from launch import run as _run

JOB = str(Path(__file__).with_name("job.py"))


def one_process(program: str, replicas: int = 4) -> subprocess.CompletedProcess:
    return _run([sys.executable, JOB, program], POPDIST_NUM_TOTAL_REPLICAS=str(replicas))


def poprun(instances: int, *program: str, options=(), replicas: int = 4) -> subprocess.CompletedProcess:
    return _run([*poprun_command(instances, replicas, options), sys.executable, JOB, *program])


def mpiexec(instances: int, program: str) -> subprocess.CompletedProcess:
    return _run([MPIEXEC, "-n", str(instances), "-genv", "POPDIST_NUM_TOTAL_REPLICAS", "4", sys.executable, JOB,
                 program])


def test_data_parallel_training_gives_the_same_weights_bit_for_bit_however_replicas_are_split():
    reference = results(one_process("mlp"), 1)
    assert len(reference["digest"]) == 1
    for done, instances in ((poprun(2, "mlp"), 2), (poprun(4, "mlp"), 4), (mpiexec(2, "mlp"), 2),
                            (mpiexec(4, "mlp"), 4)):
        assert results(done, instances) == reference


def test_groupings_and_shards_spanning_instances_match_one_instance():
    reference = results(one_process("grouped"), 1)
    assert len(reference) == 5 and reference["replica 0"] != reference["replica 1"]
    assert results(poprun(2, "grouped"), 2) == reference
    assert results(poprun(4, "grouped", options=["--print-topology", "no"]), 4) == reference


def test_groups_within_and_across_instances_in_one_collective():
    reference = results(one_process("pairs", replicas=6), 1)
    assert reference["replica 0"] == reference["replica 1"] != reference["replica 2"]
    assert results(poprun(2, "pairs", replicas=6), 2) == reference


def test_a_failing_replica_fails_the_run_on_every_instance_and_the_next_run_works():
    done = poprun(2, "fault")
    assert done.returncode == 0, done.stderr
    failure = "replica 2 failed in op test_explode.3 (test_explode) of graph 'main': FloatingPointError: negative"
    assert f"instance 1: error ReplicaExecutionError: {failure}" in done.stdout
    assert f"instance 0: error InstanceFailed: {failure}" in done.stdout
    assert done.stdout.count("next run [4.0, 4.0, 4.0, 4.0]") == 2


def test_an_uncaught_error_ends_every_instance_promptly():
    started = time.monotonic()
    done = poprun(2, "fault", "uncaught")
    assert done.returncode != 0 and time.monotonic() - started < 20
    assert "replica 2 failed in op test_explode.3" in done.stdout + done.stderr
    assert "next run" not in done.stdout


def test_a_collective_only_some_instances_reach_is_an_error_everywhere_not_a_hang():
    done = poprun(2, "mismatch")
    assert done.returncode == 0, done.stderr
    assert re.search(r"instance 0: error CollectiveMismatchError: instance 0 waits at replicated_all_reduce\S* "
                     r"\(replicated_all_reduce\) occurrence 0: float32\[2\], add, groups \[0, 0, 0, 0\] for "
                     r"instance\(s\) \[1\], which finished the run without reaching it", done.stdout)
    assert "instance 1: error InstanceMismatch: CollectiveMismatchError on instance 0" in done.stdout
    assert done.stdout.count("next run [4.0, 4.0, 4.0, 4.0]") == 2


def test_instances_at_different_collectives_of_one_shape_are_refused_through_shared_memory():
    done = poprun(2, "crossed")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("through shared memory True") == 2
    for instance in (0, 1):
        assert re.search(rf"instance {instance}: error CollectiveMismatchError: the instances reached different "
                         r"collectives: instance 0 at replicated_all_reduce\S* \(replicated_all_reduce\) occurrence 0: "
                         r"float32\[2\], add, groups \[0, 0, 0, 0\]; instance 1 at replicated_all_reduce\S* ",
                         done.stdout), done.stdout
    assert done.stdout.count("next run [8.0, 8.0, 8.0, 8.0]") == 2


def test_poprun_says_cloud_options_have_no_effect_and_prints_the_topology():
    done = _run([sys.executable, "-m", "workbench.distributed.poprun", "--vipu-partition", "p1", "--num-instances",
                 "2", "--num-replicas", "4", "--only-output-from-instance", "1", sys.executable, "-c",
                 "import popdist; print('instance', popdist.getInstanceIndex(), 'offset', "
                 "popdist.getReplicaIndexOffset())"])
    assert done.returncode == 0 and done.stdout == "instance 1 offset 2\n"
    assert "--vipu-partition configure the IPU cloud and have no effect" in done.stderr
    assert "        1 | 2-3             | 2 (simulated)" in done.stderr


def test_every_instance_has_the_trace_of_every_replica_and_instance_0_writes_the_report(tmp_path):
    alone = one_process("trace").stdout
    expected = re.search(r"instance 0: (trace 4 replicas, .*)\n", alone).group(1)
    assert "timed True, branches ['mul', 'add', 'add', 'mul']" in expected and "backend False" in alone
    done = poprun(2, "trace", str(tmp_path / "report.html"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(expected) == 2 and done.stdout.count("backend True") == 2
    assert "instance 1: stepper the stepper runs one process's replicas; this session is one instance of 2" \
        in done.stdout
    report = (tmp_path / "report.html").read_text()
    assert "replica 3" in report
    assert "4 replicas in 2 instances" in report and "instance boundary" in report  # the replica-group view
