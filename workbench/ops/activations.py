"""Activation functions and clip, elementwise; half-precision inputs are computed in float32 (and the
erf-based GELU in float64), then rounded back to the input's dtype."""
from __future__ import annotations

import math
import mmap
from typing import Callable, Sequence

import numpy as np

from workbench.ir import Op, Tensor, TensorSpec, constant

from .elementwise import (add, greater_equal, like_input, logical_and, mul, register_elementwise, sub,
                          tanh, unary_op)
from .elementwise_nary import where
from .registry import OpDef, apply, register
from .special import erfc

__all__ = ["relu", "relu_", "gelu", "gelu_", "geluerf", "geluerf_", "swish", "swish_", "clip", "clamp"]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SQRT_HALF = math.sqrt(0.5)


def _at_least(fn: Callable[[np.ndarray], np.ndarray], working: type):
    """A kernel picker: ``fn`` computed in at least ``working`` precision, returned in the op's dtype."""
    def kernel_for(op: Op):
        dtype = op.outputs[0].dtype.as_numpy()
        wide = np.promote_types(dtype, working)
        if wide == dtype:
            return fn
        return lambda a: fn(a.astype(wide)).astype(dtype)
    return kernel_for


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def _geluerf(x: np.ndarray) -> np.ndarray:
    """x * Phi(x), written with erfc so that large negative x keeps its relative precision."""
    return 0.5 * x * erfc(-_SQRT_HALF * x)


def _swish(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(x), with sigmoid(x) = (1 + tanh(x/2)) / 2, which never overflows."""
    return 0.5 * x * (1.0 + np.tanh(0.5 * x))


def _geluerf_grad_kernel(op: Op, env):
    """g (Phi(x) + x phi(x)) for the exact GELU, in at least float64."""
    dtype = op.outputs[0].dtype.as_numpy()
    scale = 1.0 / math.sqrt(2.0 * math.pi)

    def kernel(grad, x):
        wide = x.astype(np.promote_types(dtype, np.float64))
        slope = 0.5 * erfc(-_SQRT_HALF * wide) + wide * scale * np.exp(-0.5 * wide * wide)
        return (grad * slope).astype(dtype)
    return kernel


register(OpDef("geluerf_grad", lambda specs, attrs: [TensorSpec(specs[1].shape, specs[1].dtype)],
               _geluerf_grad_kernel, popart_class="GeluErfGradOp"))


def _relu_grad(op, grads, fwd):
    return [apply("relu_grad", grads[0], fwd(op.outputs[0]))]


def _relu_grad_infer(specs, attrs):
    grad, out = specs
    if grad.shape != out.shape or grad.dtype != out.dtype:
        raise ValueError(f"relu_grad: the gradient {grad.dtype}{list(grad.shape)} and the relu output "
                         f"{out.dtype}{list(out.shape)} must have one shape and dtype")
    return [TensorSpec(grad.shape, grad.dtype)]


def _relu_grad_kernel(op: Op, env):
    """The gradient times the relu's slope, 1 where its output is positive and 0 elsewhere, as the IPU
    computes it (so a negative gradient times 0 is -0, and an infinite one NaN)."""
    return lambda grad, out: np.multiply(grad, np.greater(out, 0), dtype=grad.dtype)


def _relu_grad_grad(op, grads, fwd):
    """Linear in the gradient, and the slope is flat everywhere but at 0."""
    return [apply("relu_grad", grads[0], fwd(op.inputs[1])), None]


register(OpDef("relu_grad", _relu_grad_infer, _relu_grad_kernel, grad=_relu_grad_grad, popart_class="ReluGradOp"))


def _gelu_grad(op, grads, fwd):
    """y = x s, s = (1 + tanh u) / 2, u = c (x + a x^3): dy/dx = s + x (1 - tanh^2 u) c (1 + 3 a x^2) / 2."""
    x = fwd(op.inputs[0])

    def number(value: float) -> Tensor:
        return constant(value, dtype=x.dtype)

    square = mul(x, x)
    t = tanh(mul(number(_SQRT_2_OVER_PI), mul(x, add(number(1.0), mul(number(0.044715), square)))))
    slope_u = mul(number(0.5 * _SQRT_2_OVER_PI), add(number(1.0), mul(number(3 * 0.044715), square)))
    slope = add(mul(number(0.5), add(number(1.0), t)), mul(x, mul(sub(number(1.0), mul(t, t)), slope_u)))
    return [mul(grads[0], slope)]


def _swish_grad(op, grads, fwd):
    """y = x s with s = sigmoid(x) = (1 + tanh(x/2)) / 2: dy/dx = s (1 + x (1 - s))."""
    x = fwd(op.inputs[0])

    def number(value: float) -> Tensor:
        return constant(value, dtype=x.dtype)

    s = mul(number(0.5), add(number(1.0), tanh(mul(number(0.5), x))))
    return [mul(grads[0], mul(s, add(number(1.0), mul(x, sub(number(1.0), s)))))]


ZERO_ROW_LIMIT = 8192  # the most elements of the row of zeros that relu compares against
SHORT_ROW = 256  # a row length below which the loop over rows would cost more than the row saves


def zero_rows(shape: Sequence[int], dtype: np.dtype) -> tuple[tuple[int, int], np.ndarray]:
    """For max(t, 0) over a tensor of ``shape``: the [rows, length] shape to view it as and the
    zeros to compare each row with. NumPy vectorises ``maximum`` between two arrays, not against a
    scalar (three times slower); a row of at most ``ZERO_ROW_LIMIT`` zeros stays in cache where zeros
    of the tensor's size would be read from memory (or, as untouched pages, cost a page walk each).
    Where no row length between ``SHORT_ROW`` and the limit divides the size, the zeros are the
    tensor's size, as fresh anonymous pages that cost no memory while only read."""
    size = math.prod(shape)
    length = next(d for d in range(min(size, ZERO_ROW_LIMIT), 0, -1) if size % d == 0) if size else 1
    if length < min(size, SHORT_ROW):
        length = size
        zeros = np.frombuffer(mmap.mmap(-1, max(size * np.dtype(dtype).itemsize, 1)), dtype, size)
        return (1, size), zeros
    return (size // length, length), np.zeros(length, dtype)


def _relu_kernel(op: Op) -> Callable[[np.ndarray], np.ndarray]:
    """max(t, 0) against rows of zeros (``zero_rows``)."""
    shape = op.inputs[0].shape
    rows, zeros = zero_rows(shape, np.dtype(op.inputs[0].dtype.as_numpy()))
    return lambda a: np.maximum(a.reshape(rows), zeros).reshape(shape)


relu, relu_ = unary_op("relu", lambda a: np.maximum(a, 0), "Rectified linear unit: max(t, 0) per element.",
                       in_place=True, grad=_relu_grad, kernel_for=_relu_kernel, popart_class="ReluOp",
                       popart_inplace_class="ReluInplaceOp")
gelu, gelu_ = unary_op("gelu", _gelu, "Gaussian error linear unit, in its tanh approximation: "
                       "0.5 t (1 + tanh(sqrt(2/pi) (t + 0.044715 t^3))).", allowed="float", in_place=True,
                       kernel_for=_at_least(_gelu, np.float32), grad=_gelu_grad, built_for="number",
                       popart_class="GeluOp", popart_inplace_class="GeluInplaceOp")
geluerf, geluerf_ = unary_op("geluerf", _geluerf, "Gaussian error linear unit computed exactly: "
                             "t * Phi(t) = 0.5 t (1 + erf(t / sqrt(2))).", allowed="float", in_place=True,
                             kernel_for=_at_least(_geluerf, np.float64), built_for="number",
                             grad=lambda op, grads, fwd: [apply("geluerf_grad", grads[0], fwd(op.inputs[0]))],
                             popart_class="GeluErfOp", popart_inplace_class="GeluErfInplaceOp")
swish, swish_ = unary_op("swish", _swish, "Swish (SiLU) activation: t * sigmoid(t).", allowed="float",
                         in_place=True, kernel_for=_at_least(_swish, np.float32), grad=_swish_grad, built_for="number",
                         popart_class="SwishOp", popart_inplace_class="SwishInplaceOp")


def _clip_kernel(op: Op, env):
    """Bounds are rounded into the tensor's type: integers clip to the nearest integers inside
    [min, max] and within the type's range."""
    dtype = op.outputs[0].dtype.as_numpy()
    low, high = op.attrs["min"], op.attrs["max"]
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        low = np.clip(math.ceil(low) if math.isfinite(low) else low, info.min, info.max)
        high = np.clip(math.floor(high) if math.isfinite(high) else high, info.min, info.max)
    low, high = np.asarray(low).astype(dtype), np.asarray(high).astype(dtype)
    return lambda a: np.clip(a, low, high)


def _clip_grad(op, grads, fwd):
    """The gradient passes where the input lies within [min, max]."""
    x = fwd(op.inputs[0])
    inside = logical_and(greater_equal(x, constant(op.attrs["min"], dtype=x.dtype)),
                         greater_equal(constant(op.attrs["max"], dtype=x.dtype), x))
    return [where(inside, grads[0], constant(0, dtype=x.dtype))]


register_elementwise("clip", like_input("clip", "number"), _clip_kernel, grad=_clip_grad, popart_class="ClipOp")


def clip(t: Tensor, min: float = float("-inf"), max: float = float("inf")) -> Tensor:  # noqa: A002
    """Limit each element to the range [min, max]; NaN stays NaN."""
    for name, value in (("min", min), ("max", max)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise TypeError(f"clip: {name} must be a number, got {value!r}")
    return apply("clip", t, min=float(min), max=float(max))


clamp = clip
