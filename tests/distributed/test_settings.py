"""popdist's settings and functions, Ir(replication="popdist") and popdist.popart, in one process."""
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import popart
import popdist
import popdist.popart
import popxl
import workbench.distributed
from workbench.distributed.launcher import Job
from workbench.ir.popdist_settings import PopdistSettings, PopdistSettingsError, read_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def instance(monkeypatch):
    """Sets the environment poprun gives one instance of a job; returns the job."""
    for name in list(__import__("os").environ):
        if name.startswith(("POPDIST_", "PMI_", "OMPI_")):
            monkeypatch.delenv(name)

    def set_job(job: Job, index: int) -> Job:
        for name, value in job.environment(index).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("PMI_RANK", str(index))
        monkeypatch.setenv("PMI_SIZE", str(job.num_instances))
        return job
    return set_job


def test_popdist_is_the_workbench_module():
    assert popdist is workbench.distributed and popdist.popart is workbench.distributed.popart


def test_without_popdist_variables_there_are_no_settings_and_one_instance():
    assert read_settings({"PATH": "/bin"}) is None
    assert read_settings({}) is None


def test_popdist_values_equal_poprun_arguments(instance):
    job = instance(Job(num_instances=2, num_replicas=8, ipus_per_replica=2), 1)
    assert popdist.isPopdistEnvSet()
    assert (popdist.getNumInstances(), popdist.getInstanceIndex(), popdist.getNumTotalReplicas(),
            popdist.getNumLocalReplicas(), popdist.getReplicaIndexOffset(), popdist.getNumIpusPerReplica()) \
        == (job.num_instances, 1, 8, 4, 4, 2)
    assert popdist.getDeviceId() == 1


def test_a_bare_mpiexec_gives_one_replica_per_instance_unless_told_more():
    assert read_settings({"PMI_RANK": "2", "PMI_SIZE": "4"}) == PopdistSettings(4, 2, 4, 1, 2, 1)
    assert read_settings({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
                          "POPDIST_NUM_TOTAL_REPLICAS": "4"}) == PopdistSettings(2, 1, 4, 2, 2, 1)
    assert read_settings({"POPDIST_NUM_TOTAL_REPLICAS": "4"}) == PopdistSettings(1, 0, 4, 4, 0, 1)


@pytest.mark.parametrize("environ, message", [
    ({"PMI_RANK": "0", "PMI_SIZE": "3", "POPDIST_NUM_TOTAL_REPLICAS": "4"}, "do not divide among 3"),
    ({"PMI_RANK": "0", "PMI_SIZE": "2", "POPDIST_NUM_TOTAL_REPLICAS": "4", "POPDIST_NUM_LOCAL_REPLICAS": "1"},
     "uniform"),
    ({"PMI_RANK": "1", "PMI_SIZE": "2", "POPDIST_REPLICA_INDEX_OFFSET": "0"}, "expected 1"),
    ({"POPDIST_NUM_TOTAL_REPLICAS": "four"}, "not an integer"),
])
def test_inconsistent_settings_are_clear_errors(environ, message):
    with pytest.raises(PopdistSettingsError, match=message):
        read_settings(environ)


def test_execute_on_instances_calls_only_on_the_chosen_instances(instance):
    instance(Job(2, 2), 1)
    assert popdist.execute_on_instances({0}, lambda: "called") is None
    assert popdist.execute_on_instances(1, lambda x: x + 1, 1) == 2
    assert popdist.execute_on_instances([0, 1], lambda: "called") == "called"


def test_popdist_ir_has_the_global_and_the_local_replication_factor(instance):
    instance(Job(num_instances=2, num_replicas=4), 1)
    ir = popxl.Ir(replication="popdist")
    assert (ir.replication_factor, ir.instance_replication_factor, list(ir.local_replicas)) == (4, 2, [2, 3])
    with pytest.raises(ValueError, match="popdist's 4 replicas, got 2"):
        ir.replication_factor = 2


def test_popart_session_options_and_device_from_popdist(instance):
    instance(Job(num_instances=2, num_replicas=4, ipus_per_replica=2), 1)
    opts = SimpleNamespace()
    popdist.popart.configureSessionOptions(opts)
    assert vars(opts) == {"enableReplicatedGraphs": True, "replicatedGraphCount": 2,
                          "enableDistributedReplicatedGraphs": True, "globalReplicationFactor": 4,
                          "globalReplicaOffset": 2}
    device = popdist.popart.getDevice()
    assert (device.numIpus, device.id, device.type) == (4, 1, popart.DeviceType.Ipu)
    on_demand = popdist.popart.getDevice(1, connectionType="OnDemand")
    assert (on_demand.numIpus, on_demand.connectionType) == (2, popart.DeviceConnectionType.OnDemand)
    with pytest.raises(ValueError, match="positive int"):
        popdist.popart.getDevice(0)


def test_one_instance_of_popdist_replicas_runs_without_mpi():
    """A plain `python train.py` (and a job of one instance) never loads MPI."""
    program = (
        "import sys, numpy as np, popdist, popxl, popxl.ops as ops\n"
        "ir = popxl.Ir(replication='popdist')\n"
        "with ir.main_graph:\n"
        "    x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name='x'))\n"
        "    out = popxl.d2h_stream([2], popxl.float32, name='y')\n"
        "    ops.host_store(out, ops.collectives.replicated_all_reduce(x))\n"
        "with popxl.Session(ir, 'ipu_hw') as session:\n"
        "    result = session.run({ir.get_all_h2d_streams().pop(): np.ones((ir.replication_factor, 2), 'f4').squeeze()})\n"
        "print(ir.replication_factor, result[out].reshape(-1)[0], popdist.isBackendInitialized(), "
        "'mpi4py' in sys.modules)\n")
    clean = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("POPDIST_", "PMI_", "OMPI_"))}
    for extra, expected in (({}, "1 1.0 False False"), ({"POPDIST_NUM_TOTAL_REPLICAS": "4"}, "4 4.0 False False")):
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                              env={**clean, "PYTHONPATH": str(ROOT), **extra})
        assert done.stdout.strip() == expected, done.stderr
