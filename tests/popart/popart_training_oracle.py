"""A small MLP built with popart.Builder, and a NumPy re-implementation of its training (float64):
the forward pass, the gradients by hand, and PopART's SGD and Adam update equations as its
documentation states them (not as the workbench orders its ops)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import popart


@dataclass
class Mlp:
    proto: bytes
    x: str
    label: str
    probs: str
    weights: dict  # id -> initial value
    batch: int
    classes: int
    inputs: int


def mlp(batch=4, inputs=6, hidden=5, classes=3, seed=0) -> Mlp:
    rng = np.random.default_rng(seed)
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [batch, inputs]), "x")
    values = {"w1": rng.normal(0, 0.5, (inputs, hidden)), "b1": rng.normal(0, 0.1, hidden),
              "w2": rng.normal(0, 0.5, (hidden, classes)), "b2": rng.normal(0, 0.1, classes)}
    ids = {k: builder.addInitializedInputTensor(v.astype(np.float32), k) for k, v in values.items()}
    h = builder.aiOnnx.relu([builder.aiOnnx.add([builder.aiOnnx.matmul([x, ids["w1"]]), ids["b1"]])])
    probs = builder.aiOnnx.softmax([builder.aiOnnx.add([builder.aiOnnx.matmul([h, ids["w2"]]), ids["b2"]])])
    label = builder.addInputTensor(popart.TensorInfo("INT32", [batch]), "label")
    return Mlp(builder.getModelProto(), x, label, probs, {k: v.astype(np.float32) for k, v in values.items()},
               batch, classes, inputs)


def data(model: Mlp, batches: int, seed=1):
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=(batches, model.batch, model.inputs)).astype(np.float32)
    labels = rng.integers(0, model.classes, (batches, model.batch)).astype(np.int32)
    return xs, labels


def loss_and_grads(w: dict, x: np.ndarray, label: np.ndarray, mean: bool):
    """NLL of softmax(relu(x w1 + b1) w2 + b2) summed (or meaned) over the samples, and its gradients."""
    x = x.astype(np.float64)
    pre = x @ w["w1"] + w["b1"]
    h = np.maximum(pre, 0)
    z = h @ w["w2"] + w["b2"]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    rows = np.arange(len(label))
    scale = 1.0 / len(label) if mean else 1.0
    loss = -np.log(p[rows, label]).sum() * scale
    dz = p.copy()
    dz[rows, label] -= 1
    dz *= scale
    dh = (dz @ w["w2"].T) * (pre > 0)
    return loss, {"w1": x.T @ dh, "b1": dh.sum(0), "w2": h.T @ dz, "b2": dz.sum(0)}


def sgd_step(w: dict, g: dict, state: dict, lr=0.1, wd=0.0, mm=0.0, dm=0.0, nesterov=False, specific=None):
    """PopART's SGD in its SGD1 order: the kept velocity ``u`` starts at ``(1-dm)*wd*w``; a step makes
    ``v = u + (1-dm)*g``, then ``w -= lr*v`` (Nesterov: ``w -= lr*(g + wd*w + mm*v)``), then keeps
    ``u = mm*v + (1-dm)*wd*w`` with the updated weight and this step's values."""
    for name in w:
        h = dict(lr=lr, wd=wd, mm=mm, dm=dm)
        h.update((specific or {}).get(name, {}))
        u = state.get(name, (1 - h["dm"]) * h["wd"] * w[name])
        v = u + (1 - h["dm"]) * g[name]
        step = g[name] + h["wd"] * w[name] + h["mm"] * v if nesterov else v
        w[name] = w[name] - h["lr"] * step
        state[name] = h["mm"] * v + (1 - h["dm"]) * h["wd"] * w[name]


def adam_step(w: dict, g: dict, state: dict, mode="Adam", lr=0.01, wd=0.0, b1=0.9, b2=0.999, eps=1e-6,
              mwn=10.0, l2=False):
    """PopART's Adam family, with decoupled weight decay (``l2=False``) or L2 regularisation."""
    for name in w:
        m, v, t = state.get(name, (0.0, 0.0, 0))
        s = g[name] + wd * w[name] if l2 else g[name]
        m = b1 * m + (1 - b1) * s
        v = np.maximum(b2 * v, np.abs(s)) if mode == "AdaMax" else b2 * v + (1 - b2) * s * s
        t += 1
        state[name] = (m, v, t)
        bias = mode in ("Adam", "Lamb", "AdaMax")
        mc = m / (1 - b1 ** t) if bias else m
        if mode == "AdaMax":
            x = mc / (v + eps)
        else:
            vc = v / (1 - b2 ** t) if bias else v
            x = mc / (np.sqrt(vc) + eps)
        if not l2:
            x = x + wd * w[name]
        ratio = 1.0
        if mode in ("Lamb", "LambNoBias"):
            r1, r2 = np.linalg.norm(w[name]), np.linalg.norm(x)
            ratio = min(r1, mwn) / r2 if r1 > 0 and r2 > 0 else 1.0
        w[name] = w[name] - ratio * lr * x


def session(model: Mlp, optimizer, bps=1, anchors=(), options=None, mean=False, loss_object=None):
    """A TrainingSession of ``model`` with an NllLoss node (Sum, or Mean with ``mean``)."""
    builder = popart.Builder(model.proto)
    reduction = popart.ReductionType.Mean if mean else popart.ReductionType.Sum
    loss = builder.aiGraphcore.nllloss([model.probs, model.label], reduction)
    flow = popart.DataFlow(bps, {a if a != "loss" else loss: popart.AnchorReturnType("ALL") for a in anchors})
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 2})
    training = popart.TrainingSession(fnModel=builder.getModelProto(), dataFlow=flow, loss=loss,
                                      optimizer=optimizer, deviceInfo=device,
                                      userOptions=options or popart.SessionOptions())
    training.prepareDevice()
    training.weightsFromHost()
    return training, loss


def trained_weights(training) -> dict:
    training.weightsToHost()
    out = {k: np.zeros_like(v) for k, v in training._host_weights.items()}
    training.readWeights(popart.PyWeightsIO(out))
    return out
