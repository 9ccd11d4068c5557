"""Layer normalisation of a tensor whose hidden axis is split across a replica group, as popxl-addons'
``LayerNormDistributedOp`` C++ custom op computes it (emulated in ``workbench.popart._internal.custom_ops``).

Input ``x`` is (N, H / group size) on each member, ``scale`` and ``bias`` the member's (H / group size)
slices. The members all-reduce each row's sum and sum of squares (in float32; float64 stays float64), so the
mean and inverse standard deviation of a row are those over the whole hidden axis; outputs are ``y``, the mean
and the inverse standard deviation (N each, the dtype of ``x``).

The gradient op whitens ``x`` again, and all-reduces the row sums of the output gradient ``dy`` and of
``dy * x_hat``: ``dx = inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat))``, means over the whole hidden
axis. As the C++ op does, it takes ``dy`` as the gradient of ``x_hat`` (it does not multiply by the scale
first). ``dscale`` and ``dbias`` are the member's own column sums of ``dy * x_hat`` and ``dy``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from workbench.ir import ReplicaGrouping, Tensor, TensorSpec

from .collectives import _group, _members
from .registry import OpDef, create_op, register

OP_TYPE = "layer_norm_distributed"
GRAD_OP_TYPE = "layer_norm_distributed_grad"


def _infer(specs, attrs):
    x, scale, bias = specs
    if len(x.shape) != 2 or len(scale.shape) != 1 or len(bias.shape) != 1:
        raise ValueError(f"{OP_TYPE}: x must have rank 2 and scale and bias rank 1, got shapes {x.shape}, "
                         f"{scale.shape} and {bias.shape}")
    row = TensorSpec((x.shape[0],), x.dtype)
    return [TensorSpec(x.shape, x.dtype), row, row]


def _infer_grad(specs, attrs):
    dy, x, scale = specs[:3]
    return [TensorSpec(x.shape, x.dtype), TensorSpec(scale.shape, scale.dtype), TensorSpec(scale.shape, scale.dtype)]


def _row_sums_over_group(op, env):
    """A function of two (N, h) arrays: their row sums, added over the members (replica order)."""
    exchange = env.exchange(op, _members(op, env))

    def sums(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        total = None
        for part in exchange(np.stack([a.sum(axis=1), b.sum(axis=1)])):
            total = part.copy() if total is None else total + part
        assert total is not None
        return total[0], total[1]
    return sums


def _working_type(x: np.ndarray) -> np.dtype:
    """float32 partials, as the IPU's; float64 stays float64."""
    return np.result_type(x.dtype, np.float32)


def _hidden_size(op) -> int:
    return op.inputs[0].shape[1] * op.attrs["group"].group_size


def _kernel(op, env):
    sums, hidden, epsilon = _row_sums_over_group(op, env), _hidden_size(op), op.attrs["epsilon"]

    def run(x, scale, bias):
        work = _working_type(x)
        x32 = x.astype(work)
        total, squares = sums(x32, x32 * x32)
        mean = total / hidden
        inv_std = 1.0 / np.sqrt(np.maximum(squares / hidden - mean * mean, 0.0) + epsilon)
        y = (x32 - mean[:, None]) * inv_std[:, None] * scale.astype(work) + bias.astype(work)
        return y.astype(x.dtype), mean.astype(x.dtype), inv_std.astype(x.dtype)
    return run


def _grad_kernel(op, env):
    sums, hidden = _row_sums_over_group(op, env), _hidden_size(op)

    def run(dy, x, scale, mean, inv_std):
        work = _working_type(x)
        dy32, inv = dy.astype(work), inv_std.astype(work)[:, None]
        whitened = (x.astype(work) - mean.astype(work)[:, None]) * inv
        dy_sum, dy_whitened_sum = sums(dy32, dy32 * whitened)
        dx = inv * (dy32 - dy_sum[:, None] / hidden - whitened * dy_whitened_sum[:, None] / hidden)
        dscale = (dy32 * whitened).sum(axis=0)
        dbias = dy32.sum(axis=0)
        return dx.astype(x.dtype), dscale.astype(scale.dtype), dbias.astype(scale.dtype)
    return run


def _grad(op, grads, fwd):
    if grads[0] is None:
        return [None, None, None]
    x, scale = fwd(op.inputs[0]), fwd(op.inputs[1])
    mean, inv_std = fwd(op.outputs[1]), fwd(op.outputs[2])
    grad_op = create_op(GRAD_OP_TYPE, [grads[0], x, scale, mean, inv_std], dict(op.attrs),
                        output_names=[op.inputs[i].name + "_grad" for i in range(3)])
    return list(grad_op.outputs)


register(OpDef(OP_TYPE, _infer, _kernel, grad=_grad, meets_replicas=True,
               popart_class="LayerNormDistributedOp"))
register(OpDef(GRAD_OP_TYPE, _infer_grad, _grad_kernel, meets_replicas=True,
               popart_class="LayerNormDistributedGradOp"))


def layer_norm_distributed(t: Tensor, scale: Tensor, bias: Tensor, epsilon: float = 1e-5,
                           group: Optional[ReplicaGrouping] = None) -> tuple[Tensor, Tensor, Tensor]:
    """Normalise the rows of ``t``, whose columns are split across the members of ``group`` (all replicas
    by default); returns the normalised tensor, the row means and the rows' inverse standard deviations."""
    attrs = {"epsilon": float(epsilon), "group": _group(OP_TYPE, group)}
    op = create_op(OP_TYPE, [t, scale, bias], attrs,
                   output_names=[t.name + "_norm", t.name + "_mean", t.name + "_inv_std_dev"])
    return op.outputs[0], op.outputs[1], op.outputs[2]
