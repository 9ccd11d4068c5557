"""The PopART guide's full Horovod training example, in its structure (a model with an NllLoss object, an
IPU Model device, hostAllReduce, DistributedOptimizer, broadcast_weights, synthetic data, ten steps), as
our own program. Run as 2 ranks (``mpiexec -n 2 python guide_horovod_training.py``); each rank prints
``rank R: loss L weights D`` after training."""
import hashlib
from collections import namedtuple

import numpy as np

import horovod.popart as hvd
import popart

Training = namedtuple("Training", ["session", "anchors"])
BATCH, FEATURES, CLASSES, BATCHES_PER_STEP, STEPS = 1, 784, 10, 32, 10


def create_model(rng):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo(np.float32, [BATCH, FEATURES]))
    w = builder.addInitializedInputTensor(rng.normal(0, 1, [FEATURES, CLASSES]).astype(np.float32))
    b = builder.addInitializedInputTensor(rng.normal(0, 1, [CLASSES]).astype(np.float32))
    output = builder.aiOnnx.add([builder.aiOnnx.matmul([x, w]), b])
    probs = builder.aiOnnx.softmax([output])
    label = builder.addInputTensor(popart.TensorInfo("INT32", [BATCH]))
    loss = popart.NllLoss(probs, label, "nllLossVal")
    return builder.getModelProto(), x, label, output, loss, (w, b)


def ipu_model_device():
    return popart.DeviceManager().createIpuModelDevice({"compileIPUCode": True, "numIPUs": 1, "tilesPerIPU": 1216})


def train():
    hvd.init()
    rng = np.random.default_rng(hvd.rank())  # each rank draws its own weights: rank 0's are broadcast
    proto, data_in, labels_in, output, loss, weights = create_model(rng)
    data_flow = popart.DataFlow(BATCHES_PER_STEP, {output: popart.AnchorReturnType("ALL"),
                                                   loss.output(0): popart.AnchorReturnType("ALL")})
    options = popart.SessionOptions()
    options.hostAllReduce = True
    optimizer = popart.SGD({"defaultLearningRate": (0.1, False)})
    session = popart.TrainingSession(fnModel=proto, loss=loss, deviceInfo=ipu_model_device(), optimizer=optimizer,
                                     dataFlow=data_flow, userOptions=options)
    session.prepareDevice()
    session.setRandomSeed(42)
    training = Training(session, session.initAnchorArrays())
    hvd.DistributedOptimizer(optimizer, training.session, options)
    hvd.broadcast_weights(training.session, root_rank=0)
    training.session.weightsFromHost()
    data = np.random.default_rng(100 + hvd.rank()).normal(size=(BATCHES_PER_STEP, BATCH, FEATURES)).astype(np.float32)
    labels = np.zeros((BATCHES_PER_STEP, BATCH, 1), np.int32)  # as many elements as [32, 1]: PopART reshapes
    for _ in range(STEPS):
        training.session.run(popart.PyStepIO({data_in: data, labels_in: labels}, training.anchors))
    training.session.weightsToHost()
    values = {w: np.zeros(shape, np.float32) for w, shape in zip(weights, ([FEATURES, CLASSES], [CLASSES]))}
    training.session.readWeights(popart.PyWeightsIO(values))
    digest = hashlib.sha256(b"".join(values[w].tobytes() for w in weights)).hexdigest()[:16]
    print(f"rank {hvd.rank()}: loss {float(training.anchors[loss.output(0)].mean()):.6f} weights {digest}", flush=True)


if __name__ == "__main__":
    train()
