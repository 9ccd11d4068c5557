"""TensorInfo (an element type and a shape) and InputShapeInfo (types for inputs a model leaves open)."""
from __future__ import annotations

import enum
import operator
from typing import Any, Iterable

import numpy as np

from workbench.onnx import dtypes

from .errors import popart_exception


class DataType(enum.Enum):
    """PopART's element types, in its order (the float8 types hold 1-4-3 and 1-5-2 bit floats)."""
    UINT8 = 0
    INT8 = 1
    FLOAT8_143 = 2
    FLOAT8_152 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    UINT32 = 8
    UINT64 = 9
    BOOL = 10
    FLOAT = 11
    FLOAT16 = 12
    BFLOAT16 = 13
    DOUBLE = 14
    COMPLEX64 = 15
    COMPLEX128 = 16
    STRING = 17
    UNDEFINED = 18


# Types a TensorInfo can describe but no ONNX tensor of the workbench holds: one byte per element.
_FLOAT8 = ("FLOAT8_143", "FLOAT8_152")


class TensorInfo:
    """An element type and a shape: ``TensorInfo("FLOAT", [2, 3])``, ``TensorInfo(np.float16, [4])``
    or ``TensorInfo(array)``."""

    def __init__(self, *args: Any):
        if len(args) == 1 and isinstance(args[0], np.ndarray):
            data_type, shape = args[0].dtype, args[0].shape
        elif len(args) == 2:
            data_type, shape = args
        else:
            raise TypeError(f"Can not create TensorInfo with args {args}")
        self.set(data_type, shape)

    def set(self, data_type: Any, shape: Iterable[int], meta_shape: Iterable[int] = ()) -> None:
        if isinstance(data_type, DataType):
            data_type = data_type.name
        if isinstance(data_type, str) and data_type.upper() in _FLOAT8:
            self._type = data_type.upper()
        else:
            try:
                self._type = dtypes.type_string(data_type)
            except ValueError as error:
                raise popart_exception(str(error)) from None
        self._shape = [_dimension(d, shape) for d in shape]
        if any(d < 0 for d in self._shape):
            raise popart_exception(f"TensorInfo shape {self._shape} has a negative dimension")
        self._meta_shape = [int(d) for d in meta_shape]

    def dataType(self) -> str:
        return self._type

    data_type = dataType

    def data_type_lcase(self) -> str:
        return self._type.lower() if self._type in _FLOAT8 else dtypes.lowercase(self._type)

    def shape(self) -> list[int]:
        return list(self._shape)

    def metaShape(self) -> list[int]:
        return list(self._meta_shape)

    def rank(self) -> int:
        return len(self._shape)

    def nelms(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    def nbytes(self) -> int:
        return self.nelms() * (1 if self._type in _FLOAT8 else dtypes.numpy_dtype(self._type).itemsize)

    def dim(self, i: int) -> int:
        return self._shape[i]

    def strides(self, shape=None) -> list[int]:
        dims = list(shape) if shape is not None else self._shape
        strides: list[int] = []
        step = 1
        for d in reversed(dims):
            strides.insert(0, step)
            step *= d
        return strides

    def numpy_dtype(self) -> np.dtype:
        """NumPy's dtype of the host data (float8 data travels as its bytes: uint8)."""
        return np.dtype(np.uint8) if self._type in _FLOAT8 else dtypes.numpy_dtype(self._type)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorInfo) and (self._type, self._shape) == (other._type, other._shape)

    def __hash__(self) -> int:
        return hash((self._type, tuple(self._shape)))

    def __repr__(self) -> str:
        return f"{self._type}   {self._shape}"

    __str__ = __repr__


def _dimension(value: Any, shape: Any) -> int:
    """A whole-number dimension (an int or NumPy integer; a float such as 2.5 is refused, not truncated)."""
    try:
        return operator.index(value)
    except TypeError:
        raise popart_exception(f"TensorInfo shape {list(shape)} has the dimension {value!r} of type "
                               f"{type(value).__name__}; dimensions are whole numbers (int)") from None


class InputShapeInfo:
    """Types for model inputs whose shapes the ONNX model does not give: ``add(id, TensorInfo)``."""

    def __init__(self):
        self._infos: dict[str, TensorInfo] = {}

    def add(self, tensor_id: str, info: TensorInfo) -> None:
        if not isinstance(info, TensorInfo):
            raise TypeError(f"InputShapeInfo.add takes a TensorInfo, got {type(info).__name__}")
        self._infos[tensor_id] = info

    def get(self, tensor_id: str) -> TensorInfo:
        if tensor_id not in self._infos:
            raise popart_exception(f"No input shape info for tensor '{tensor_id}'")
        return self._infos[tensor_id]

    def has(self, tensor_id: str) -> bool:
        return tensor_id in self._infos

    def getAllTensorInfo(self) -> dict[str, TensorInfo]:
        return dict(self._infos)
