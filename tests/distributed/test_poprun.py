"""poprun's options: the layout it checks, the MPI arguments it translates, the mpiexec it starts."""
import tomllib
from pathlib import Path

import pytest

from workbench.distributed import poprun
from workbench.distributed.launcher import Job, PoprunError, find_mpiexec, mpiexec_command, translate_mpi_args

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
    assert translate_mpi_args(given) == ["-prepend-rank", "-bind-to", "none", "-genv", "SEED", "3",
                                         "-genvlist", "TMPDIR,PYTHONPATH"]
    with pytest.raises(PoprunError, match=r"--mpi-global-args: the MPI option '--mca' has no translation"):
        translate_mpi_args({"--mpi-global-args": "--mca btl tcp"})
    with pytest.raises(PoprunError, match="-x needs a value"):
        translate_mpi_args({"--mpi-local-args": "-x"})


def test_mpiexec_runs_the_command_once_per_instance_with_its_environment():
    line = mpiexec_command(Job(2, 4, only_output_from_instance=1), ["python", "train.py"], "mpiexec")
    sections = " ".join(line[1:]).split(" : ")
    assert len(sections) == 2 and "-prepend-rank" not in line
    assert "-env POPDIST_REPLICA_INDEX_OFFSET 0" in sections[0] and sections[0].endswith(
        "sh -c exec \"$@\" >/dev/null 2>&1 sh python train.py")
    assert "-env POPDIST_REPLICA_INDEX_OFFSET 2" in sections[1] and sections[1].endswith(" python train.py")
    assert mpiexec_command(Job(2, 2), ["python", "t.py"], "mpiexec")[1] == "-prepend-rank"
    with pytest.raises(PoprunError, match="needs a command"):
        mpiexec_command(Job(1, 1), [], "mpiexec")


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
    assert "ipu-workbench[distributed]" in extras["test"]
