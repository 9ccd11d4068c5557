"""Rotary positional embedding, as the ``RotaryPosEmbedOp`` C++ custom op computes it: popxl-addons' op, and
the copy of it in Graphcore's Llama and Dolly PopXL applications (their ``rotary_pos_embed_binding``s, emulated
in ``workbench.popart._internal.custom_ops``).

Input 0 is ``x`` of shape (batch, seq, heads, head_size), inputs 1 and 2 the ``sin`` and ``cos`` tables of
shape (1 or batch, seq, rotary_dim / 2). The first ``rotary_dim`` elements of the head dimension are rotated
as complex numbers, the rest pass unchanged. popxl-addons' forward op pairs neighbouring elements ``2i`` and
``2i + 1``; the applications' copy (``halves``) pairs element ``i`` with element ``i + rotary_dim / 2``. Both
gradient ops pair neighbouring elements and rotate them back, so the applications' gradient is not their
forward op's transpose (but for a rotary dimension of 2); the gradient here is the C++ gradient op.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from workbench.ir import Tensor, TensorSpec

from .registry import OpDef, create_op, register

OP_TYPE = "rotary_pos_embed"
GRAD_OP_TYPE = "rotary_pos_embed_grad"


def _infer(specs, attrs):
    x, sin, cos = specs
    if len(x.shape) != 4:
        raise ValueError(f"{OP_TYPE}: x should have rank 4 (batch, seq, heads, head size), got shape {x.shape}")
    if len(sin.shape) != 3 or len(cos.shape) != 3:
        raise ValueError(f"{OP_TYPE}: the trig tables should have rank 3 (1 or batch, seq, rotary_dim / 2), got "
                         f"{sin.shape} and {cos.shape}")
    return [TensorSpec(x.shape, x.dtype)]


def _tables(sin: np.ndarray, cos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tables with a heads axis to broadcast over: (1 or batch, seq, 1, rotary_dim / 2)."""
    return sin[:, :, None, :], cos[:, :, None, :]


def _rotate_pairs(x: np.ndarray, sin: np.ndarray, cos: np.ndarray) -> np.ndarray:
    pairs = x.reshape(*x.shape[:3], x.shape[3] // 2, 2)
    real, imag = pairs[..., 0], pairs[..., 1]
    return np.stack([real * cos - imag * sin, imag * cos + real * sin], axis=4).reshape(x.shape)


def _rotate_halves(x: np.ndarray, sin: np.ndarray, cos: np.ndarray) -> np.ndarray:
    half = x.shape[3] // 2
    x1, x2 = x[..., :half], x[..., half:2 * half]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=3)


def _rotate_pairs_back(dx: np.ndarray, sin: np.ndarray, cos: np.ndarray) -> np.ndarray:
    pairs = dx.reshape(*dx.shape[:3], dx.shape[3] // 2, 2)
    real, imag = pairs[..., 0], pairs[..., 1]
    out = np.stack([real * cos + imag * sin, imag * cos - real * sin], axis=4)
    return out.reshape(dx.shape)


def _kernel_of(forward: bool):
    def build(op, env):
        rotary_dim = op.attrs["rotary_dim"]
        rotate = (_rotate_halves if op.attrs["halves"] else _rotate_pairs) if forward else _rotate_pairs_back

        def run(x, sin, cos):
            sin, cos = _tables(sin, cos)
            out = x.copy()
            out[..., :rotary_dim] = rotate(x[..., :rotary_dim], sin, cos).astype(x.dtype, copy=False)
            return out
        return run
    return build


def _grad(op, grads, fwd):
    if grads[0] is None:
        return [None, None, None]
    sin, cos = (fwd(t) for t in op.inputs[1:])
    out = create_op(GRAD_OP_TYPE, [grads[0], sin, cos], dict(op.attrs),
                    output_names=[op.inputs[0].name + "_grad"]).outputs[0]
    return [out, None, None]


register(OpDef(OP_TYPE, _infer, _kernel_of(forward=True), grad=_grad, popart_class="RotaryPosEmbedOp"))
register(OpDef(GRAD_OP_TYPE, _infer, _kernel_of(forward=False), popart_class="RotaryPosEmbedGradOp"))


def rotary_pos_embed(t: Tensor, sin: Tensor, cos: Tensor, rotary_dim: Optional[int] = None, *,
                     halves: bool = False, name: Optional[str] = None) -> Tensor:
    """Rotate the first ``rotary_dim`` elements (all by default) of the last axis of ``t`` by the angles whose
    sines and cosines ``sin`` and ``cos`` hold: neighbouring pairs, or with ``halves`` the two halves."""
    rotary_dim = t.shape[-1] if not rotary_dim else int(rotary_dim)
    if rotary_dim % 2:
        raise ValueError(f"{OP_TYPE}: rotary_dim must be a multiple of 2, got {rotary_dim}")
    return create_op(OP_TYPE, [t, sin, cos], {"rotary_dim": rotary_dim, "halves": bool(halves)},
                     output_names=[name or t.name + "_rotated"]).outputs[0]
