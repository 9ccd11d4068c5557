"""Gradient rules of the normalisations and the negative log-likelihood losses of ``nn.py``."""
from __future__ import annotations

from typing import Optional

import numpy as np

from workbench.ir import Op, Tensor, TensorSpec, constant, dtypes

from . import grad_blocks as blocks
from .casting import cast
from .elementwise import equal, greater, logical_not, sqrt
from .elementwise_nary import maximum, where
from .reductions import sum as reduce_sum
from .registry import OpDef, apply, apply_many, register


def _per_channel(rank: int, channels: int) -> tuple[int, ...]:
    """The shape that broadcasts one value per channel over an [N, C, ...] tensor."""
    return (1, channels) + (1,) * (rank - 2)


def _group_norm_grad_infer(specs, attrs):
    x, weight = specs[1], specs[2]
    return [TensorSpec(x.shape, x.dtype), TensorSpec(weight.shape, weight.dtype),
            TensorSpec(weight.shape, weight.dtype)]


def _group_norm_grad_kernel(op, env):
    """The gradients of group_norm's normalised output for its input, weight and bias, from the
    forward input and statistics, in one pass (as PopART's GroupNormGradOp)."""
    shape, groups = op.inputs[1].shape, op.attrs["num_groups"]
    dtype, weight_dtype = op.inputs[1].dtype.as_numpy(), op.inputs[2].dtype.as_numpy()
    compute = np.dtype(np.float32) if dtype == np.float16 else dtype
    stats, per_channel = (shape[0], groups, 1), _per_channel(len(shape), shape[1])
    other_axes = (0,) + tuple(range(2, len(shape)))

    def group_norm_grad(grad, x, weight, mean, inv_std):
        grad = grad.astype(compute, copy=False)
        inv_std = inv_std.astype(compute, copy=False).reshape(stats)
        normed = (x.astype(compute, copy=False).reshape(shape[0], groups, -1) - mean.reshape(stats)) * inv_std
        bias_grad = grad.sum(other_axes)
        weight_grad = (grad * normed.reshape(shape)).sum(other_axes)
        scaled = (grad * weight.reshape(per_channel)).reshape(normed.shape)
        input_grad = inv_std * (scaled - scaled.mean(-1, keepdims=True)
                                - normed * (scaled * normed).mean(-1, keepdims=True))
        return (input_grad.reshape(shape).astype(dtype), weight_grad.astype(weight_dtype),
                bias_grad.astype(weight_dtype))
    return group_norm_grad


register(OpDef("group_norm_grad", _group_norm_grad_infer, _group_norm_grad_kernel, popart_class="GroupNormGradOp"))


def group_norm_grad(op, grads, fwd):
    """Gradients for the input (through the normalised value, one GroupNormGrad op, and, when they
    are used, the statistics outputs), the weight and the bias."""
    grad, mean_grad, inv_std_grad = grads
    shape, groups = op.inputs[0].shape, op.attrs["num_groups"]
    size = op.inputs[0].nelms // (shape[0] * groups)
    stats, grouped = (shape[0], groups, 1), (shape[0], groups, size)
    input_grad = weight_grad = bias_grad = None
    if grad is not None:
        input_grad, weight_grad, bias_grad = apply_many(
            "group_norm_grad", grad, fwd(op.inputs[0]), fwd(op.inputs[1]), fwd(op.outputs[1]), fwd(op.outputs[2]),
            num_groups=groups)
    if mean_grad is not None:
        term = blocks.reshape(blocks.reshape(mean_grad, stats) * (1 / size) + blocks.zeros(grouped, mean_grad.dtype),
                              shape)
        input_grad = term if input_grad is None else input_grad + term
    if inv_std_grad is not None:
        inv_std = blocks.reshape(fwd(op.outputs[2]), stats)
        normed = (blocks.reshape(fwd(op.inputs[0]), grouped)
                  - blocks.reshape(fwd(op.outputs[1]), stats)) * inv_std
        term = blocks.reshape(blocks.reshape(inv_std_grad, stats) * inv_std * inv_std * normed * (-1 / size), shape)
        input_grad = term if input_grad is None else input_grad + term
    return [input_grad, weight_grad, bias_grad]


def batch_norm_grad(op, grads, fwd):
    """Gradients for the input, scale, bias, mean and var of the per-channel affine map."""
    grad = grads[0]
    if grad is None:
        return [None] * 5
    x, scale, _, mean, var = (fwd(t) for t in op.inputs)
    per_channel = _per_channel(x.rank, x.shape[1])
    inv_std = 1 / sqrt(var + op.attrs["epsilon"])
    factor = scale * inv_std
    total = blocks.sum_per_channel(grad)
    spread = blocks.sum_per_channel(grad * (x - blocks.reshape(mean, per_channel)))
    return [grad * blocks.reshape(factor, per_channel), spread * inv_std, total, -total * factor,
            spread * scale * inv_std * inv_std * inv_std * -0.5]


def _nll_terms(op, fwd):
    """For the gradient: probs, the one-hot rows of the labels that pick a probability, the 0/1
    weights of the samples that count (None without ignore_index) and the mean's divisor."""
    probs, labels = fwd(op.inputs[0]), fwd(op.inputs[1])
    if labels.shape != probs.shape[:-1]:  # as many labels as rows, in another shape
        labels = blocks.reshape(labels, probs.shape[:-1])
    classes, ignore = probs.shape[-1], op.attrs["ignore_index"]
    picked = where(greater(labels, constant(-1, dtype=labels.dtype)), labels, constant(classes, dtype=labels.dtype))
    hot = apply("onehot", picked, constant(np.int32(classes)), constant(np.array([0, 1]), dtype=probs.dtype),
                axis=labels.rank, depth=classes)
    kept = None
    if ignore is not None:
        kept = cast(logical_not(equal(labels, constant(ignore, dtype=labels.dtype))), probs.dtype)
    divisor = None
    if op.attrs["reduction"] == "mean":
        divisor = float(max(labels.nelms, 1)) if kept is None else maximum(reduce_sum(kept), constant(1, probs.dtype))
    return probs, hot, kept, divisor


def _per_sample(weight: Tensor, kept, divisor, rank: int) -> Tensor:
    """``weight`` (broadcasting to the labels) times the sample weights over the divisor, with a
    trailing axis to broadcast along the classes."""
    if kept is not None:
        weight = weight * kept
    if divisor is not None:
        weight = weight / divisor
    return blocks.reshape(weight, (1,) * (rank - weight.rank) + weight.shape + (1,))


def _nll_probs_grad(op, loss_grad: Tensor, terms) -> Tensor:
    probs, hot, kept, divisor = terms
    weight = hot * _per_sample(loss_grad, kept, divisor, probs.rank - 1)
    if op.attrs.get("log_prob", False):
        return -weight
    floor = 6.104e-05 if probs.dtype is dtypes.float16 else 1e-7
    return -weight / maximum(probs, constant(floor, probs.dtype))


def nll_grad(op, grads, fwd):
    """The gradient reaches the probability each sample's label picks: -1/p (or -1 with
    log_prob), scaled as the reduction scales the loss."""
    if grads[0] is None:
        return [None, None]
    return [_nll_probs_grad(op, grads[0], _nll_terms(op, fwd)), None]


def nll_with_softmax_grad_grad(op, grads, fwd):
    """Through the loss as ``nll_loss``; through the gradient output, which is linear in probs
    and in loss_grad, back to both."""
    terms = _nll_terms(op, fwd)
    probs, hot, kept, divisor = terms
    probs_grad = loss_grad_grad = None
    if grads[0] is not None:
        probs_grad = _nll_probs_grad(op, grads[0], terms)
    if grads[1] is not None:
        loss_grad = fwd(op.inputs[2])
        if loss_grad.dtype is not probs.dtype:
            loss_grad = cast(loss_grad, probs.dtype)
        # Samples whose label is out of range have a zero row in ``hot`` and no gradient output.
        in_range = reduce_sum(hot, axis=-1, keepdims=True)
        term = grads[1] * in_range * _per_sample(loss_grad, kept, divisor, probs.rank - 1)
        probs_grad = term if probs_grad is None else probs_grad + term
        loss_grad_grad = _per_sample(reduce_sum(grads[1] * in_range * (probs - hot), axis=-1), kept, divisor,
                                     probs.rank - 1)
        loss_grad_grad = blocks.reshape(loss_grad_grad, op.inputs[1].shape)
        if loss_grad_grad.dtype is not op.inputs[2].dtype:
            loss_grad_grad = cast(loss_grad_grad, op.inputs[2].dtype)
    return [probs_grad, None, loss_grad_grad]


def softmax_under_nll(op: Op) -> Optional[Op]:
    """For an ``nll_loss`` of probabilities (not log-probabilities) made by a softmax over the last
    axis: that softmax, whose gradient autodiff may then take with the loss's in one op. Else None."""
    if op.type != "nll_loss" or op.attrs.get("log_prob", False):
        return None
    probs = op.inputs[0]
    softmax = probs.producer
    if softmax is None or softmax.type != "softmax" or softmax.attrs["axis"] != probs.rank - 1:
        return None
    return softmax
