"""Cross entropy of logits whose class axis is split across a replica group, as popxl-addons'
``CrossEntropyShardedOp`` C++ custom op computes it (emulated in ``workbench.popart._internal.custom_ops``).

Inputs are the member's logits (N, C / group size) and the labels (N), already offset into the member's
class range (out-of-range labels pick nothing there). The members all-reduce each row's maximum, then
its sum of ``exp(logit - max)``; each computes its part of ``-log_softmax`` and picks the labels' entries,
zero where out of range, and the picks are all-reduced: outputs are the loss per sample (the same on every
member) and the member's part of ``-log_softmax``. The gradient op gives
``dloss * (softmax - one_hot(label))`` for the member's classes.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from workbench.ir import ReplicaGrouping, Tensor, TensorSpec

from .collectives import _group, _members
from .registry import OpDef, create_op, register
from .rules import check_dtype

OP_TYPE = "cross_entropy_sharded"
GRAD_OP_TYPE = "cross_entropy_sharded_grad"


def _infer(specs, attrs):
    logits, labels = specs
    if len(logits.shape) != 2 or len(labels.shape) != 1 or logits.shape[0] != labels.shape[0]:
        raise ValueError(f"{OP_TYPE}: logits must be (n_samples, sharded_n_classes) and labels (n_samples,), got "
                         f"shapes {logits.shape} and {labels.shape}")
    check_dtype(OP_TYPE, labels, "int")
    return [TensorSpec((logits.shape[0],), logits.dtype), TensorSpec(logits.shape, logits.dtype)]


def _infer_grad(specs, attrs):
    return [TensorSpec(specs[3].shape, specs[3].dtype)]


def _in_range(labels: np.ndarray, classes: int) -> np.ndarray:
    return (labels >= 0) & (labels < classes)


def _kernel(op, env):
    exchange = env.exchange(op, _members(op, env))

    def add_over_group(value: np.ndarray) -> np.ndarray:
        total = None
        for part in exchange(value):
            total = part.copy() if total is None else total + part
        assert total is not None
        return total

    def run(logits, labels):
        dtype = logits.dtype
        maximum = np.max(np.stack(exchange(logits.max(axis=1))), axis=0)
        translated = logits - maximum[:, None]
        denominator = add_over_group(np.exp(translated).sum(axis=1, dtype=dtype))
        neg_log_softmax = -(translated - np.log(denominator).astype(dtype)[:, None])
        rows, hit = np.arange(len(labels)), _in_range(labels, logits.shape[1])
        picked = np.where(hit, neg_log_softmax[rows, np.where(hit, labels, 0)], 0).astype(dtype)
        return add_over_group(picked), neg_log_softmax
    return run


def _grad_kernel(op, env):
    def run(loss_grad, loss, neg_log_softmax, logits, labels):
        grad = np.exp(-neg_log_softmax) * loss_grad[:, None]
        rows = np.flatnonzero(_in_range(labels, logits.shape[1]))
        grad[rows, labels[rows]] -= loss_grad[rows]
        return grad.astype(logits.dtype, copy=False)
    return run


def _grad(op, grads, fwd):
    if grads[0] is None:
        return [None, None]
    inputs = [grads[0], fwd(op.outputs[0]), fwd(op.outputs[1]), fwd(op.inputs[0]), fwd(op.inputs[1])]
    out = create_op(GRAD_OP_TYPE, inputs, dict(op.attrs), output_names=[op.inputs[0].name + "_grad"]).outputs[0]
    return [out, None]


register(OpDef(OP_TYPE, _infer, _kernel, grad=_grad, meets_replicas=True, popart_class="CrossEntropyShardedOp"))
register(OpDef(GRAD_OP_TYPE, _infer_grad, _grad_kernel, popart_class="CrossEntropyShardedGradOp"))


def cross_entropy_sharded(logits: Tensor, labels: Tensor, group: Optional[ReplicaGrouping] = None,
                          available_memory_proportion: float = 0.4) -> tuple[Tensor, Tensor]:
    """The cross entropy of each row of ``logits``, whose classes are split across ``group`` (all replicas by
    default), at its label; and the member's part of the rows' negative log-softmax."""
    attrs = {"group": _group(OP_TYPE, group), "available_memory_proportion": float(available_memory_proportion)}
    op = create_op(OP_TYPE, [logits, labels], attrs,
                   output_names=[logits.name + "_cross_entropy", logits.name + "_neg_log_softmax"])
    return op.outputs[0], op.outputs[1]
