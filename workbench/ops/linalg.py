"""Matrix multiplication."""
from __future__ import annotations

from typing import Optional

import numpy as np

from workbench.ir import Tensor, TensorSpec, dtypes, get_current_graph

from .casting import cast
from .registry import OpDef, apply, register
from .rules import broadcast_shape, check_dtype, same_dtype

__all__ = ["matmul"]


def _matmul_infer(specs, attrs) -> list[TensorSpec]:
    lhs, rhs = specs[0], specs[1]
    check_dtype("matmul", lhs, "number")
    dtype = lhs.dtype  # as in popxl: operands of two dtypes build (the output has lhs's) and are refused when compiled
    if not lhs.shape or not rhs.shape:
        raise ValueError(f"matmul: operands must have at least one dimension, got {lhs.shape} and "
                         f"{rhs.shape}")
    a = lhs.shape if len(lhs.shape) > 1 else (1, *lhs.shape)
    b = rhs.shape if len(rhs.shape) > 1 else (*rhs.shape, 1)
    if a[-1] != b[-2]:
        raise ValueError(f"matmul: inner dimensions differ: {lhs.shape} @ {rhs.shape} "
                         f"({a[-1]} != {b[-2]})")
    shape = broadcast_shape("matmul", a[:-2], b[:-2]) + (a[-2], b[-1])
    if len(lhs.shape) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(rhs.shape) == 1:
        shape = shape[:-1]
    output_type = attrs.get("output_type")
    return [TensorSpec(shape, output_type or dtype)]


def _matmul_kernel(op, env):
    out = op.outputs[0].dtype.as_numpy()
    if out == op.inputs[0].dtype.as_numpy():
        return np.matmul
    return lambda a, b: np.matmul(a, b).astype(out)


def _swap_last(t: Tensor) -> Tensor:
    return apply("transpose", t, permutation=tuple(range(t.rank - 2)) + (t.rank - 1, t.rank - 2))


def _as_matrix(t: Tensor, axis: int) -> Tensor:
    """A vector operand as a matrix: a row (``axis=-2``) or a column (``axis=-1``)."""
    shape = (1, t.shape[0]) if axis == -2 else (t.shape[0], 1)
    return apply("reshape", t, shape=shape)


def _matmul_grad(op, grads, fwd):
    """With vectors made matrices: dA = g @ B^T, dB = A^T @ g (batch axes are summed by autodiff)."""
    lhs, rhs = fwd(op.inputs[0]), fwd(op.inputs[1])
    grad = grads[0]
    if grad.dtype is not lhs.dtype:
        grad = cast(grad, lhs.dtype)
    a = _as_matrix(lhs, -2) if lhs.rank == 1 else lhs
    b = _as_matrix(rhs, -1) if rhs.rank == 1 else rhs
    g_shape = grad.shape + ((1,) if rhs.rank == 1 else ())
    if lhs.rank == 1:
        g_shape = g_shape[:-1] + (1,) + g_shape[-1:]
    g = apply("reshape", grad, shape=g_shape) if g_shape != grad.shape else grad
    grad_a = apply("matmul", g, _swap_last(b), output_type=None)
    grad_b = apply("matmul", _swap_last(a), g, output_type=None)
    if lhs.rank == 1:
        grad_a = apply("reshape", grad_a, shape=grad_a.shape[:-2] + grad_a.shape[-1:])
    if rhs.rank == 1:
        grad_b = apply("reshape", grad_b, shape=grad_b.shape[:-1])
    return [grad_a, grad_b]


def _same_dtypes_when_compiled(op, env):
    same_dtype("matmul", [t.spec for t in op.inputs[:2]])
    return _matmul_kernel(op, env)


register(OpDef("matmul", _matmul_infer, _same_dtypes_when_compiled, grad=_matmul_grad, matrix_product=True,
               poplibs_plan="convolution",
               popart_class="MatMulOp"))


def matmul(lhs: Tensor, rhs: Tensor, available_memory_proportion: Optional[float] = None,
           output_type: Optional[dtypes.dtype] = None, partials_type: Optional[dtypes.dtype] = None) -> Tensor:
    """Matrix product with NumPy's rules for vectors and batch broadcasting. ``partials_type`` (float16 or
    float32, by default the PopART session option ``partialsTypeMatMuls`` of the Ir's ``_pb_ir``) is checked
    as popxl checks it; the NumPy kernel accumulates in the output's precision."""
    _check_partials(partials_type)
    return apply("matmul", lhs, rhs, output_type=output_type)


def _check_partials(partials_type: Optional[dtypes.dtype]) -> None:
    if partials_type is not None:
        if partials_type not in (dtypes.float16, dtypes.float32):
            named = getattr(partials_type, "name", partials_type)
            raise ValueError(f"matmul: partials_type {named} is not valid, must be float16 or float32")
        return
    options = getattr(get_current_graph().ir, "_popart_session_options", None)
    chosen = "" if options is None else str(options.partialsTypeMatMuls)
    if chosen.lower() not in ("", "float", "half"):
        raise ValueError(f"matmul: the session option partialsTypeMatMuls {chosen!r} is not valid, must be "
                         "'float' or 'half'")
