"""``import horovod.popart as hvd``: ranks launched by mpiexec or horovodrun train bit for bit as one process
holding every replica; the helpers outside a job; and a real Horovod is never shadowed."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import popart

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = str(Path(__file__).with_name("horovod_program.py"))
MPIEXEC = str(Path(sys.executable).with_name("mpiexec"))
LINE = re.compile(r"rank (\d): (digest [0-9a-f]{16}|size \d allreduce [\d.]+ [\d.]+ broadcast \d\d)")


def run(command, pythonpath=str(ROOT)):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("POPDIST_", "PMI_", "OMPI_"))}
    done = subprocess.run(command, capture_output=True, text=True, timeout=180,
                          env={**environment, "PYTHONPATH": pythonpath})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def lines(output: str) -> dict:
    """{rank: {what: value}} (lines of several ranks may run together: each has a pattern of its own)."""
    said: dict = {}
    for rank, line in LINE.findall(output):
        what, value = line.split(" ", 1)
        said.setdefault(int(rank), {})[what] = value
    return said


def test_two_ranks_train_bit_for_bit_as_one_process_of_two_replicas():
    alone = lines(run([sys.executable, PROGRAM, "alone", "2"]))
    ranks = lines(run([MPIEXEC, "-n", "2", sys.executable, PROGRAM, "horovod"]))
    assert set(ranks) == {0, 1}
    assert ranks[0]["digest"] == ranks[1]["digest"] == alone[0]["digest"]
    # The helpers: mean and sum of 1 and 2 over the ranks, and rank 1's value everywhere.
    assert ranks[0]["size"] == ranks[1]["size"] == "2 allreduce 1.5 3.0 broadcast 11"
    # Averaging matters: one replica alone trains to other weights.
    assert lines(run([sys.executable, PROGRAM, "alone", "1"]))[0]["digest"] != alone[0]["digest"]


def test_ranks_of_two_replicas_each_train_as_one_process_of_all_four():
    alone = lines(run([sys.executable, PROGRAM, "alone", "4"]))
    ranks = lines(run([MPIEXEC, "-n", "2", sys.executable, PROGRAM, "horovod", "2"]))
    assert ranks[0]["digest"] == ranks[1]["digest"] == alone[0]["digest"]


def test_without_broadcast_weights_the_ranks_start_from_their_own_weights():
    alone = lines(run([sys.executable, PROGRAM, "alone", "2"]))
    own = lines(run([MPIEXEC, "-n", "2", sys.executable, PROGRAM, "horovod-own"]))
    assert own[0]["digest"] != alone[0]["digest"]  # rank 1 trained from its own draw, not rank 0's


def test_horovodrun_starts_the_ranks_on_this_machine():
    alone = lines(run([sys.executable, PROGRAM, "alone", "2"]))
    ranks = lines(run([sys.executable, "-m", "workbench.distributed.horovodrun", "-np", "2", "-H", "localhost:2",
                       sys.executable, PROGRAM, "horovod"]))
    assert ranks[0]["digest"] == ranks[1]["digest"] == alone[0]["digest"]


@pytest.mark.parametrize("arguments, message", [
    (["-np", "2", "-H", "node7:2", "python"], "host 'node7': the workbench runs every rank on this machine"),
    (["-np", "4", "-H", "localhost:2", "python"], "-H localhost:2 offers 2 slot"),
    (["-np", "2"], "no program to run"),
])
def test_horovodrun_refuses_jobs_it_cannot_start(arguments, message):
    done = subprocess.run([sys.executable, "-m", "workbench.distributed.horovodrun", *arguments],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and message in done.stderr


def test_one_process_is_a_job_of_one_rank():
    import horovod.popart as hvd

    hvd.shutdown()
    with pytest.raises(ValueError, match=r"use hvd.init\(\) before hvd.size\(\)"):
        hvd.size()
    hvd.init()
    assert (hvd.size(), hvd.rank(), hvd.local_size(), hvd.local_rank()) == (1, 0, 1, 0)
    np.testing.assert_array_equal(hvd.allreduce(np.array([2.0, 4.0])), [2.0, 4.0])
    with pytest.raises(ValueError, match="root_rank must be a rank of the job, 0 to 0, got 1"):
        hvd.broadcast(np.zeros(2), root_rank=1)


def small_training_session(opts):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.ones(2, np.float32))
    loss = builder.aiGraphcore.l1loss([builder.aiOnnx.mul([x, w])], 1.0)
    return popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [loss]), loss, popart.ConstSGD(0.1),
                                  popart.DeviceManager().createIpuModelDevice({}), userOptions=opts)


def test_distributed_optimizer_needs_host_all_reduce_and_a_training_session():
    import horovod.popart as hvd

    hvd.init()
    opts = popart.SessionOptions()
    session = small_training_session(opts)
    with pytest.raises(ValueError, match="needs userOpts.hostAllReduce = True"):
        hvd.DistributedOptimizer(popart.ConstSGD(0.1), session, opts)
    with pytest.raises(TypeError, match="takes a popart.TrainingSession, got str"):
        hvd.broadcast_weights("session")
    opts.hostAllReduce = True
    optimizer = hvd.DistributedOptimizer(popart.ConstSGD(0.1), small_training_session(opts), opts)
    assert optimizer.type() == "SGD"  # reads as the optimiser it wraps
    assert hvd.DistributedOptimizer(popart.ConstSGD(0.1)).type() == "SGD"  # the optimiser alone, as Horovod takes it


def test_a_real_horovod_is_not_shadowed(tmp_path):
    real = tmp_path / "site" / "horovod"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    (real / "torch.py").write_text("NAME = 'horovod.torch'\n")
    program = ("import horovod, horovod.torch\n"
               "print(horovod.REAL, horovod.torch.NAME)\n"
               "try:\n"
               "    import horovod.popart\n"
               "except ImportError as error:\n"
               "    print(type(error).__name__)\n")
    for path in (f"{ROOT}{os.pathsep}{tmp_path / 'site'}", f"{tmp_path / 'site'}{os.pathsep}{ROOT}"):
        assert run([sys.executable, "-c", program], pythonpath=path).split() == [
            "True", "horovod.torch", "ModuleNotFoundError"]


def test_import_horovod_popart_is_the_workbench_module():
    import horovod.popart as hvd
    import workbench.distributed.horovod as module

    assert hvd is module


def test_horovodrun_hands_over_to_a_real_horovod(tmp_path):
    runner = tmp_path / "site" / "horovod" / "runner"
    runner.mkdir(parents=True)
    (runner.parent / "__init__.py").write_text("")
    (runner / "__init__.py").write_text("")
    (runner / "launch.py").write_text("def run_commandline():\n    print('the real horovodrun')\n    return 0\n")
    output = run([sys.executable, "-m", "workbench.distributed.horovodrun", "-np", "2", "python", "x.py"],
                 pythonpath=f"{ROOT}{os.pathsep}{tmp_path / 'site'}")
    assert output.strip() == "the real horovodrun"
