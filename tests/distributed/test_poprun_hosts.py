"""poprun --host: MPICH's launcher places consecutive instances on each host, forks them for names of
this machine and starts them through ssh on the others, with the environment each needs.

Tested on one machine: two names of it (``localhost`` and ``127.0.0.1``, which MPICH treats as two
nodes, so the instances exchange over MPI's network path rather than shared memory), and made-up host
names reached through a stand-in for ssh that runs the command with an empty environment, as a remote
login would, recording where it was asked to go."""
import re
import sys
from pathlib import Path

from launch import poprun_command, results, run

JOB = str(Path(__file__).with_name("job.py"))
# One line per instance: where it runs and whether MPI sees its partners as on the same node.
WHERE = ("import os, popdist; from mpi4py import MPI; "
         "node = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED).Get_size(); "
         "print(f'instance {popdist.getInstanceIndex()} of {popdist.getNumInstances()}, replicas from '"
         "f'{popdist.getReplicaIndexOffset()}, on {os.environ.get(\"STAND_IN_SSH_HOST\", \"this machine\")}, '"
         "f'{node} on its node, PYTHONPATH {os.environ.get(\"PYTHONPATH\")}')")
STAND_IN_SSH = """#!/bin/sh
# ssh's arguments as MPICH's launcher gives them: options, the host, the command.
while [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
echo "$host" >> "$(dirname "$0")/logins"
exec env -i PATH=/usr/bin:/bin STAND_IN_SSH_HOST="$host" sh -c "$*"
"""


def one_process_digest() -> set:
    return results(run([sys.executable, JOB, "mlp"], POPDIST_NUM_TOTAL_REPLICAS="4"), 1)["digest"]


def test_two_names_of_this_machine_run_the_job_as_two_nodes_with_the_one_process_digest():
    done = run([*poprun_command(2, 4, ["--host", "localhost,127.0.0.1"]), sys.executable, JOB, "mlp"])
    assert results(done, 2)["digest"] == one_process_digest()
    assert "on localhost, 127.0.0.1" in done.stderr and "        1 | 2-3             | 2 (simulated)      | " \
        "127.0.0.1" in done.stderr
    where = run([*poprun_command(2, 4, ["--host", "localhost,127.0.0.1"]), sys.executable, "-c", WHERE])
    assert where.returncode == 0, where.stderr
    assert sorted(line.split(":", 1)[1].split(", PYTHONPATH")[0] for line in where.stdout.splitlines()) == [
        "instance 0 of 2, replicas from 0, on this machine, 1 on its node",
        "instance 1 of 2, replicas from 2, on this machine, 1 on its node"]


def test_instances_on_other_hosts_start_through_ssh_with_the_environment_they_need(tmp_path):
    ssh = tmp_path / "ssh"
    ssh.write_text(STAND_IN_SSH)
    ssh.chmod(0o755)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node-a\nnode-b\n")
    layout = ["--hostfile", str(hostfile)]
    where = run([*poprun_command(4, 8, layout), sys.executable, "-c", WHERE], HYDRA_LAUNCHER_EXEC=str(ssh))
    assert where.returncode == 0, where.stderr
    root = str(Path(__file__).resolve().parents[2])
    assert sorted(where.stdout.splitlines()) == [
        f"[1,{i}]<stdout>:instance {i} of 4, replicas from {2 * i}, on {host}, 2 on its node, PYTHONPATH {root}"
        for i, host in enumerate(["node-a", "node-a", "node-b", "node-b"])]
    assert sorted((tmp_path / "logins").read_text().split()) == ["node-a", "node-b"]
    done = run([*poprun_command(2, 4, ["--host", "node-a,node-b"]), sys.executable, JOB, "mlp"],
               HYDRA_LAUNCHER_EXEC=str(ssh))
    assert results(done, 2)["digest"] == one_process_digest()


def test_cloud_options_stay_harmless_beside_hosts():
    done = run([*poprun_command(2, 2, ["--host", "localhost,127.0.0.1", "--vipu-partition", "p", "--vipu-server-host",
                                       "10.0.0.1", "--reset-partition", "no"]), sys.executable, "-c", "print('ran')"])
    assert done.returncode == 0 and sorted(done.stdout.splitlines()) == ["[1,0]<stdout>:ran", "[1,1]<stdout>:ran"]
    assert re.search(r"--vipu-partition, --vipu-server-host, --reset-partition configure the IPU cloud and have "
                     "no effect", done.stderr)


def test_a_host_file_that_is_missing_is_refused_before_anything_starts(tmp_path):
    done = run([*poprun_command(2, 2, ["--hostfile", str(tmp_path / "none")]), sys.executable, "-c", "print(1)"])
    assert done.returncode == 2 and done.stdout == ""
    assert f"poprun: error: cannot read the host file {tmp_path / 'none'}: No such file or directory" in done.stderr
