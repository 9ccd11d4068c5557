"""float8 ops: casts to and from float8 with a power-of-two scale, and scaled matmul and convolutions.

A float8 tensor holds one byte per element (``workbench.ir.float8`` has the encodings). The scale
``log2_scale`` is a scalar int32 tensor, as popxl requires (a non-scalar one is a ValueError, another
dtype a TypeError), whose value must be in [-32, 32): outside it a run raises PopART's
``poplar_application_runtime_error``, as on the IPU, unless the Ir's session option
``throwIfLog2ScaleTensorNotInRange`` is off (PopART leaves that case undefined; here the scale is
clamped into the range). Casts to float8 round to nearest and turn values too large for the format
into NaN (the IPU's nan-on-overflow).
"""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

from workbench.ir import Tensor, TensorSpec, constant, dtypes
from workbench.ir import float8
from workbench.ir.errors import poplar_application_runtime_error

from .arguments import expect_tensors
from .convolution import PadType, conv, conv_transpose
from .linalg import _matmul_infer
from .registry import OpDef, apply, register

__all__ = ["pow2scale_cast_to_fp8", "pow2scale_cast_from_fp8", "matmul_pow2scaled", "conv_pow2scaled",
           "conv_transpose_pow2scaled"]

FLOAT8 = (dtypes.float8_143, dtypes.float8_152)
_WIDE = (dtypes.float16, dtypes.float32)


def _check_scale(op_type: str, spec: TensorSpec) -> None:
    if spec.shape:
        raise ValueError(f"{op_type}: log2_scale must be a scalar tensor, got {spec}")
    if spec.dtype != dtypes.int32:
        raise TypeError(f"{op_type}: log2_scale must be an int32 tensor, got {spec}")


def _check_float8(op_type: str, name: str, spec: TensorSpec) -> None:
    if spec.dtype not in FLOAT8:
        raise TypeError(f"{op_type}: {name} must be float8_143 or float8_152, got {spec.dtype.name}")


def _scale_reader(op) -> Callable[[np.ndarray], int]:
    """Reads the value of ``op``'s log2 scale at run time, checked or clamped into range as the Ir's
    ``throwIfLog2ScaleTensorNotInRange`` session option says (on by default)."""
    options = getattr(op.graph.ir, "_popart_session_options", None)
    throw = True if options is None else bool(options.throwIfLog2ScaleTensorNotInRange)
    low, high = float8.LOG2_SCALE_RANGE

    def value(log2_scale: np.ndarray) -> int:
        scale = int(log2_scale)
        if low <= scale < high:
            return scale
        if throw:
            raise poplar_application_runtime_error(f"{op.type}: log2_scale must be in [{low}, {high}), got {scale}")
        return min(max(scale, low), high - 1)
    return value


# ----- casts -----
def _to_fp8_infer(specs, attrs):
    if specs[0].dtype not in _WIDE:
        raise TypeError(f"pow2scale_cast_to_fp8: the input must be float16 or float32, got {specs[0].dtype.name}")
    _check_scale("pow2scale_cast_to_fp8", specs[1])
    if attrs["data_type"] not in FLOAT8:
        raise TypeError(f"pow2scale_cast_to_fp8: data_type must be float8_143 or float8_152, got "
                        f"{attrs['data_type']!r}")
    return [TensorSpec(specs[0].shape, attrs["data_type"])]


def _to_fp8_kernel(op, env):
    target, scale_of = op.attrs["data_type"], _scale_reader(op)

    def cast(t, log2_scale):
        codes = float8.encode(t, target, scale_of(log2_scale))
        return float8.from_codes(codes, target)
    return cast


def _from_fp8_infer(specs, attrs):
    _check_float8("pow2scale_cast_from_fp8", "the input", specs[0])
    _check_scale("pow2scale_cast_from_fp8", specs[1])
    if attrs["data_type"] not in _WIDE:
        raise TypeError(f"pow2scale_cast_from_fp8: data_type must be float16 or float32, got "
                        f"{attrs['data_type']!r}")
    return [TensorSpec(specs[0].shape, attrs["data_type"])]


def _from_fp8_kernel(op, env):
    source, target = op.inputs[0].dtype, op.attrs["data_type"].as_numpy()
    scale_of = _scale_reader(op)

    def cast(t, log2_scale):
        scale = scale_of(log2_scale)
        return float8.decode(float8.as_codes(t), source, scale).astype(target)
    return cast


register(OpDef("pow2scale_cast_to_fp8", _to_fp8_infer, _to_fp8_kernel, popart_class="Pow2ScaleThenCastOp"))
register(OpDef("pow2scale_cast_from_fp8", _from_fp8_infer, _from_fp8_kernel, popart_class="CastThenPow2ScaleOp"))


def _cast_name(t: Tensor, data_type) -> str:
    """Named like ``cast``'s output: the input's name and the target dtype."""
    return f"{t.name}_{data_type.name}" if isinstance(data_type, dtypes.dtype) else t.name


def pow2scale_cast_to_fp8(t: Tensor, log2_scale: Tensor, data_type: dtypes.dtype) -> Tensor:
    """``cast(t * 2**log2_scale, data_type)`` for a float8 ``data_type``, in one op."""
    expect_tensors("pow2scale_cast_to_fp8", t=t, log2_scale=log2_scale)
    return apply("pow2scale_cast_to_fp8", t, log2_scale, name=_cast_name(t, data_type), data_type=data_type)


def pow2scale_cast_from_fp8(t: Tensor, log2_scale: Tensor, data_type: dtypes.dtype) -> Tensor:
    """``cast(t, data_type) * 2**log2_scale`` for a float8 ``t`` and float16/32 ``data_type``."""
    expect_tensors("pow2scale_cast_from_fp8", t=t, log2_scale=log2_scale)
    return apply("pow2scale_cast_from_fp8", t, log2_scale, name=_cast_name(t, data_type), data_type=data_type)


# ----- scaled matmul -----
def _matmul_pow2scaled_infer(specs, attrs):
    _check_float8("matmul_pow2scaled", "lhs", specs[0])
    _check_float8("matmul_pow2scaled", "rhs", specs[1])
    _check_scale("matmul_pow2scaled", specs[2])
    wide = [TensorSpec(s.shape, dtypes.float16) for s in specs[:2]]
    return _matmul_infer(wide, {})


def _matmul_pow2scaled_kernel(op, env):
    """Products of the float8 values, summed in float32 and returned as float16 (the IPU's
    partials type for float8 is half; float32 sums are at least as accurate)."""
    lhs_type, rhs_type = op.inputs[0].dtype, op.inputs[1].dtype
    scale_of = _scale_reader(op)

    def matmul(lhs, rhs, log2_scale):
        scale = scale_of(log2_scale)
        a = float8.decode(float8.as_codes(lhs), lhs_type).astype(np.float32)
        b = float8.decode(float8.as_codes(rhs), rhs_type).astype(np.float32)
        return (np.matmul(a, b) * np.float32(2.0 ** scale)).astype(np.float16)
    return matmul


register(OpDef("matmul_pow2scaled", _matmul_pow2scaled_infer, _matmul_pow2scaled_kernel, popart_class="MatMulOp"))


def matmul_pow2scaled(lhs: Tensor, rhs: Tensor, log2_scale: Tensor,
                      available_memory_proportion: Optional[float] = None) -> Tensor:
    """``matmul(lhs, rhs) * 2**log2_scale`` of two float8 tensors, as float16 (NumPy matmul rules)."""
    expect_tensors("matmul_pow2scaled", lhs=lhs, rhs=rhs, log2_scale=log2_scale)
    return apply("matmul_pow2scaled", lhs, rhs, log2_scale)


# ----- scaled convolutions: float8 widened to float16, then the ordinary convolution ops -----
def _widened(op_type: str, t: Tensor, weight: Tensor, log2_scale: Tensor) -> tuple[Tensor, Tensor]:
    """``t * 2**log2_scale`` and ``weight`` as float16; a convolution is linear in its input, so
    scaling the input scales the result by the same power of two."""
    expect_tensors(op_type, t=t, weight=weight, log2_scale=log2_scale)
    _check_float8(op_type, "t", t.spec)
    _check_float8(op_type, "weight", weight.spec)
    _check_scale(op_type, log2_scale.spec)
    unscaled = constant(np.zeros((), log2_scale.dtype.as_numpy()), name=f"{op_type}_unscaled")
    return (pow2scale_cast_from_fp8(t, log2_scale, dtypes.float16),
            pow2scale_cast_from_fp8(weight, unscaled, dtypes.float16))


def conv_pow2scaled(t: Tensor, weight: Tensor, log2_scale: Tensor, stride: Optional[Tuple[int]] = (1, 1),
                    padding: Optional[Tuple[int]] = (0, 0, 0, 0), dilation: Optional[Tuple[int]] = (1, 1),
                    groups: Optional[int] = 1, pad_type: Optional[PadType] = "not_set",
                    available_memory_proportions: Optional[List[float]] = None,
                    enable_conv_dithering: Optional[List[int]] = None) -> Tensor:
    """``conv(t, weight) * 2**log2_scale`` of float8 ``t`` and ``weight``, as float16; built as two
    casts and an ordinary ``conv`` op."""
    wide, wide_weight = _widened("conv_pow2scaled", t, weight, log2_scale)
    return conv(wide, wide_weight, stride, padding, dilation, groups, pad_type)


def conv_transpose_pow2scaled(t: Tensor, weight: Tensor, log2_scale: Tensor,
                              stride: Optional[Tuple[int]] = (1, 1), padding: Optional[Tuple[int]] = (0, 0, 0, 0),
                              dilation: Optional[Tuple[int]] = (1, 1), groups: Optional[int] = 1,
                              pad_type: Optional[PadType] = "not_set", output_padding: Optional[Tuple[int]] = (),
                              output_shape: Optional[Tuple[int]] = (),
                              available_memory_proportions: Optional[List[float]] = None,
                              enable_conv_dithering: Optional[List[int]] = None) -> Tensor:
    """``conv_transpose(t, weight) * 2**log2_scale`` of float8 tensors, as float16; built as two casts
    and an ordinary ``conv_transpose`` op."""
    wide, wide_weight = _widened("conv_transpose_pow2scaled", t, weight, log2_scale)
    return conv_transpose(wide, wide_weight, stride, padding, dilation, groups, pad_type, output_padding,
                          output_shape)
