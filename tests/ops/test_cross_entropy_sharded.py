"""The cross entropy of popxl-addons' CrossEntropyShardedOp: logits whose classes are split across a replica
group give every member the loss over all classes, and each member the gradient of its own classes."""
import numpy as np

import popxl
import popxl.ops as ops
from workbench.ops.cross_entropy_sharded import cross_entropy_sharded

REPLICAS, SAMPLES, CLASSES = 2, 4, 6
RNG = np.random.default_rng(2)
LOGITS = RNG.standard_normal((SAMPLES, CLASSES)).astype(np.float32) * 3
LABELS = np.array([0, 5, 2, 3], np.int32)  # on replica 0, 1, 0 and 1
DLOSS = RNG.standard_normal(SAMPLES).astype(np.float32)


def run():
    ir = popxl.Ir(replication=REPLICAS)
    width = CLASSES // REPLICAS
    with ir.main_graph:
        logits_h2d = popxl.h2d_stream((SAMPLES, width), popxl.float32, name="logits")
        labels_h2d = popxl.h2d_stream((SAMPLES,), popxl.int32, name="labels")
        logits, labels = ops.host_load(logits_h2d), ops.host_load(labels_h2d)
        graph = ir.create_graph(lambda x, i: cross_entropy_sharded(x, i)[0], logits, labels)
        call_info = ops.call_with_info(graph, logits, labels)
        grad_info = popxl.transforms.autodiff(graph, grads_required=[graph.inputs[0]])
        (dlogits,) = ops.call(grad_info.graph, popxl.constant(DLOSS), inputs_dict=grad_info.inputs_dict(call_info))
        loss_d2h = popxl.d2h_stream((SAMPLES,), popxl.float32, name="loss")
        grad_d2h = popxl.d2h_stream((SAMPLES, width), popxl.float32, name="dlogits")
        ops.host_store(loss_d2h, call_info.outputs[0])
        ops.host_store(grad_d2h, dlogits)
    shards = np.stack(np.split(LOGITS, REPLICAS, axis=1))
    offset_labels = np.stack([LABELS - r * width for r in range(REPLICAS)])  # as each member sees them
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run({logits_h2d: shards, labels_h2d: offset_labels})
    return out[loss_d2h], np.concatenate(list(out[grad_d2h]), axis=1)


def test_every_member_gets_the_whole_loss_and_its_own_classes_gradient():
    loss, dlogits = run()
    shifted = LOGITS - LOGITS.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    expected = -log_softmax[np.arange(SAMPLES), LABELS]
    for member in loss:
        np.testing.assert_allclose(member, expected, rtol=1e-5)
    one_hot = np.eye(CLASSES, dtype=np.float32)[LABELS]
    np.testing.assert_allclose(dlogits, DLOSS[:, None] * (np.exp(log_softmax) - one_hot), rtol=1e-5, atol=1e-6)
