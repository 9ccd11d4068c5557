"""PopART programs run as every instance of a job (``poprun``/``mpiexec ... python popart_job.py PROGRAM``),
or as one process of 4 replicas (``python popart_job.py PROGRAM`` without popdist settings). Each prints
``instance I: WHAT VALUE`` lines that the tests compare."""
import sys

import numpy as np

import popart
import popdist
import popdist.popart

from job_output import digest, say

BATCH, INPUTS, HIDDEN, CLASSES, STEPS = 4, 6, 8, 3, 4
REPLICAS = 4  # of the whole job


SHAPES = {"w1": (INPUTS, HIDDEN), "b1": (HIDDEN,), "w2": (HIDDEN, CLASSES), "b2": (CLASSES,)}


def initial_weights(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0, 0.5, shape).astype(np.float32) for name, shape in SHAPES.items()}


def mlp(seed: int):
    """x -> relu(x w1 + b1) w2 + b2 -> softmax -> NLL, with initial weights drawn from ``seed``."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [BATCH, INPUTS]), "x")
    label = builder.addInputTensor(popart.TensorInfo("INT32", [BATCH]), "label")
    w = {name: builder.addInitializedInputTensor(value, name) for name, value in initial_weights(seed).items()}
    hidden = builder.aiOnnx.relu([builder.aiOnnx.add([builder.aiOnnx.matmul([x, w["w1"]]), w["b1"]])])
    probs = builder.aiOnnx.softmax([builder.aiOnnx.add([builder.aiOnnx.matmul([hidden, w["w2"]]), w["b2"]])])
    loss = builder.aiGraphcore.nllloss([probs, label], popart.ReductionType.Mean)
    return builder.getModelProto(), x, label, probs, loss


def host_weights(session) -> dict:
    """The session's host copy of the weights (``readWeights``)."""
    weights = {name: np.zeros(shape, np.float32) for name, shape in SHAPES.items()}
    session.readWeights(popart.PyWeightsIO(weights))
    return weights


def options() -> popart.SessionOptions:
    """popdist's options under poprun or mpiexec; a process alone holds all 4 replicas."""
    opts = popart.SessionOptions()
    if popdist.isPopdistEnvSet():
        popdist.popart.configureSessionOptions(opts)
    else:
        opts.enableReplicatedGraphs = True
        opts.replicatedGraphCount = REPLICAS
    opts.accumulationAndReplicationReductionType = popart.ReductionType.Mean
    return opts


def device(opts: popart.SessionOptions):
    if popdist.isPopdistEnvSet():
        return popdist.popart.getDevice()
    return popart.DeviceManager().createIpuModelDevice({"numIPUs": opts.replicatedGraphCount})


def local_part(data: np.ndarray, replicas: int) -> np.ndarray:
    """This instance's replicas of ``[steps, job replicas, ...]`` host data, as PopART lays out a run's."""
    offset = popdist.getReplicaIndexOffset() if popdist.isPopdistEnvSet() else 0
    part = data[:, offset: offset + replicas]
    # PopART takes C-contiguous host arrays only: the slice is copied out.
    return np.ascontiguousarray(part if replicas > 1 else part[:, 0])


def train() -> None:
    """Data-parallel SGD with momentum, gradients meaned over every replica of the job."""
    proto, x, label, probs, loss = mlp(seed=0)
    opts = options()
    flow = popart.DataFlow(STEPS, {loss: popart.AnchorReturnType("ALL")})
    optimizer = popart.SGD({"defaultLearningRate": (0.1, False), "defaultMomentum": (0.9, True)})
    session = popart.TrainingSession(fnModel=proto, dataFlow=flow, loss=loss, optimizer=optimizer,
                                     deviceInfo=device(opts), userOptions=opts)
    session.prepareDevice()
    session.weightsFromHost()
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(STEPS, REPLICAS, BATCH, INPUTS)).astype(np.float32)
    labels = rng.integers(0, CLASSES, (STEPS, REPLICAS, BATCH)).astype(np.int32)
    replicas = session.replicationFactor
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: local_part(xs, replicas), label: local_part(labels, replicas)}, anchors))
    session.weightsToHost()
    say("replicas", f"{replicas} of {opts.getGlobalReplicationFactor()}, loss shape {anchors[loss].shape}")
    say("digest", digest(host_weights(session).values()))


def broadcast() -> None:
    """Each instance draws its initial weights from its own seed; with ``broadcast`` instance 0's are
    sent to every instance. Prints the host copy of the weights and the first step's probabilities
    (every replica is fed the same batch). With a third argument ``plain`` each instance's session is one
    of its own (one replica, no popdist options), as a script may broadcast the weights of one."""
    proto, x, label, probs, loss = mlp(seed=popdist.getInstanceIndex())
    plain = sys.argv[3:] == ["plain"]
    opts = popart.SessionOptions() if plain else options()
    flow = popart.DataFlow(1, {probs: popart.AnchorReturnType("ALL")})
    session = popart.TrainingSession(fnModel=proto, dataFlow=flow, loss=loss, optimizer=popart.ConstSGD(0.1),
                                     deviceInfo=popart.DeviceManager().createCpuDevice() if plain else device(opts),
                                     userOptions=opts)
    session.prepareDevice()
    session.weightsFromHost()
    if sys.argv[2] == "broadcast":
        session.broadcastWeights(0)
    held = digest(host_weights(session).values())
    seed = next(s for s in range(popdist.getNumInstances()) if digest(initial_weights(s).values()) == held)
    replicas = session.replicationFactor
    xs = np.random.default_rng(1).normal(size=(BATCH, INPUTS)).astype(np.float32)
    anchors = session.initAnchorArrays()
    batch = (np.stack([xs] * replicas), np.zeros((replicas, BATCH), np.int32)) if replicas > 1 else \
        (xs, np.zeros(BATCH, np.int32))
    session.run(popart.PyStepIO({x: batch[0], label: batch[1]}, anchors))
    say("host weights of seed", seed)
    say("probabilities", digest([anchors[probs][0]]))


def report() -> None:
    """Instance 0 writes the report of the job after a run, then again once every instance has copied
    the weights to the host; prints what each report shows."""
    import workbench

    proto, x, label, probs, loss = mlp(seed=0)
    opts = options()
    session = popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, [loss]), loss=loss,
                                     optimizer=popart.ConstSGD(0.1), deviceInfo=device(opts), userOptions=opts)
    session.prepareDevice()
    session.weightsFromHost()
    replicas = session.replicationFactor
    session.run(popart.PyStepIO({x: np.zeros((replicas, BATCH, INPUTS), np.float32),
                                 label: np.zeros((replicas, BATCH), np.int32)}, session.initAnchorArrays()))

    def shown(when: str) -> None:
        page = workbench.report(session, f"{sys.argv[2]}/{when}.html").read_text()
        say(when, {"instances": "4 replicas in 2 instances" in page and "instance boundary" in page,
                   "timelines": all(f"replica {r}, IPU 0" in page for r in range(REPLICAS)),
                   "values": "Variable values per group" in page, "weightsToHost asked": "weightsToHost()" in page})
    popdist.execute_on_instances(0, shown, "run")
    session.weightsToHost()
    popdist.execute_on_instances(0, shown, "weightsToHost")


if __name__ == "__main__":
    globals()[sys.argv[1]]()
