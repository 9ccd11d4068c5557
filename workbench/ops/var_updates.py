"""Variable updates: in-place ops on their first input, for optimisers and accumulators."""
from __future__ import annotations

from typing import Optional, Union

import numpy as np

from workbench.ir import Tensor, TensorSpec, constant

from .registry import OpDef, apply, register
from .rules import broadcast_shape, same_dtype

__all__ = ["copy_var_update_", "accumulate_"]


def _updated_like_target(op_type: str):
    def infer(specs, attrs):
        target = specs[0]
        same_dtype(op_type, specs[:2])
        shape = broadcast_shape(op_type, target.shape, specs[1].shape)
        if shape != target.shape:
            raise ValueError(f"{op_type}: the update of shape {specs[1].shape} does not fit the updated "
                             f"tensor of shape {target.shape}")
        return [TensorSpec(target.shape, target.dtype)]
    return infer


def _register_update(op_type: str, kernel) -> None:
    register(OpDef(op_type, _updated_like_target(op_type), lambda op, env: kernel,
                   modifies=(0,), aliases=((0, 0),)))


def _factor(t: Tensor, f: Union[float, Tensor, None], default: float) -> Tensor:
    if isinstance(f, Tensor):
        return f
    return constant(default if f is None else f, dtype=t.dtype)


def _copy(target: np.ndarray, value: np.ndarray) -> np.ndarray:
    target[...] = value
    return target


def _accumulate(target: np.ndarray, value: np.ndarray, factor: np.ndarray) -> np.ndarray:
    target += factor * value
    return target


_register_update("copy_var_update_", _copy)
_register_update("accumulate_", _accumulate)


def copy_var_update_(t: Tensor, X: Tensor) -> Tensor:
    """Overwrite ``t`` with ``X`` in place."""
    return apply("copy_var_update_", t, X)


def accumulate_(t: Tensor, X: Tensor, f: Optional[Union[float, Tensor]] = None) -> Tensor:
    """In place: ``t = t + f * X`` (``f`` defaults to 1)."""
    return apply("accumulate_", t, X, _factor(t, f, 1.0))
