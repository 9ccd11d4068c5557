"""popxl.fp8_utils: float8 data on the host, and a choice of power-of-two scale for it.

The byte encodings are those of the IPU (``workbench.ir.float8``): 1-4-3 with exponent bias 8 and
1-5-2 with bias 16, subnormals included, no infinities, the byte 0x80 the only NaN.
"""
from collections import namedtuple
from typing import Optional, Tuple

import numpy as np

from workbench.ir import dtypes, float8

__all__ = ["host_pow2scale_cast_to_fp8", "host_pow2scale_cast_from_fp8", "host_fp8_mse_scale",
           "host_fp8_mse_scale_pb", "FpDef", "float8_143_def", "float8_152_def"]

#: A floating-point format: exponent and mantissa widths, the fixed exponent bias, whether it has
#: subnormals and whether a whole exponent code is reserved for NaN/infinity.
FpDef = namedtuple("FpDef", ["num_exp_bits", "num_mantissa_bits", "fix_exponent_bias", "include_denorm",
                             "has_nans"])

ieee_fp32_no_denorms = FpDef(8, 23, 127, False, True)
ieee_fp16_denorms = FpDef(5, 10, 15, True, True)
float8_152_def = FpDef(5, 2, 16, True, False)
float8_143_def = FpDef(4, 3, 8, True, False)

min_scaling_bias, max_scaling_bias = -31, 31


def _array(src) -> np.ndarray:
    if type(src).__module__.startswith("torch"):
        src = src.detach().cpu().numpy()
    return np.asarray(src)


def host_pow2scale_cast_to_fp8(src: np.ndarray, dtype: Optional[dtypes.dtype] = None, log2_scale: int = 0,
                               nan_on_overflow: bool = True) -> np.ndarray:
    """``cast(src * 2**log2_scale, dtype)`` on the host: float16/32/64 data (NumPy or torch) to a
    float8 array (structured dtype ``popxl.dtypes.np_dtype_float8_143``/``_152``).

    Rounds to nearest; finite values too large become NaN with ``nan_on_overflow``, else +-max;
    infinities and NaN become NaN.
    """
    if dtype not in (dtypes.float8_143, dtypes.float8_152):
        raise RuntimeError(f"dtype {dtype} not currently supported.")
    array = _array(src)
    if array.dtype not in (np.float16, np.float32, np.float64):
        raise RuntimeError(f"src.dtype {array.dtype} not currently supported.")
    codes = float8.encode(array, dtype, float8.check_log2_scale(log2_scale), nan_on_overflow)
    return float8.from_codes(codes, dtype)


def host_pow2scale_cast_from_fp8(src: np.ndarray, dtype: Optional[dtypes.dtype] = None,
                                 log2_scale: int = 0) -> np.ndarray:
    """``cast(src, dtype) * 2**log2_scale`` on the host: a float8 array to float16/32/64."""
    by_np_dtype: dict[object, dtypes.dtype] = {dtypes.np_dtype_float8_143: dtypes.float8_143,
                                               dtypes.np_dtype_float8_152: dtypes.float8_152}
    source = by_np_dtype.get(getattr(src, "dtype", None))
    if source is None:
        raise RuntimeError(f"src.dtype {getattr(src, 'dtype', type(src))} not currently supported.")
    if dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
        raise RuntimeError(f"dtype {dtype} not currently supported.")
    values = float8.decode(float8.as_codes(src), source, float8.check_log2_scale(log2_scale))
    return values.astype(dtype.as_numpy())


# ----- choosing a scale -----
def _exponent_range(fmt: FpDef) -> Tuple[int, int]:
    """Lowest and highest power of two a format represents (its subnormals included)."""
    low = 1 - fmt.fix_exponent_bias - (fmt.num_mantissa_bits if fmt.include_denorm else 0)
    high = (1 << fmt.num_exp_bits) - 1 - int(fmt.has_nans) - fmt.fix_exponent_bias
    return low, high


def _log_histogram(values: np.ndarray, fmt: FpDef) -> Tuple[np.ndarray, list]:
    """Counts of |values| per power-of-two bin of ``fmt``'s range; the first and last bins also take
    what falls below and above the range."""
    low, high = _exponent_range(fmt)
    limits = [2.0 ** i for i in range(low, high)]
    magnitudes = np.abs(values.astype(np.float64))
    _, exponents = np.frexp(magnitudes)
    bins = np.where(magnitudes < limits[0], 0,
                    np.where(magnitudes > limits[-1], len(limits), exponents - low))
    return np.bincount(bins, minlength=len(limits) + 1).astype(np.float64), limits


def host_fp8_mse_scale(src: np.ndarray, dtype: Optional[dtypes.dtype] = None) -> Tuple[float, int]:
    """The ``log2_scale`` that makes ``cast(src * 2**log2_scale, dtype)`` lose least, judged by the
    mean squared error a log2 histogram of ``src`` predicts; returns ``(that error, log2_scale)``.

    Each scale in [-31, 31] shifts the format's range over the histogram: bins below it count as
    flushed to zero, bins above as clipped, bins inside as rounded with the format's mantissa
    error. Among equally good scales the middle one wins.
    """
    array = _array(src)
    if array.dtype not in (np.float16, np.float32):
        raise RuntimeError(f"dtype {array.dtype} not currently supported.")
    target = float8_152_def if dtype is dtypes.float8_152 else float8_143_def
    source = ieee_fp32_no_denorms
    histogram, limits = _log_histogram(array.reshape(-1), source)
    histogram = histogram / histogram.sum()

    source_mantissa = source.num_mantissa_bits if array.dtype == np.float32 else ieee_fp16_denorms.num_mantissa_bits
    rounding_error = 2.0 ** (-2.0 * (source_mantissa - target.num_mantissa_bits))
    source_low, source_high = _exponent_range(source)
    target_low, target_high = _exponent_range(target)
    span = target_high - target_low + 1
    first = max(0, target_low + min_scaling_bias - source_low)
    last = min(target_low + max_scaling_bias - source_low, source_high - source_low)

    errors: dict = {}
    for index, start in enumerate(range(first, last + 1)):
        error = (limits[0] / 2) ** 2 if start > 0 else 0.0
        for i in range(0, start):
            error += limits[i] ** 2 * histogram[i + 1]
        for i in range(start, min(start + span, len(limits))):
            error += limits[i] ** 2 * histogram[i + 1] * rounding_error
        for i in range(start + span, len(limits)):  # clipped, measured from bin index + span - 1 as popxl does
            error += (limits[index + span - 1] - limits[i]) ** 2 * histogram[i + 1]
        errors.setdefault(error, []).append(index + min_scaling_bias)
    lowest = min(errors)
    biases = sorted(errors[lowest])
    return float(lowest), -biases[len(biases) // 2]


def host_fp8_mse_scale_pb(src: np.ndarray, dtype: Optional[dtypes.dtype] = None) -> int:
    """The scale of ``host_fp8_mse_scale`` alone (popxl computes it in C++; here it is the same
    search)."""
    if dtype not in (dtypes.float8_143, dtypes.float8_152):
        raise RuntimeError(f"dtype {dtype} not currently supported.")
    return host_fp8_mse_scale(src, dtype)[1]
