"""Elementwise ops over more than two operands: maximum of N tensors, where, scaled_add."""
from __future__ import annotations

import functools
from typing import Optional, Union

import numpy as np

from workbench.ir import Constant, Op, Tensor, TensorSpec, constant, dtypes

from .casting import cast
from .elementwise import equal, mul, register_elementwise
from .registry import apply
from .rules import broadcast_shape, check_dtype, same_dtype

__all__ = ["maximum", "where", "scaled_add", "scaled_add_"]


# ----- maximum -----
def _maximum_infer(specs, attrs):
    dtype = same_dtype("maximum", specs)
    check_dtype("maximum", specs[0], "number")
    return [TensorSpec(broadcast_shape("maximum", *(s.shape for s in specs)), dtype)]


def _maximum_kernel(op: Op, env):
    if len(op.inputs) == 1:
        return np.copy
    if len(op.inputs) == 2:
        return np.maximum
    return lambda *arrays: functools.reduce(np.maximum, arrays)


def _zero(t: Tensor) -> Tensor:
    return constant(0, dtype=t.dtype)


def _maximum_grad(op, grads, fwd):
    """Each input gets the gradient where it equals the maximum (every tied input gets it in full)."""
    result = fwd(op.outputs[0])
    return [where(equal(fwd(t), result), grads[0], _zero(result)) for t in op.inputs]


register_elementwise("maximum", _maximum_infer, _maximum_kernel, grad=_maximum_grad, popart_class="MaxOp")


# ----- sum of N tensors -----
SUM_OF_MANY = "sum_of_many"  # PopART's Sum: made through popart._internal.ir; popxl.transforms.decompose_sum splits it


def _sum_of_many_infer(specs, attrs):
    if not specs:
        raise ValueError(f"{SUM_OF_MANY}: needs at least one tensor to sum")
    dtype = same_dtype(SUM_OF_MANY, specs)
    check_dtype(SUM_OF_MANY, specs[0], "number")
    return [TensorSpec(broadcast_shape(SUM_OF_MANY, *(s.shape for s in specs)), dtype)]


def _sum_of_many_kernel(op: Op, env):
    """Zeros and then each tensor added (broadcasting), as the init and adds that decompose_sum makes of it."""
    shape, dtype = op.outputs[0].shape, op.outputs[0].dtype.as_numpy()
    return lambda *arrays: functools.reduce(np.add, arrays, np.zeros(shape, dtype))


register_elementwise(SUM_OF_MANY, _sum_of_many_infer, _sum_of_many_kernel,
                     grad=lambda op, grads, fwd: [grads[0]] * len(op.inputs), popart_class="SumOp")


def maximum(*ts: Tensor) -> Tensor:
    """The largest of N tensors, elementwise (broadcasting)."""
    if not ts:
        raise ValueError("maximum needs at least one tensor")
    return apply("maximum", *ts)


# ----- where -----
def _where_infer(specs, attrs):
    condition, lhs, rhs = specs
    check_dtype("where", condition, "bool")
    dtype = same_dtype("where", [lhs, rhs])
    return [TensorSpec(broadcast_shape("where", condition.shape, lhs.shape, rhs.shape), dtype)]


def _where_grad(op, grads, fwd):
    condition, grad = fwd(op.inputs[0]), grads[0]
    return [None, where(condition, grad, _zero(grad)), where(condition, _zero(grad), grad)]


def _where_kernel(op: Op, env):
    """``np.where``; where one side is a constant of zero bits (a gradient masked by a condition, as
    for relu) and nothing broadcasts, the condition masks the other side's bits instead, the same
    numbers without a branch per element (several times faster on a mask that is half true)."""
    condition, lhs, rhs = op.inputs
    shape, size = op.outputs[0].shape, op.outputs[0].dtype.as_numpy().itemsize
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(size)
    if bits is None or not shape or condition.shape != shape:
        return np.where
    if _zero_bits(rhs) and lhs.shape == shape:
        return lambda cond, kept, _: _masked(kept, np.negative(cond, dtype=bits), bits)
    if _zero_bits(lhs) and rhs.shape == shape:
        return lambda cond, _, kept: _masked(kept, np.subtract(cond, 1, dtype=bits), bits)
    return np.where


def _zero_bits(t: Tensor) -> bool:
    return isinstance(t, Constant) and not np.ascontiguousarray(t.data).view(np.uint8).any()


def _masked(kept: np.ndarray, mask: np.ndarray, bits) -> np.ndarray:
    """``kept`` where ``mask`` is all ones, zero bits where it is zero."""
    np.bitwise_and(mask, kept.view(bits), out=mask)
    return mask.view(kept.dtype)


register_elementwise("where", _where_infer, _where_kernel, grad=_where_grad, popart_class="WhereOp")


def where(condition: Tensor, lhs: Tensor, rhs: Tensor) -> Tensor:
    """``lhs`` where ``condition`` is true, ``rhs`` elsewhere (broadcasting all three). A non-bool
    condition is cast to bool first (non-zero is true), as in popxl."""
    if isinstance(condition, Tensor) and condition.dtype is not dtypes.bool_:
        condition = cast(condition, dtypes.bool_)
    return apply("where", condition, lhs, rhs)


# ----- scaled_add -----
def _scaled_add_infer(op_type: str):
    def infer(specs, attrs):
        x, y, scales = specs[0], specs[1], specs[2:]
        check_dtype(op_type, x, "number")
        check_dtype(op_type, y, "number")
        if x.shape != y.shape:
            raise ValueError(f"{op_type}: X and Y must have the same shape (no broadcasting), got "
                             f"{x.shape} and {y.shape}")
        for name, spec in zip([n for n in "ab" if attrs[n] is None], scales):
            check_dtype(op_type, spec, "number")
            if spec.shape:
                raise ValueError(f"{op_type}: the scale {name} must be a scalar tensor (shape ()), got "
                                 f"shape {spec.shape}")
        return [TensorSpec(x.shape, x.dtype)]
    return infer


def _scaled_add_kernel(op: Op, env):
    """``a*X + b*Y`` in X's dtype; a scale given as a tensor arrives as an extra input."""
    dtype = op.outputs[0].dtype.as_numpy()
    a, b = op.attrs["a"], op.attrs["b"]
    if a is not None and b is not None:
        return lambda x, y: (a * x + b * y).astype(dtype, copy=False)
    if b is not None:
        return lambda x, y, a_: (a_ * x + b * y).astype(dtype, copy=False)
    if a is not None:
        return lambda x, y, b_: (a * x + b_ * y).astype(dtype, copy=False)
    return lambda x, y, a_, b_: (a_ * x + b_ * y).astype(dtype, copy=False)


def _scaled_add_in_place_kernel(op: Op, env):
    """``X = a*X + b*Y`` computed in X's memory: ``X *= a; X += b*Y`` gives the same numbers when X
    and Y are floats of one dtype and the scales are fixed; otherwise the result is copied in."""
    x, y = op.inputs[0].dtype.as_numpy(), op.inputs[1].dtype.as_numpy()
    a, b = op.attrs["a"], op.attrs["b"]
    if a is None or b is None or x != y or x.kind != "f":
        general = _scaled_add_kernel(op, env)

        def copied_in(target, *others):
            target[...] = general(target, *others)
            return target
        return copied_in

    def in_place(target, other):
        if a != 1.0:
            np.multiply(target, a, out=target)
        np.add(target, other if b == 1.0 else np.multiply(other, b), out=target)
        return target
    return in_place


def _scaled_add_into_kernel(op: Op, env):
    """``out = a*X + b*Y`` with X left as it was (the same numbers as the in-place kernel)."""
    general = _scaled_add_kernel(op, env)
    x, y = op.inputs[0].dtype.as_numpy(), op.inputs[1].dtype.as_numpy()
    a, b = op.attrs["a"], op.attrs["b"]
    if a != 1.0 or b is None or x != y or x.kind != "f":
        return lambda out, *inputs: np.copyto(out, general(*inputs))

    def into(out, target, other):
        np.add(target, other if b == 1.0 else np.multiply(other, b, out=out), out=out)
    return into


def _scaled_add_grad(op, grads, fwd):
    """X gets a g, Y gets b g (in Y's dtype); a scale given as a tensor gets sum(g X) or sum(g Y)."""
    grad = grads[0]
    scales = iter(op.inputs[2:])
    result, scale_grads = [], []
    for name, operand in zip("ab", op.inputs[:2]):
        if op.attrs[name] is not None:
            factor = constant(op.attrs[name], dtype=grad.dtype)
        else:
            scale = next(scales)
            factor = _like(fwd(scale), grad)
            total = apply("sum", mul(grad, _like(fwd(operand), grad)), axis=None, keepdims=False)
            scale_grads.append(_like(total, scale))
        result.append(_like(mul(grad, factor), operand))
    return result + scale_grads


def _like(t: Tensor, other: Tensor) -> Tensor:
    return t if t.dtype is other.dtype else cast(t, other.dtype)


register_elementwise("scaled_add", _scaled_add_infer("scaled_add"), _scaled_add_kernel, grad=_scaled_add_grad,
                     in_place=True, in_place_infer=_scaled_add_infer("scaled_add_"),
                     in_place_build=_scaled_add_in_place_kernel, into=_scaled_add_into_kernel,
                     popart_class="ScaledAddOp", popart_inplace_class="ScaledAddLhsInplaceOp")


def _scaled_add(op_type: str, X: Tensor, Y: Tensor, a, b) -> Tensor:
    scales: list[Tensor] = []
    attrs: dict[str, Optional[float]] = {}
    for name, value in (("a", a), ("b", b)):
        if isinstance(value, Tensor):
            scales.append(value)
            attrs[name] = None
        elif isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise TypeError(f"{op_type}: {name} must be a number or a scalar Tensor, got {value!r}")
        else:
            attrs[name] = float(value)
    return apply(op_type, X, Y, *scales, **attrs)


def scaled_add(X: Tensor, Y: Tensor, a: Union[float, Tensor] = 1.0,
               b: Union[float, Tensor] = 1.0) -> Tensor:
    """``a*X + b*Y`` for X and Y of one shape (their dtypes may differ; the result has X's).
    ``a`` and ``b`` are numbers or scalar tensors."""
    return _scaled_add("scaled_add", X, Y, a, b)


def scaled_add_(X: Tensor, Y: Tensor, a: Union[float, Tensor] = 1.0,
                b: Union[float, Tensor] = 1.0) -> Tensor:
    """``X = a*X + b*Y`` in place; the same rules as ``scaled_add``."""
    return _scaled_add("scaled_add_", X, Y, a, b)
