"""Activation functions and clip, elementwise; half-precision inputs are computed in float32 (and the
erf-based GELU in float64), then rounded back to the input's dtype."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from workbench.ir import Op, Tensor

from .elementwise import like_input, register_elementwise, unary_op
from .registry import apply
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


relu, relu_ = unary_op("relu", lambda a: np.maximum(a, 0), "Rectified linear unit: max(t, 0) per element.",
                       in_place=True)
gelu, gelu_ = unary_op("gelu", _gelu, "Gaussian error linear unit, in its tanh approximation: "
                       "0.5 t (1 + tanh(sqrt(2/pi) (t + 0.044715 t^3))).", allowed="float", in_place=True,
                       kernel_for=_at_least(_gelu, np.float32))
geluerf, geluerf_ = unary_op("geluerf", _geluerf, "Gaussian error linear unit computed exactly: "
                             "t * Phi(t) = 0.5 t (1 + erf(t / sqrt(2))).", allowed="float", in_place=True,
                             kernel_for=_at_least(_geluerf, np.float64))
swish, swish_ = unary_op("swish", _swish, "Swish (SiLU) activation: t * sigmoid(t).", allowed="float",
                         in_place=True, kernel_for=_at_least(_swish, np.float32))


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


register_elementwise("clip", like_input("clip", "number"), _clip_kernel)


def clip(t: Tensor, min: float = float("-inf"), max: float = float("inf")) -> Tensor:  # noqa: A002
    """Limit each element to the range [min, max]; NaN stays NaN."""
    for name, value in (("min", min), ("max", max)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise TypeError(f"clip: {name} must be a number, got {value!r}")
    return apply("clip", t, min=float(min), max=float(max))


clamp = clip
