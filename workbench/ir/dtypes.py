"""The popxl data types: one singleton per type, each knowing its NumPy equivalent."""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

_BY_NAME: dict[str, "dtype"] = {}
_BY_NUMPY: dict[np.dtype, "dtype"] = {}
_CONSTRUCTING = False


class dtype:
    """A tensor element type. Instances are singletons such as ``popxl.float32``; compare with ``is``."""

    __slots__ = ("_name", "_numpy", "_is_int", "_is_float", "_is_signed", "_is_complex")

    def __init__(self, name: str, numpy_type: Any, is_int: bool, is_float: bool, is_signed: bool,
                 is_complex: bool = False):
        if not _CONSTRUCTING:
            raise TypeError("popxl.dtype cannot be constructed; use the singletons such as popxl.float32")
        self._name = name
        self._numpy = np.dtype(numpy_type)
        self._is_int = is_int
        self._is_float = is_float
        self._is_signed = is_signed
        self._is_complex = is_complex

    @property
    def name(self) -> str:
        return self._name

    @property
    def is_int(self) -> bool:
        return self._is_int

    @property
    def is_floating_point(self) -> bool:
        return self._is_float

    @property
    def is_signed(self) -> bool:
        return self._is_signed

    @property
    def is_complex(self) -> bool:
        return self._is_complex

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._numpy.itemsize

    def as_numpy(self) -> np.dtype:
        """The NumPy dtype that holds values of this type on the host."""
        return self._numpy

    def as_torch(self):
        import torch  # optional dependency, imported only when asked for

        try:
            return getattr(torch, self._name)
        except AttributeError:
            raise TypeError(f"{self!r} has no torch equivalent") from None

    @classmethod
    def from_name(cls, name: str) -> "dtype":
        try:
            return _BY_NAME[name]
        except KeyError:
            raise ValueError(f"unknown dtype name {name!r}; expected one of {sorted(_BY_NAME)}") from None

    @classmethod
    def as_dtype(cls, value: Any) -> "dtype":
        """Convert a popxl dtype, NumPy dtype or array, Python type, or name into a popxl dtype."""
        if isinstance(value, dtype):
            return value
        if isinstance(value, str):
            return cls.from_name(value)
        if value is builtins.bool:
            return bool_
        if value is builtins.int:
            return int64
        if value is builtins.float:
            return float32
        if isinstance(value, np.ndarray):
            value = value.dtype
        if type(value).__module__.startswith("torch"):
            value = str(value).replace("torch.", "")
            return cls.from_name(value)
        try:
            return _BY_NUMPY[np.dtype(value)]
        except (TypeError, KeyError):
            raise ValueError(f"{value!r} cannot be converted to a popxl dtype") from None

    def __repr__(self) -> str:
        return f"dtype.{self._name}"

    def __reduce__(self):
        return (dtype.from_name, (self._name,))


def _make(name: str, numpy_type: Any, is_int: bool, is_float: bool, is_signed: bool,
          is_complex: bool = False, aliases: tuple[str, ...] = ()) -> dtype:
    global _CONSTRUCTING
    _CONSTRUCTING = True
    try:
        made = dtype(name, numpy_type, is_int, is_float, is_signed, is_complex)
    finally:
        _CONSTRUCTING = False
    for key in (name, *aliases):
        _BY_NAME[key] = made
    _BY_NUMPY.setdefault(made._numpy, made)  # float8: its one-field structured NumPy type
    return made


np_dtype_float8_143 = np.dtype([("float8_143", "u1")])
np_dtype_float8_152 = np.dtype([("float8_152", "u1")])

bool_ = _make("bool", np.bool_, False, False, False)
int8 = _make("int8", np.int8, True, False, True)
int16 = _make("int16", np.int16, True, False, True)
int32 = _make("int32", np.int32, True, False, True)
int64 = _make("int64", np.int64, True, False, True)
uint8 = _make("uint8", np.uint8, True, False, False)
uint16 = _make("uint16", np.uint16, True, False, False)
uint32 = _make("uint32", np.uint32, True, False, False)
uint64 = _make("uint64", np.uint64, True, False, False)
float8_143 = _make("float8_143", np_dtype_float8_143, False, True, True)
float8_152 = _make("float8_152", np_dtype_float8_152, False, True, True)
float16 = _make("float16", np.float16, False, True, True, aliases=("half",))
float32 = _make("float32", np.float32, False, True, True, aliases=("float",))
float64 = _make("float64", np.float64, False, True, True, aliases=("double",))
complex64 = _make("complex64", np.complex64, False, False, True, is_complex=True)
complex128 = _make("complex128", np.complex128, False, False, True, is_complex=True)
half = float16
float = float32  # noqa: A001 - popxl names this alias `float`
double = float64

# popxl exports the boolean type under the name `bool`.
globals()["bool"] = bool_

#: 64-bit host types are narrowed to these when no dtype is given and downcast=True.
DOWNCAST = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32),
            np.dtype(np.float64): np.dtype(np.float32)}

ALL = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float8_143, float8_152,
       float16, float32, float64, complex64, complex128)
