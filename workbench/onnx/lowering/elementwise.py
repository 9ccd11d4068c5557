"""Lowering rules of ONNX's elementwise ops: arithmetic, comparisons, logic, unary functions,
activations, variadic Sum/Max/Min/Mean, Where, Cast, Clip, Identity and Dropout (inference)."""
from __future__ import annotations

from functools import reduce

import numpy as np

from workbench import ops
from workbench.ir import constant, dtypes as wdtypes
from workbench.ops.registry import apply

from .random import dropped
from .table import TRAINING, NodeContext, lowers


def _legacy_broadcast(ctx: NodeContext, lhs, rhs):
    """Opset-6 arithmetic broadcasts only with ``broadcast=1``, aligning rhs at ``axis``."""
    if ctx.since < 7 and ctx.attrs.get("broadcast", 0) and "axis" in ctx.attrs and rhs.rank < lhs.rank:
        axis = ctx.attrs["axis"] % lhs.rank
        rhs = ops.reshape(rhs, tuple(rhs.shape) + (1,) * (lhs.rank - axis - rhs.rank))
    return lhs, rhs


def _binary(op_type: str, fn, *since: int):
    @lowers(op_type, *since)
    def rule(ctx: NodeContext):
        lhs, rhs = _legacy_broadcast(ctx, ctx.input(0), ctx.input(1))
        return [fn(lhs, rhs)]


_binary("Add", ops.add, 6, 7)
_binary("Sub", ops.sub, 6, 7)
_binary("Mul", ops.mul, 6, 7)
_binary("Div", ops.div, 6, 7)
_binary("Pow", ops.pow, 1, 7)
_binary("Equal", ops.equal, 1, 7, 11)
_binary("Greater", ops.greater, 1, 7, 9)
_binary("Less", lambda a, b: ops.greater(b, a), 1, 7, 9)
_binary("And", ops.logical_and, 1, 7)
_binary("Or", ops.logical_or, 1, 7)
_binary("Xor", lambda a, b: ops.logical_and(ops.logical_or(a, b), ops.logical_not(ops.logical_and(a, b))), 1, 7)


def _whole_sqrt(t):
    """Sqrt of integers (and booleans) as an IPU takes it: the root in float, truncated back to the
    input's type."""
    return ops.cast(ops.sqrt(ops.cast(t, wdtypes.float32)), t.dtype)


def _unary(op_type: str, fn, *since: int):
    @lowers(op_type, *since)
    def rule(ctx: NodeContext):
        return [fn(ctx.input(0))]


_unary("Abs", ops.abs, 1, 6)
_unary("Neg", ops.negate, 1, 6)
_unary("Floor", ops.floor, 1, 6)
_unary("Ceil", ops.ceil, 1, 6)
_unary("Sqrt", lambda t: ops.sqrt(t) if t.dtype.is_floating_point else _whole_sqrt(t), 1, 6)
_unary("Exp", ops.exp, 1, 6)
_unary("Log", ops.log, 1, 6)
_unary("Relu", ops.relu, 1, 6)
_unary("Tanh", ops.tanh, 1, 6)
_unary("Sin", ops.sin, 7)
_unary("Cos", ops.cos, 7)
_unary("Sign", ops.sign, 9)
_unary("Not", ops.logical_not, 1)
_unary("IsNaN", ops.isnan, 9)
_unary("Identity", lambda t: t, 1)
for _op_type, _kernel, _since in (
        ("Sigmoid", "sigmoid", (1, 6)), ("Erf", "erf", (9,)), ("Tan", "tan", (7,)), ("Asin", "asin", (7,)),
        ("Acos", "acos", (7,)), ("Atan", "atan", (7,)), ("Sinh", "sinh", (9,)), ("Cosh", "cosh", (9,)),
        ("Asinh", "asinh", (9,)), ("Acosh", "acosh", (9,)), ("Atanh", "atanh", (9,)),
        ("Softsign", "softsign", (1,)), ("Softplus", "softplus", (1,)), ("Reciprocal", "reciprocal", (1, 6))):
    _unary(_op_type, lambda t, _k=_kernel: apply(_k, t), *_since)


def _activation(op_type: str, kernel: str, names: tuple, *since: int):
    @lowers(op_type, *since)
    def rule(ctx: NodeContext):
        return [apply(kernel, ctx.input(0), **{n: float(ctx.attrs[n]) for n in names if n in ctx.attrs})]


_activation("Elu", "elu", ("alpha",), 1, 6)
_activation("Selu", "selu", ("alpha", "gamma"), 1, 6)
_activation("LeakyRelu", "leaky_relu", ("alpha",), 1, 6)
_activation("HardSigmoid", "hard_sigmoid", ("alpha", "beta"), 1, 6)
_activation("ThresholdedRelu", "thresholded_relu", ("alpha",), 10)


@lowers("IsInf", 10)
def _isinf(ctx: NodeContext):
    x = ctx.input(0)
    positive, negative = ctx.attrs.get("detect_positive", 1), ctx.attrs.get("detect_negative", 1)
    if positive and negative:
        return [ops.isinf(x)]
    if not (positive or negative):
        return [constant(np.zeros(x.shape, np.bool_))]
    zero = constant(np.zeros((), x.dtype.as_numpy()), x.dtype)
    side = ops.greater(x, zero) if positive else ops.greater(zero, x)
    return [ops.logical_and(ops.isinf(x), side)]


def _variadic(op_type: str, combine, *since: int):
    @lowers(op_type, *since)
    def rule(ctx: NodeContext):
        return [combine(ctx.inputs())]


def _mean(ts):
    total = reduce(ops.add, ts)
    return ops.div(total, constant(np.array(len(ts), total.dtype.as_numpy()), total.dtype))


_variadic("Sum", lambda ts: reduce(ops.add, ts), 6, 8)
_variadic("Max", lambda ts: ops.maximum(*ts) if len(ts) > 1 else ts[0], 6, 8)
_variadic("Min", lambda ts: reduce(lambda a, b: apply("minimum", a, b), ts), 6, 8)
_variadic("Mean", _mean, 6, 8)


@lowers("Where", 9)
def _where(ctx: NodeContext):
    return [ops.where(ctx.input(0), ctx.input(1), ctx.input(2))]


@lowers("Cast", 6, 9)
def _cast(ctx: NodeContext):
    x, dtype = ctx.input(0), ctx.output_dtype()
    return [x if x.dtype is dtype else ops.cast(x, dtype)]


@lowers("Clip", 6, 11)
def _clip(ctx: NodeContext):
    x = ctx.input(0)
    if ctx.since < 11:
        return [ops.clip(x, float(ctx.attrs.get("min", -np.inf)), float(ctx.attrs.get("max", np.inf)))]
    low = float(ctx.value(1)) if ctx.has(1) else -np.inf
    high = float(ctx.value(2)) if ctx.has(2) else np.inf
    return [ops.clip(x, low, high)]


@lowers("Dropout", 1, 6, 7, 10)
def _dropout(ctx: NodeContext):
    """Inference: the identity, and a mask of ones where a second output is asked for. Training:
    each element kept with probability 1 - ratio (a new mask each run) and scaled by 1 / (1 - ratio);
    the gradient goes through the same mask."""
    x = ctx.input(0)
    ratio = float(ctx.attrs.get("ratio", 0.5))
    wants_mask = len(ctx.node.output) > 1 and bool(ctx.node.output[1])
    if not ctx.model_state.get(TRAINING) or ratio == 0.0:
        return [x, constant(np.ones(x.shape, np.bool_), name="mask")] if wants_mask else [x]
    kept, mask = dropped(ctx, x, tuple(x.shape), ratio)
    return [kept, mask] if wants_mask else [kept]
