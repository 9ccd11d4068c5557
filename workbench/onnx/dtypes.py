"""Element types across the three vocabularies: ONNX's TensorProto codes, NumPy dtypes and PopART's
type strings ("FLOAT", "INT32", ...), with the workbench dtype of each."""
from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto

from workbench.ir import dtypes

# PopART's type string, ONNX's code and NumPy's dtype of every element type both sides know.
_TABLE = (
    ("FLOAT", TensorProto.FLOAT, np.float32),
    ("FLOAT16", TensorProto.FLOAT16, np.float16),
    ("DOUBLE", TensorProto.DOUBLE, np.float64),
    ("INT8", TensorProto.INT8, np.int8),
    ("INT16", TensorProto.INT16, np.int16),
    ("INT32", TensorProto.INT32, np.int32),
    ("INT64", TensorProto.INT64, np.int64),
    ("UINT8", TensorProto.UINT8, np.uint8),
    ("UINT16", TensorProto.UINT16, np.uint16),
    ("UINT32", TensorProto.UINT32, np.uint32),
    ("UINT64", TensorProto.UINT64, np.uint64),
    ("BOOL", TensorProto.BOOL, np.bool_),
)
_BY_STRING = {name: (code, np.dtype(numpy)) for name, code, numpy in _TABLE}
_BY_CODE = {code: (name, np.dtype(numpy)) for name, code, numpy in _TABLE}
_BY_NUMPY = {np.dtype(numpy): (name, code) for name, code, numpy in _TABLE}
# Lower-case names PopART also accepts, and the numpy-style names of data_type_lcase().
_ALIASES = {"FLOAT32": "FLOAT", "HALF": "FLOAT16", "FLOAT64": "DOUBLE"}
_LCASE = {"FLOAT": "float32", "FLOAT16": "float16", "DOUBLE": "float64", "BOOL": "bool"}
STRINGS = tuple(name for name, _, _ in _TABLE)


def type_string(value: Any) -> str:
    """PopART's type string for a string ("FLOAT", "float32"), a NumPy dtype or type, or an ONNX code."""
    if isinstance(value, str):
        upper = value.upper()
        upper = _ALIASES.get(upper, upper)
        if upper in _BY_STRING:
            return upper
        try:
            return _BY_NUMPY[np.dtype(value)][0]
        except (TypeError, KeyError):
            raise ValueError(f"unknown data type {value!r}; expected one of {', '.join(STRINGS)}") from None
    if isinstance(value, int) and not isinstance(value, bool) and value in _BY_CODE:
        return _BY_CODE[value][0]
    if isinstance(value, dtypes.dtype):
        value = value.as_numpy()
    try:
        return _BY_NUMPY[np.dtype(value)][0]
    except (TypeError, KeyError):
        raise ValueError(f"unsupported data type {value!r}; expected a NumPy dtype or one of "
                         f"{', '.join(STRINGS)}") from None


def is_supported(code: int) -> bool:
    """Whether ONNX's element type ``code`` has a workbench dtype."""
    return code in _BY_CODE


def onnx_code(value: Any) -> int:
    return _BY_STRING[type_string(value)][0]


def numpy_dtype(value: Any) -> np.dtype:
    return _BY_STRING[type_string(value)][1]


def lowercase(value: Any) -> str:
    """The name of ``data_type_lcase()``: NumPy's spelling ("float32", "int32")."""
    name = type_string(value)
    return _LCASE.get(name, name.lower())


def workbench_dtype(value: Any) -> dtypes.dtype:
    return dtypes.dtype.as_dtype(numpy_dtype(value))
