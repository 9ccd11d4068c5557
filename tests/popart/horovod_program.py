"""A small PopART training run, as Horovod's ranks (``mpiexec -n 2 python horovod_program.py horovod [replicas
of each rank]``) or as one process holding every replica (``python horovod_program.py alone 2``). Each process prints
``rank R: digest D`` of its weights after training; under Horovod also ``rank R: size S`` and what
``hvd.allreduce`` and ``hvd.broadcast`` give. ``horovod-own`` leaves out ``broadcast_weights``."""
import hashlib
import sys

import numpy as np

import popart

BATCH, INPUTS, CLASSES, STEPS, BATCHES_PER_STEP = 2, 5, 3, 3, 2


def model(seed: int):
    """softmax(x w + b) with an NLL loss; the initial weights drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [BATCH, INPUTS]), "x")
    label = builder.addInputTensor(popart.TensorInfo("INT32", [BATCH]), "label")
    w = builder.addInitializedInputTensor(rng.normal(0, 1, (INPUTS, CLASSES)).astype(np.float32), "w")
    b = builder.addInitializedInputTensor(rng.normal(0, 1, (CLASSES,)).astype(np.float32), "b")
    probs = builder.aiOnnx.softmax([builder.aiOnnx.add([builder.aiOnnx.matmul([x, w]), b])])
    loss = builder.aiGraphcore.nllloss([probs, label])
    return builder.getModelProto(), x, label, loss


def data(replicas: int):
    """Every replica's batches: [steps, batches per step, replicas, batch, ...]."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(STEPS, BATCHES_PER_STEP, replicas, BATCH, INPUTS)).astype(np.float32)
    labels = rng.integers(0, CLASSES, (STEPS, BATCHES_PER_STEP, replicas, BATCH)).astype(np.int32)
    return x, labels


def train(mode: str, replicas: int) -> None:
    opts = popart.SessionOptions()
    horovod = mode.startswith("horovod")
    if horovod:
        import horovod.popart as hvd

        hvd.init()
        rank, ranks = hvd.rank(), hvd.size()
        opts.hostAllReduce = True
    else:
        rank, ranks = 0, 1
        opts.accumulationAndReplicationReductionType = popart.ReductionType.Mean
    opts.enableReplicatedGraphs = replicas > 1  # the replicas of this process
    opts.replicatedGraphCount = replicas
    proto, x, label, loss = model(seed=rank)  # each rank draws its own weights; rank 0's are broadcast
    optimizer = popart.SGD({"defaultLearningRate": (0.1, False)})
    session = popart.TrainingSession(fnModel=proto, loss=loss, optimizer=optimizer, userOptions=opts,
                                     dataFlow=popart.DataFlow(BATCHES_PER_STEP, {loss: popart.AnchorReturnType("ALL")}),
                                     deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": replicas}))
    session.prepareDevice()
    if horovod:
        hvd.DistributedOptimizer(optimizer, session, opts)
        if mode == "horovod":
            hvd.broadcast_weights(session, root_rank=0)
        mean = hvd.allreduce(np.array([rank + 1.0]))[0]
        total = hvd.allreduce(np.array([rank + 1.0]), average=False)[0]
        print(f"rank {rank}: size {hvd.size()} allreduce {mean} {total} broadcast "
              f"{hvd.broadcast(np.array([rank + 10]), root_rank=1)[0]}", flush=True)
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    xs, labels = data(replicas * ranks)
    mine = slice(rank * replicas, (rank + 1) * replicas)  # this process's replicas of the job
    for step in range(STEPS):
        feed_x, feed_label = xs[step][:, mine], labels[step][:, mine]
        if replicas == 1:
            feed_x, feed_label = feed_x[:, 0], feed_label[:, 0]
        # PopART takes C-contiguous arrays only: a rank's column of the batch is copied out.
        feed = {x: np.ascontiguousarray(feed_x), label: np.ascontiguousarray(feed_label)}
        session.run(popart.PyStepIO(feed, anchors))
    session.weightsToHost()
    weights = {"w": np.zeros((INPUTS, CLASSES), np.float32), "b": np.zeros(CLASSES, np.float32)}
    session.readWeights(popart.PyWeightsIO(weights))
    digest = hashlib.sha256(b"".join(weights[name].tobytes() for name in sorted(weights))).hexdigest()[:16]
    print(f"rank {rank}: digest {digest}", flush=True)


if __name__ == "__main__":
    train(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
