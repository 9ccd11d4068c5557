"""cast: convert a tensor to another dtype."""
from __future__ import annotations

from workbench.ir import Tensor, TensorSpec, dtypes

from .registry import OpDef, apply, register

__all__ = ["cast"]

_UNCASTABLE = (dtypes.float8_143, dtypes.float8_152, dtypes.complex64, dtypes.complex128)


def _cast_infer(specs, attrs):
    source, target = specs[0].dtype, attrs["data_type"]
    for dtype in (source, target):
        if dtype in _UNCASTABLE:
            hint = (" (use ops.pow2scale_cast_to_fp8 / pow2scale_cast_from_fp8)"
                    if "float8" in dtype.name else "")
            raise TypeError(f"cast: {dtype.name} is not supported{hint}; expected bool, integer or "
                            "float16/32/64 types")
    return [TensorSpec(specs[0].shape, target)]


def _cast_kernel(op, env):
    """Float to integer truncates toward zero; anything to bool tests for non-zero."""
    target = op.outputs[0].dtype.as_numpy()
    return lambda a: a.astype(target)


def _cast_grad(op, grads, fwd):
    """The gradient cast back to the input's type (none for integer or bool inputs)."""
    source = op.inputs[0].dtype
    return [apply("cast", grads[0], data_type=source) if source.is_floating_point else None]


register(OpDef("cast", _cast_infer, _cast_kernel, grad=_cast_grad, popart_class="CastOp"))


def cast(t: Tensor, data_type: dtypes.dtype) -> Tensor:
    """``t`` converted to ``data_type`` (a popxl dtype such as ``popxl.float16``)."""
    if not isinstance(data_type, dtypes.dtype):
        raise TypeError(f"cast: data_type must be a popxl dtype such as popxl.float16, got {data_type!r}")
    name = f"{t.name}_{data_type.name}" if isinstance(t, Tensor) else None
    return apply("cast", t, name=name, data_type=data_type)
