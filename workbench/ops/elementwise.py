"""Elementwise ops: one registry entry and one front-end function per op, made by two factories."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from workbench.ir import Tensor, TensorSpec, dtypes

from .registry import OpDef, apply, register
from .rules import broadcast_shape, check_dtype, same_dtype

__all__ = ["add", "add_", "sub", "mul", "div", "negate", "relu", "relu_"]


def _in_place(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A kernel that writes ``fn``'s result into its first argument and returns that argument."""
    def kernel(target, *others):
        target[...] = fn(target, *others)
        return target
    return kernel


def unary_op(op_type: str, fn: Callable[[np.ndarray], np.ndarray], doc: str, *, allowed: str = "number",
             out_dtype: Optional[dtypes.dtype] = None, grad=None, in_place: bool = False):
    """Register ``op_type`` (and ``op_type_`` when ``in_place``) and return the front-end function(s)."""

    def infer(specs, attrs):
        check_dtype(op_type, specs[0], allowed)
        return [TensorSpec(specs[0].shape, out_dtype or specs[0].dtype)]

    register(OpDef(op_type, infer, lambda op, env: fn, grad=grad))

    def front(t: Tensor) -> Tensor:
        return apply(op_type, t)

    front.__name__ = front.__qualname__ = op_type
    front.__doc__ = doc
    if not in_place:
        return front
    register(OpDef(op_type + "_", infer, lambda op, env: _in_place(fn), modifies=(0,), aliases=((0, 0),)))

    def front_in_place(t: Tensor) -> Tensor:
        return apply(op_type + "_", t)

    front_in_place.__name__ = front_in_place.__qualname__ = op_type + "_"
    front_in_place.__doc__ = doc.rstrip(".") + ", in place: the result overwrites ``t``."
    return front, front_in_place


def binary_op(op_type: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], doc: str, *,
              allowed: str = "number", out_dtype: Optional[dtypes.dtype] = None, grad=None,
              in_place: bool = False, kernel_for: Optional[Callable] = None):
    """Register a broadcasting binary op; ``kernel_for(op)`` may pick a kernel by dtype."""

    def infer(specs, attrs):
        dtype = same_dtype(op_type, specs)
        check_dtype(op_type, specs[0], allowed)
        return [TensorSpec(broadcast_shape(op_type, specs[0].shape, specs[1].shape), out_dtype or dtype)]

    def build(op, env):
        return kernel_for(op) if kernel_for else fn

    register(OpDef(op_type, infer, build, grad=grad))

    def front(lhs: Tensor, rhs: Tensor) -> Tensor:
        return apply(op_type, lhs, rhs)

    front.__name__ = front.__qualname__ = op_type
    front.__doc__ = doc
    if not in_place:
        return front

    def infer_in_place(specs, attrs):
        (spec,) = infer(specs, attrs)
        if spec.shape != specs[0].shape:
            raise ValueError(f"{op_type}_: the result shape {spec.shape} differs from the shape "
                             f"{specs[0].shape} of the tensor updated in place")
        return [spec]

    register(OpDef(op_type + "_", infer_in_place, lambda op, env: _in_place(build(op, env)),
                   modifies=(0,), aliases=((0, 0),)))

    def front_in_place(lhs: Tensor, rhs: Tensor) -> Tensor:
        return apply(op_type + "_", lhs, rhs)

    front_in_place.__name__ = front_in_place.__qualname__ = op_type + "_"
    front_in_place.__doc__ = doc.rstrip(".") + ", in place: the result overwrites ``lhs``."
    return front, front_in_place


def _divide_kernel(op):
    """Floats divide; integers truncate toward zero as the IPU does."""
    if op.outputs[0].dtype.is_floating_point:
        return np.divide
    return lambda a, b: np.trunc(np.true_divide(a, b)).astype(a.dtype)


add, add_ = binary_op("add", np.add, "Add two tensors elementwise, broadcasting as NumPy does.",
                      in_place=True)
sub = binary_op("sub", np.subtract, "Subtract ``rhs`` from ``lhs`` elementwise (broadcasting).")
mul = binary_op("mul", np.multiply, "Multiply two tensors elementwise (broadcasting).")
div = binary_op("div", np.divide, "Divide ``lhs`` by ``rhs`` elementwise (broadcasting); integer "
                "division truncates toward zero.", kernel_for=_divide_kernel)
negate = unary_op("negate", np.negative, "Negate each element.")
relu, relu_ = unary_op("relu", lambda a: np.maximum(a, 0), "Rectified linear unit: max(t, 0) per element.",
                       in_place=True)
