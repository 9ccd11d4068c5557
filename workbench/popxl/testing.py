"""popxl.testing: lists of dtypes for parametrising tests."""
from workbench.ir import dtypes

__all__ = ["get_all_dtypes", "get_all_int_dtypes"]

_SIGNED = [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64]
_UNSIGNED = [dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64]
_FLOATS = [dtypes.float16, dtypes.float32, dtypes.float64]
_COMPLEX = [dtypes.complex64, dtypes.complex128]


def get_all_dtypes() -> list:
    """Every integer, float and complex dtype (not bool, not float8)."""
    return get_all_int_dtypes() + _FLOATS + _COMPLEX


def get_all_int_dtypes(include_signed: bool = True, include_unsigned: bool = True) -> list:
    """The signed and/or unsigned integer dtypes."""
    return (_SIGNED if include_signed else []) + (_UNSIGNED if include_unsigned else [])
