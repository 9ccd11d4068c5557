"""The IPU's two 8-bit float formats, encoded and decoded with NumPy.

A float8 value is one byte: a sign bit, ``exponent_bits`` of biased exponent, ``mantissa_bits`` of
fraction. Exponent code 0 holds the subnormals; every other code is a normal binade, including the
all-ones code (no code is spent on infinities). The byte 0x80 ("negative zero") is the only NaN, so
zero of either sign encodes as 0x00. float8_143 spans 2**-10 .. 240, float8_152 2**-17 .. 57344.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dtypes

NAN_CODE = 0x80
LOG2_SCALE_RANGE = (-32, 32)  # half-open: scales from -32 up to 31


@dataclass(frozen=True, slots=True)
class Float8Format:
    """Bit layout of a float8 type (the ``FpDef`` of popxl.fp8_utils, for these formats)."""

    exponent_bits: int
    mantissa_bits: int
    bias: int

    @property
    def min_exponent(self) -> int:
        """Exponent of the smallest normal value."""
        return 1 - self.bias

    @property
    def max_exponent(self) -> int:
        return (1 << self.exponent_bits) - 1 - self.bias

    @property
    def max_value(self) -> float:
        return float(2.0 ** self.max_exponent * (2.0 - 2.0 ** -self.mantissa_bits))

    @property
    def max_code(self) -> int:
        """The positive code of ``max_value`` (0x7F for both formats)."""
        return 0x7F


FORMATS = {dtypes.float8_143: Float8Format(4, 3, 8), dtypes.float8_152: Float8Format(5, 2, 16)}


def float8_format(dtype: dtypes.dtype) -> Float8Format:
    try:
        return FORMATS[dtype]
    except KeyError:
        raise TypeError(f"{dtype!r} is not a float8 type; expected popxl.float8_143 or "
                        "popxl.float8_152") from None


def _decode_table(fmt: Float8Format) -> np.ndarray:
    codes = np.arange(256)
    exponent = (codes >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    fraction = codes & ((1 << fmt.mantissa_bits) - 1)
    normal = (1.0 + fraction / 2.0 ** fmt.mantissa_bits) * 2.0 ** (exponent - fmt.bias)
    subnormal = fraction * 2.0 ** (fmt.min_exponent - fmt.mantissa_bits)
    values = np.where(exponent == 0, subnormal, normal) * np.where(codes & 0x80, -1.0, 1.0)
    values[NAN_CODE] = np.nan
    return values


_DECODE = {dtype: _decode_table(fmt) for dtype, fmt in FORMATS.items()}


def check_log2_scale(log2_scale: int) -> int:
    low, high = LOG2_SCALE_RANGE
    if not low <= int(log2_scale) < high:
        raise ValueError(f"log2_scale must be in [{low}, {high}), got {log2_scale}")
    return int(log2_scale)


def encode(values: np.ndarray, dtype: dtypes.dtype, log2_scale: int = 0,
           nan_on_overflow: bool = True) -> np.ndarray:
    """uint8 codes of ``values * 2**log2_scale`` rounded to nearest (ties to even mantissa).

    Finite magnitudes above the largest value become NaN with ``nan_on_overflow``, else saturate to
    +-max; NaN stays NaN and, as in popxl, infinities become NaN either way.
    """
    fmt = float8_format(dtype)
    scaled = np.asarray(values, dtype=np.float64) * 2.0 ** log2_scale
    magnitude = np.abs(scaled)
    finite = np.isfinite(magnitude)
    safe = np.where(finite, magnitude, 0.0)
    _, exponent = np.frexp(safe)
    exponent = np.maximum(exponent - 1, fmt.min_exponent)  # subnormals share the lowest quantum
    quantum = np.ldexp(1.0, exponent - fmt.mantissa_bits)
    rounded = np.round(safe / quantum) * quantum
    overflow = ~finite | (rounded > fmt.max_value)
    fraction, binade = np.frexp(rounded)
    is_normal = (rounded > 0) & (binade - 1 >= fmt.min_exponent)
    exponent_code = np.where(is_normal, binade - 1 + fmt.bias, 0)
    mantissa = np.where(is_normal, (2.0 * fraction - 1.0) * 2 ** fmt.mantissa_bits,
                        rounded / 2.0 ** (fmt.min_exponent - fmt.mantissa_bits))
    codes = (exponent_code.astype(np.int64) << fmt.mantissa_bits) | np.rint(mantissa).astype(np.int64)
    codes = np.where(overflow, fmt.max_code, codes)
    negative = np.signbit(scaled) & (codes != 0)
    codes = codes | np.where(negative, 0x80, 0)
    codes = np.where(~finite | (overflow & nan_on_overflow), NAN_CODE, codes)
    return codes.astype(np.uint8)


def decode(codes: np.ndarray, dtype: dtypes.dtype, log2_scale: int = 0) -> np.ndarray:
    """float64 values of uint8 ``codes`` of a float8 ``dtype``, times ``2**log2_scale``."""
    float8_format(dtype)
    return _DECODE[dtype][np.asarray(codes, dtype=np.uint8)] * 2.0 ** log2_scale


def as_codes(array: np.ndarray) -> np.ndarray:
    """The uint8 codes inside a float8 array (a structured array of one byte field)."""
    return array.view(np.uint8)


def from_codes(codes: np.ndarray, dtype: dtypes.dtype) -> np.ndarray:
    """uint8 ``codes`` seen as an array of the float8 ``dtype`` (shares memory)."""
    return np.asarray(codes, dtype=np.uint8, order="C").view(dtype.as_numpy())  # keeps 0-d arrays 0-d
