"""Gradient rules of the ops of ``onnx_functions``: the derivative of each unary function (one
``unary_derivative`` op computing f'(x) from a table), pad (a slice of the gradient), the minimum of
two tensors, GatherElements / GatherND (the gradient scattered back, summing repeats) and local
response normalisation."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from workbench.ir import Op, Tensor, TensorSpec, constant

from .casting import cast
from .elementwise import add, div, equal, greater, logical_not, mul, negate, sub
from .elementwise_nary import where
from .grad_blocks import reshape
from .linalg import matmul
from .registry import OpDef, apply, register


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


SELU_ALPHA, SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875

# f'(x) of each unary op, with the op's attributes as keywords.
DERIVATIVES: dict[str, Callable[..., np.ndarray]] = {
    "sigmoid": lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)),
    "erf": lambda x: 2.0 / np.sqrt(np.pi) * np.exp(-x * x),
    "tan": lambda x: 1.0 + np.tan(x) ** 2,
    "asin": lambda x: 1.0 / np.sqrt(1.0 - x * x),
    "acos": lambda x: -1.0 / np.sqrt(1.0 - x * x),
    "atan": lambda x: 1.0 / (1.0 + x * x),
    "sinh": np.cosh,
    "cosh": np.sinh,
    "asinh": lambda x: 1.0 / np.sqrt(x * x + 1.0),
    "acosh": lambda x: 1.0 / np.sqrt(x * x - 1.0),
    "atanh": lambda x: 1.0 / (1.0 - x * x),
    "softsign": lambda x: 1.0 / (1.0 + np.abs(x)) ** 2,
    "softplus": _sigmoid,
    "elu": lambda x, alpha=1.0: np.where(x > 0, 1.0, alpha * np.exp(np.minimum(x, 0))),
    "selu": lambda x, alpha=SELU_ALPHA, gamma=SELU_GAMMA: gamma * np.where(x > 0, 1.0,
                                                                           alpha * np.exp(np.minimum(x, 0))),
    "leaky_relu": lambda x, alpha=0.01: np.where(x >= 0, 1.0, alpha),
    "hard_sigmoid": lambda x, alpha=0.2, beta=0.5: np.where(np.abs(alpha * x + beta - 0.5) < 0.5, alpha, 0.0),
    "thresholded_relu": lambda x, alpha=1.0: np.where(x > alpha, 1.0, 0.0),
    "reciprocal": lambda x: -1.0 / (x * x),
    "round": np.zeros_like,
    "log1p": lambda x: 1.0 / (1.0 + x),
    "expm1": np.exp,
}


def _derivative_kernel(op: Op, env) -> Callable:
    fn = DERIVATIVES[op.attrs["of"]]
    params = dict(op.attrs["params"])
    dtype = op.outputs[0].dtype.as_numpy()
    return lambda x: np.asarray(fn(x.astype(np.promote_types(dtype, np.float32)), **params), dtype=dtype)


register(OpDef("unary_derivative", lambda specs, attrs: [TensorSpec(specs[0].shape, specs[0].dtype)],
               _derivative_kernel, popart_class="ElementWiseNonLinearUnaryGradOp"))


def unary_grad(op_type: str) -> Optional[Callable]:
    """The gradient rule ``g * f'(x)`` of a unary op of the table, or None."""
    if op_type not in DERIVATIVES:
        return None

    def rule(op: Op, grads, fwd):
        x = fwd(op.inputs[0])
        derivative = apply("unary_derivative", x, of=op_type, params=tuple(sorted(op.attrs.items())))
        return [mul(grads[0], derivative)]
    return rule


def pad_grad(op: Op, grads, fwd):
    """Constant padding: the gradient cut back to the input (negative pads crop, so they pad with zeros)."""
    if op.attrs["mode"] != "constant":
        return [_reflect_or_edge_grad(op, grads[0])]
    return [apply("pad", grads[0], pads=tuple(-p for p in op.attrs["pads"]), mode="constant", value=0.0)]


def _reflect_or_edge_grad(op: Op, grad: Tensor) -> Tensor:
    """Reflect and edge padding copy input elements: their gradient is the padding's transpose,
    applied as a fixed 0/1 matrix on the flattened tensor."""
    shape = op.inputs[0].shape
    size = int(np.prod(shape))
    index = np.arange(size, dtype=np.float64).reshape(shape)
    rank = len(shape)
    pads, mode = op.attrs["pads"], op.attrs["mode"]
    crop = tuple(slice(max(-pads[i], 0), d - max(-pads[i + rank], 0)) for i, d in enumerate(shape))
    widths = [(max(pads[i], 0), max(pads[i + rank], 0)) for i in range(rank)]
    source = np.pad(index[crop], widths, mode=mode).astype(np.int64).reshape(-1)
    matrix = np.zeros((source.size, size), grad.dtype.as_numpy())
    matrix[np.arange(source.size), source] = 1
    flat = reshape(grad, (1, source.size))
    return reshape(matmul(flat, constant(matrix, grad.dtype, downcast=False)), shape)


def minimum_grad(op: Op, grads, fwd):
    """The gradient goes to the smaller input (to the first on ties)."""
    a, b = fwd(op.inputs[0]), fwd(op.inputs[1])
    first = cast(logical_not(greater(a, b)), grads[0].dtype)
    return [mul(grads[0], first), sub(grads[0], mul(grads[0], first))]


def atan2_grad(op: Op, grads, fwd):
    """d atan2(y, x) = (x dy - y dx) / (x^2 + y^2), and 0 at the origin (as PopART and PyTorch give)."""
    y, x = fwd(op.inputs[0]), fwd(op.inputs[1])
    squared = add(mul(x, x), mul(y, y))
    zero = constant(np.zeros((), squared.dtype.as_numpy()), squared.dtype)
    at_origin = equal(squared, zero)
    scale = where(at_origin, zero, div(grads[0], where(at_origin, constant(np.ones((), squared.dtype.as_numpy()),
                                                                           squared.dtype), squared)))
    return [mul(scale, x), negate(mul(scale, y))]


def _scatter_sum_kernel(op: Op, env) -> Callable:
    """``zeros(shape)`` with ``updates`` added at the positions a gather read (repeats summed)."""
    shape, kind, axis = op.attrs["shape"], op.attrs["kind"], op.attrs["axis"]

    def scatter(updates, indices):
        out = np.zeros(shape, updates.dtype)
        if kind == "elements":
            indices = np.where(indices < 0, indices + shape[axis], indices)
            grid = list(np.indices(indices.shape, sparse=True))
            grid[axis] = indices
            np.add.at(out, tuple(grid), updates)
        else:
            depth = indices.shape[-1]
            indices = np.where(indices < 0, indices + np.array(shape[:depth]), indices)
            flat = indices.reshape(-1, depth)
            rows = updates.reshape((len(flat),) + tuple(shape[depth:]))
            np.add.at(out, tuple(flat.T), rows)
        return out
    return scatter


register(OpDef("gather_scatter_sum", lambda specs, attrs: [TensorSpec(tuple(attrs["shape"]), specs[0].dtype)],
               _scatter_sum_kernel, popart_class="GatherGradOp"))


def gather_grad(kind: str):
    def rule(op: Op, grads, fwd):
        return [apply("gather_scatter_sum", grads[0], fwd(op.inputs[1]), shape=tuple(op.inputs[0].shape),
                      kind=kind, axis=op.attrs.get("axis", 0)), None]
    return rule


def _window_sum(a: np.ndarray, size: int, reverse: bool = False) -> np.ndarray:
    """Sums over LRN's channel window (its transpose with ``reverse``)."""
    before, after = (size - 1) // 2, size // 2
    if reverse:
        before, after = after, before
    padded = np.pad(a, [(0, 0), (before, after)] + [(0, 0)] * (a.ndim - 2))
    return sum(padded[:, i:i + a.shape[1]] for i in range(size))


def _lrn_grad_kernel(op: Op, env) -> Callable:
    """y = x * d**-beta with d = bias + alpha/size * window(x^2):
    dx = g * d**-beta - 2*alpha*beta/size * x * window'(g * x * d**(-beta-1))."""
    size, alpha, beta, bias = (op.attrs[k] for k in ("size", "alpha", "beta", "bias"))
    dtype = op.outputs[0].dtype.as_numpy()

    def grad(x, g):
        x, g = x.astype(np.float64), g.astype(np.float64)
        d = bias + alpha / size * _window_sum(x * x, size)
        back = _window_sum(g * x * d ** (-beta - 1), size, reverse=True)
        return (g * d ** -beta - 2 * alpha * beta / size * x * back).astype(dtype)
    return grad


register(OpDef("lrn_grad", lambda specs, attrs: [specs[0]], _lrn_grad_kernel, popart_class="LRNGradOp"))


def lrn_grad(op: Op, grads, fwd):
    params = {k: op.attrs[k] for k in ("size", "alpha", "beta", "bias")}
    return [apply("lrn_grad", fwd(op.inputs[0]), grads[0], **params)]


GRADS = {"lrn": lrn_grad, "pad": pad_grad, "minimum": minimum_grad, "atan2": atan2_grad, "gather_elements": gather_grad("elements"),
         "gather_nd": gather_grad("nd")}


def grad_rule(op_type: str) -> Optional[Callable]:
    """The gradient rule of an op registered by ``kernels``, or None."""
    return GRADS.get(op_type) or unary_grad(op_type)
