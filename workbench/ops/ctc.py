"""Connectionist temporal classification loss (PopART's ``aiGraphcore.ctcloss``): for each sample, minus the log
probability of its target over every alignment of the input frames, by the forward (alpha) recursion in log
space; its gradient with respect to the log probabilities by the forward-backward products.

``log_probs [T, N, C]`` (log-softmaxed over the classes), ``targets [N, S]`` (no blanks), ``input_lengths [N]``,
``target_lengths [N]``; the output is ``[N]``, one loss per sample, in the dtype of ``log_probs`` (infinite where
the target cannot be aligned with the input). Frames past a sample's input length take no part.
"""
from __future__ import annotations

import numpy as np

from workbench.ir import Op, Tensor, TensorSpec

from .elementwise import mul
from .grad_blocks import reshape
from .registry import OpDef, create_op, register

OP_TYPE = "ctc_loss"
GRAD_OP_TYPE = "ctc_loss_grad"


def _infer(specs, attrs):
    log_probs, targets, input_lengths, target_lengths = specs
    if len(log_probs.shape) != 3 or len(targets.shape) != 2:
        raise ValueError(f"{OP_TYPE}: expected log_probs [T, N, C] and targets [N, S], got {log_probs.shape} and "
                         f"{targets.shape}")
    batch = log_probs.shape[1]
    if targets.shape[0] != batch or input_lengths.shape != (batch,) or target_lengths.shape != (batch,):
        raise ValueError(f"{OP_TYPE}: targets, input_lengths and target_lengths must have the batch size {batch} "
                         f"first, got {targets.shape}, {input_lengths.shape} and {target_lengths.shape}")
    if not 0 <= attrs["blank"] < log_probs.shape[2]:
        raise ValueError(f"{OP_TYPE}: blank {attrs['blank']} is not one of the {log_probs.shape[2]} classes")
    return [TensorSpec((batch,), log_probs.dtype)]


def _extended(target: np.ndarray, blank: int) -> np.ndarray:
    """The target with a blank before, between and after its labels."""
    out = np.full(2 * len(target) + 1, blank, np.int64)
    out[1::2] = target
    return out


def _can_skip(ext: np.ndarray, blank: int) -> np.ndarray:
    """Where a path may jump two places: onto a label that differs from the one two places back."""
    skip = np.zeros(len(ext), bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    return skip


def _alphas(lp: np.ndarray, ext: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """``alpha[t, s]``: the log probability of the paths over frames 0..t ending at place s."""
    frames, places = len(lp), len(ext)
    alpha = np.full((frames, places), -np.inf)
    alpha[0, :min(2, places)] = lp[0, ext[:2]]
    for t in range(1, frames):
        prev = alpha[t - 1]
        stay, step = prev, np.concatenate([[-np.inf], prev[:-1]])
        jump = np.where(skip, np.concatenate([[-np.inf, -np.inf], prev[:-2]]), -np.inf)
        alpha[t] = np.logaddexp(np.logaddexp(stay, step), jump) + lp[t, ext]
    return alpha


def _betas(lp: np.ndarray, ext: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """``beta[t, s]``: the log probability of the paths over frames t..end starting at place s."""
    frames, places = len(lp), len(ext)
    beta = np.full((frames, places), -np.inf)
    beta[-1, max(places - 2, 0):] = lp[-1, ext[max(places - 2, 0):]]
    jump_from = np.concatenate([skip[2:], [False, False]])  # place s may jump to s + 2
    for t in range(frames - 2, -1, -1):
        nxt = beta[t + 1]
        stay, step = nxt, np.concatenate([nxt[1:], [-np.inf]])
        jump = np.where(jump_from, np.concatenate([nxt[2:], [-np.inf, -np.inf]]), -np.inf)
        beta[t] = np.logaddexp(np.logaddexp(stay, step), jump) + lp[t, ext]
    return beta


def _samples(op: Op, log_probs, targets, input_lengths, target_lengths):
    """Each sample's frames of log probabilities (float64), its extended target and where it may skip."""
    blank = op.attrs["blank"]
    for n in range(log_probs.shape[1]):
        lp = log_probs[:int(input_lengths[n]), n].astype(np.float64)
        ext = _extended(targets[n, :int(target_lengths[n])].astype(np.int64), blank)
        yield n, lp, ext, _can_skip(ext, blank)


def _loss_kernel(op: Op, env):
    def ctc_loss(log_probs, targets, input_lengths, target_lengths):
        losses = np.full(log_probs.shape[1], np.inf)
        for n, lp, ext, skip in _samples(op, log_probs, targets, input_lengths, target_lengths):
            if len(lp):
                alpha = _alphas(lp, ext, skip)
                losses[n] = -np.logaddexp.reduce(alpha[-1, -2:])
        return losses.astype(log_probs.dtype)
    return ctc_loss


def _grad_kernel(op: Op, env):
    """d loss[n] / d log_probs[t, n, c] = -sum over the places s labelled c of exp(alpha + beta - lp + loss);
    0 for a sample whose loss is infinite, and past its input length."""
    def ctc_loss_grad(log_probs, targets, input_lengths, target_lengths):
        grad = np.zeros(log_probs.shape, np.float64)
        for n, lp, ext, skip in _samples(op, log_probs, targets, input_lengths, target_lengths):
            if not len(lp):
                continue
            alpha, beta = _alphas(lp, ext, skip), _betas(lp, ext, skip)
            loss = -np.logaddexp.reduce(alpha[-1, -2:])
            if not np.isfinite(loss):
                continue
            occupancy = np.exp(alpha + beta - lp[:, ext] + loss)  # [frames, places]
            for s, label in enumerate(ext):
                grad[:len(lp), n, label] -= occupancy[:, s]
        return grad.astype(log_probs.dtype)
    return ctc_loss_grad


def _grad(op, grads, fwd):
    if grads[0] is None:
        return [None, None, None, None]
    per_sample = create_op(GRAD_OP_TYPE, [fwd(t) for t in op.inputs], dict(op.attrs)).outputs[0]
    incoming = reshape(grads[0], (1, per_sample.shape[1], 1))  # each sample's gradient times its loss's
    return [mul(per_sample, incoming), None, None, None]


register(OpDef(OP_TYPE, _infer, _loss_kernel, grad=_grad, popart_class="CtcLossOp"))
register(OpDef(GRAD_OP_TYPE, lambda specs, attrs: [specs[0]], _grad_kernel, popart_class="CtcGradOp"))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor,
             blank: int = 0) -> Tensor:
    """Each sample's CTC loss (see the module docstring), ``[N]``."""
    return create_op(OP_TYPE, [log_probs, targets, input_lengths, target_lengths], {"blank": int(blank)},
                     output_names=[log_probs.name + "_ctc"]).outputs[0]
