"""poprun's options: the layout it checks, the MPI arguments it translates, the mpiexec it starts."""
import tomllib
from pathlib import Path

import pytest

from workbench.distributed import poprun
from workbench.distributed.launcher import (Job, PoprunError, find_mpiexec, mpiexec_command, read_hostfile,
                                           read_hosts, translate_mpi_args)

ROOT = Path(__file__).resolve().parents[2]


def test_each_instance_gets_poprun_environment():
    job = Job(num_instances=2, num_replicas=4, ipus_per_replica=2)
    assert job.environment(1) == {
        "POPDIST_NUM_TOTAL_REPLICAS": "4", "POPDIST_NUM_IPUS_PER_REPLICA": "2", "POPDIST_NUM_LOCAL_REPLICAS": "2",
        "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE": "1", "POPDIST_REPLICA_INDEX_OFFSET": "2",
        "POPDIST_LOCAL_INSTANCE_INDEX": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1"}
    assert job.topology().splitlines()[1:] == [" instance | replicas        | IPUs",
                                               "        0 | 0-1             | 4 (simulated)",
                                               "        1 | 2-3             | 4 (simulated)"]


@pytest.mark.parametrize("layout, message", [
    ((3, 4), "does not divide among --num-instances 3"),
    ((0, 4), "--num-instances must be a positive integer"),
    ((2, 4, 1, 2), "--only-output-from-instance 2 is not one of the 2 instances"),
])
def test_layouts_poprun_refuses(layout, message):
    with pytest.raises(PoprunError, match=message):
        Job(*layout)


def test_openmpi_arguments_become_mpich_arguments():
    given = {"--mpi-global-args": "--allow-run-as-root --tag-output --bind-to none",
             "--mpi-local-args": "-x TMPDIR -x PYTHONPATH -x SEED=3 -x TMPDIR"}
    # --tag-output is poprun's own tagging of whole lines (test_poprun_output.py), not MPICH's.
    assert translate_mpi_args(given) == ["-bind-to", "none", "-genv", "SEED", "3", "-genvlist", "TMPDIR,PYTHONPATH"]
    with pytest.raises(PoprunError, match=r"--mpi-global-args: the MPI option '--mca' has no translation"):
        translate_mpi_args({"--mpi-global-args": "--mca btl tcp"})
    with pytest.raises(PoprunError, match="-x needs a value"):
        translate_mpi_args({"--mpi-local-args": "-x"})


def test_mpiexec_runs_the_command_once_per_instance_with_its_environment():
    output = ["-outfile-pattern", "/tmp/o.%r", "-errfile-pattern", "/tmp/e.%r"]
    line = mpiexec_command(Job(2, 4), ["python", "train.py"], "mpiexec", ["-bind-to", "none"], output)
    assert line[:7] == ["mpiexec", *output, "-bind-to", "none"]
    sections = " ".join(line[7:]).split(" : ")
    assert len(sections) == 2 and "-hosts" not in line
    assert sections[0].startswith("-n 1 -env POPDIST_NUM_TOTAL_REPLICAS 4") and sections[0].endswith(" python train.py")
    assert "-env POPDIST_REPLICA_INDEX_OFFSET 0" in sections[0]
    assert "-env POPDIST_REPLICA_INDEX_OFFSET 2" in sections[1] and sections[1].endswith(" python train.py")
    with pytest.raises(PoprunError, match="needs a command"):
        mpiexec_command(Job(1, 1), [], "mpiexec")


@pytest.mark.parametrize("hosts, placement", [
    (("a", "b"), [("a", 2), ("b", 2)]),
    (("a:3", "b:1"), [("a", 3), ("b", 1)]),
    (("a",), [("a", 4)]),
])
def test_hosts_hold_consecutive_instances(hosts, placement):
    job = Job(4, 8, hosts=hosts)
    assert job.placement() == placement
    line = mpiexec_command(job, ["python", "t.py"], "mpiexec")
    assert line[1:3] == ["-hosts", ",".join(f"{name}:{count}" for name, count in placement)]
    assert [job.host_of(i) for i in range(4)] == [name for name, count in placement for _ in range(count)]


def test_the_topology_names_each_instance_host():
    assert Job(2, 2, hosts=("node1", "node2")).topology().splitlines() == [
        "poprun: 2 instance(s) x 1 replica(s) = 2 replicas of 1 IPU(s), on node1, node2",
        " instance | replicas        | IPUs               | host",
        "        0 | 0               | 1 (simulated)      | node1",
        "        1 | 1               | 1 (simulated)      | node2"]


@pytest.mark.parametrize("hosts, message", [
    (("a", "b", "c"), "--num-instances 4 does not divide among the 3 hosts a, b, c"),
    (("a:3", "b"), "give a count to every host"),
    (("a:3", "b:2"), "hold 5 instances; --num-instances is 4"),
    (("a:0", "b:4"), "'a:0' is not a host"),
    (("", "b"), "'' is not a host"),
])
def test_hosts_poprun_refuses(hosts, message):
    with pytest.raises(PoprunError, match=message):
        Job(4, 4, hosts=hosts)


def test_hosts_come_from_a_list_or_a_host_file(tmp_path):
    assert read_hosts("node1, node2:3") == ("node1", "node2:3")
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# the job's machines\nnode1\n\nnode2:2  # the big one\n")
    assert read_hostfile(str(hostfile)) == ("node1", "node2:2")
    with pytest.raises(PoprunError, match="names no host"):
        (tmp_path / "empty").write_text("# nothing\n")
        read_hostfile(str(tmp_path / "empty"))
    with pytest.raises(PoprunError, match="cannot read the host file .*missing: No such file"):
        read_hostfile(str(tmp_path / "missing"))


def test_host_options_are_one_of_three_and_reach_mpiexec(tmp_path, capsys):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("h1\nh2\n")
    for option in (["--host", "h1,h2"], ["--hostfile", str(hostfile)], ["--mpi-local-hosts", str(hostfile)],
                   ["--mpi-local-hosts", "h1,h2"]):
        assert poprun._hosts(poprun.parser().parse_args([*option, "python"])) == ("h1", "h2")
    with pytest.raises(SystemExit):
        poprun.parser().parse_args(["--host", "a", "--hostfile", str(hostfile), "python"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_mpich_mpiexec_beside_python_is_found():
    assert Path(find_mpiexec()).name == "mpiexec"


def test_refused_options_exit_with_a_message(capsys):
    assert poprun.main(["--num-instances", "3", "--num-replicas", "4", "python", "train.py"]) == 2
    assert "poprun: error: --num-replicas 4 does not divide among --num-instances 3" in capsys.readouterr().err


def test_the_wheel_ships_popdist_and_the_poprun_command():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["poprun"] == "workbench.distributed.poprun:main"
    assert "popdist" in project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    extras = project["project"]["optional-dependencies"]
    assert {e.split(">")[0] for e in extras["distributed"]} == {"mpi4py", "mpich"}
    assert "ipu-workbench[distributed]" in extras["tutorials"] and "ipu-workbench[tutorials]" in extras["test"]


def test_the_instance_wait_is_passed_to_every_instance_only_when_poprun_is_given_one():
    from workbench.ir.popdist_settings import WAIT_VARIABLE
    assert WAIT_VARIABLE not in Job(2, 2).environment(0)
    job = Job(2, 2, instance_wait_seconds=2.5)
    assert [job.environment(i)[WAIT_VARIABLE] for i in (0, 1)] == ["2.5", "2.5"]
    assert poprun.parser().parse_args(["--instance-wait-seconds", "3", "true"]).instance_wait_seconds == 3.0
    assert "--instance-wait-seconds SECONDS" in poprun.parser().format_help()


@pytest.mark.parametrize("seconds", [0, -1.0, float("nan"), float("inf")])
def test_poprun_refuses_a_wait_that_is_not_a_positive_number_of_seconds(seconds):
    with pytest.raises(PoprunError, match=r"--instance-wait-seconds must be a positive number of seconds"):
        Job(2, 2, instance_wait_seconds=seconds)
