"""PopART's distributed options read in one process: what they make of a session, and the errors for
combinations no job has or that differ from the job poprun (or mpiexec) started. The jobs themselves
run in tests/distributed/test_popart_jobs.py."""
import os

import numpy as np
import pytest

import popart
import popdist.popart
from workbench.distributed.launcher import Job
from workbench.ir.popdist_settings import PopdistSettings, read_settings
from workbench.popart.replication import replication_of


@pytest.fixture(autouse=True)
def alone(monkeypatch):
    """This process is no instance of a job, whatever launched the tests."""
    for name in list(os.environ):
        if name.startswith(("POPDIST_", "PMI_", "OMPI_")):
            monkeypatch.delenv(name)


def distributed(total, offset, local=1):
    opts = popart.SessionOptions()
    opts.enableReplicatedGraphs = local > 1
    opts.replicatedGraphCount = local
    opts.enableDistributedReplicatedGraphs = True
    opts.globalReplicationFactor = total
    opts.globalReplicaOffset = offset
    return opts


def poprun_environment(instances, replicas, index) -> dict:
    return {**Job(instances, replicas).environment(index), "PMI_RANK": str(index), "PMI_SIZE": str(instances)}


def model(loss: bool = False):
    """y = x * w, and with ``loss`` the L1 loss of y."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    w = builder.addInitializedInputTensor(np.array([1.0, 2.0], np.float32), "w")
    y = builder.aiOnnx.mul([x, w])
    out = builder.aiGraphcore.l1loss([y], 1.0) if loss else y
    return builder.getModelProto(), x, out


def test_a_job_of_one_instance_runs_in_one_process_without_mpi():
    proto, x, y = model()
    session = popart.InferenceSession(proto, popart.DataFlow(1, [y]), popart.DeviceManager().createIpuModelDevice(
        {"numIPUs": 2}), userOptions=distributed(2, 0, local=2))
    assert session.replicationFactor == 2
    assert (session.ir.replication_factor, session.ir.instance_replication_factor) == (2, 2)
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.ones((2, 2), np.float32)}, anchors))
    np.testing.assert_array_equal(anchors[y], [[1, 2], [1, 2]])


@pytest.mark.parametrize("total, offset, local, message", [
    (6, 0, 4, "globalReplicationFactor 6 is not a multiple of the 4 replicas of each instance"),
    (8, 2, 4, "globalReplicaOffset 2 is not where an instance's replicas start: with 4 replicas per instance "
              "and globalReplicationFactor 8 it is one of 0, 4"),
    (8, 8, 4, "globalReplicaOffset 8 is not where an instance's replicas start"),
    (0, 0, 1, "SessionOptions.globalReplicationFactor must be a positive integer, got 0"),
    (4, -1, 1, "SessionOptions.globalReplicaOffset must be a non-negative integer, got -1"),
    (4, 0, 2, "makes a job of 2 instances, but this process was not launched as one .* `poprun --num-instances 2 "
              "--num-replicas 4 python ...`"),
])
def test_option_combinations_no_job_has_are_errors_that_change_nothing(total, offset, local, message):
    proto, x, y = model()
    opts = distributed(total, offset, local)
    before = repr(opts)
    with pytest.raises(popart.popart_exception, match=message):
        popart.InferenceSession(proto, popart.DataFlow(1, [y]), popart.DeviceManager().createIpuModelDevice(
            {"numIPUs": local}), userOptions=opts)
    assert repr(opts) == before


def test_options_must_describe_the_job_poprun_started():
    environ = poprun_environment(2, 4, 1)
    assert replication_of(distributed(4, 2, local=2), environ) == PopdistSettings(2, 1, 4, 2, 2, 1)
    with pytest.raises(popart.popart_exception, match=r"\(instance 1 of poprun's job of 4 replicas in 2 instances\): "
                       r"globalReplicationFactor is 8, expected 4; replicatedGraphCount \(replicas per instance\) "
                       r"is 4, expected 2; globalReplicaOffset is 4, expected 2\. "
                       r"popdist.popart.configureSessionOptions\(opts\) sets them"):
        replication_of(distributed(8, 4, local=4), environ)


def test_a_bare_mpiexec_gives_the_instances_and_the_options_the_replicas_of_each():
    environ = {"PMI_RANK": "1", "PMI_SIZE": "2"}
    assert replication_of(distributed(8, 4, local=4), environ) == PopdistSettings(2, 1, 8, 4, 4, 1)
    with pytest.raises(popart.popart_exception, match="instance 1 of mpiexec's job of 2 instances.*"
                                                      "globalReplicaOffset is 0, expected 4"):
        replication_of(distributed(8, 0, local=4), environ)


def test_configured_options_read_back_as_the_job(monkeypatch):
    for name, value in poprun_environment(2, 4, 1).items():
        monkeypatch.setenv(name, value)
    opts = popart.SessionOptions()
    popdist.popart.configureSessionOptions(opts)
    assert (opts.getGlobalReplicationFactor(), opts.replicatedGraphCount, opts.globalReplicaOffset) == (4, 2, 2)
    assert replication_of(opts) == read_settings() == PopdistSettings(2, 1, 4, 2, 2, 1)


def test_without_the_distributed_options_a_session_replicates_in_its_process():
    opts = popart.SessionOptions()
    opts.enableReplicatedGraphs = True
    opts.replicatedGraphCount = 2
    assert replication_of(opts, poprun_environment(2, 4, 1)) == 2


def test_broadcast_weights_in_a_job_of_one_instance_has_nothing_to_send():
    proto, x, loss = model(loss=True)
    training = popart.TrainingSession(proto, popart.DataFlow(1, []), loss, popart.ConstSGD(0.1),
                                      popart.DeviceManager().createIpuModelDevice({}), userOptions=distributed(1, 0))
    training.broadcastWeights()
    with pytest.raises(popart.popart_exception, match="rootRank must be the index of an instance of the job, 0 to 0, "
                                                      "got 1"):
        training.broadcastWeights(1)
