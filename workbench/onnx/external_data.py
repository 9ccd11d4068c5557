"""Initializers whose values live in a separate file (ONNX's external data), as PopART keeps them.

A tensor stored externally holds its type, dimensions and a reference: the file (``location``), the
byte ``offset`` and the ``length`` of its little-endian values there. As in PopART, a relative location
is found from the working directory; a model loaded from a file also finds it beside the model, as
ONNX writes it. ``save`` writes values to a file and gives their references, ``write_back`` rewrites
one tensor's values where its reference points, ``append`` adds more values at a file's end.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Collection, Mapping, Sequence

import numpy as np
from onnx import TensorProto, helper


class ExternalDataError(ValueError):
    """An external reference that cannot be read or written: which tensor, which file, and why."""


@dataclass(frozen=True, slots=True)
class ExternalRef:
    location: str
    offset: int
    length: int


def is_external(tensor: TensorProto) -> bool:
    return tensor.data_location == TensorProto.EXTERNAL


def ref_of(tensor: TensorProto) -> ExternalRef:
    """The reference of an externally stored tensor (PopART's checks of its fields)."""
    fields = {entry.key: entry.value for entry in tensor.external_data}
    location = fields.get("location", "")
    if not location:
        raise ExternalDataError(f"No location information for externally stored tensor '{tensor.name}'")
    offset = int(fields.get("offset", "0"))
    nbytes = _nbytes(tensor.data_type, tensor.dims)
    length = int(fields.get("length", str(nbytes)))
    if length <= 0:
        raise ExternalDataError(f"Invalid 'length' information ({length}) for externally stored tensor "
                                f"'{tensor.name}'")
    if offset < 0:
        raise ExternalDataError(f"Invalid 'offset' information ({offset}) for externally stored tensor "
                                f"'{tensor.name}'")
    return ExternalRef(location, offset, length)


def reference(name: str, data_type: int, dims, ref: ExternalRef) -> TensorProto:
    """A TensorProto of ``name`` whose values are at ``ref``."""
    proto = TensorProto(name=name, data_type=data_type, data_location=TensorProto.EXTERNAL)
    proto.dims.extend(dims)
    for key, value in (("location", ref.location), ("length", str(ref.length)), ("offset", str(ref.offset))):
        entry = proto.external_data.add()
        entry.key, entry.value = key, value
    return proto


def found_path(location: str, name: str) -> str:
    """``location``, found from the working directory (where PopART looks for it)."""
    if os.path.exists(location):
        return location
    raise ExternalDataError(f"Unrecognised file name '{location}' for externally stored tensor '{name}'")


def read(tensor: TensorProto) -> np.ndarray:
    """The values of an externally stored tensor, read from its file."""
    ref = ref_of(tensor)
    path = found_path(ref.location, tensor.name)
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).newbyteorder("<")
    expected = _nbytes(tensor.data_type, tensor.dims)
    if ref.length != expected:
        raise ExternalDataError(f"Externally stored tensor '{tensor.name}' has 'length' {ref.length}; its type "
                                f"and shape {list(tensor.dims)} need {expected} bytes")
    with open(path, "rb") as file:
        file.seek(ref.offset)
        data = file.read(ref.length)
    if len(data) != ref.length:
        raise ExternalDataError(f"Externally stored tensor '{tensor.name}': file '{ref.location}' ends before "
                                f"byte {ref.offset + ref.length} ({os.path.getsize(path)} bytes)")
    return np.frombuffer(data, dtype).astype(dtype.newbyteorder("=")).reshape(tuple(tensor.dims))


def move_to_file(ids: Sequence[str], path: str, initializers: Collection[str], stored: Collection[str],
                 value_of: Callable[[str], np.ndarray]) -> dict[str, ExternalRef]:
    """Write the initializers ``ids`` (none of them already ``stored`` externally) to ``path``; their
    references. Every id is checked before the file is written."""
    _check_parent(path)
    for name in ids:
        if name not in initializers:
            raise ExternalDataError(f"Tensor '{name}' is not an initializer")
        if name in stored:
            raise ExternalDataError(f"Tensor '{name}' already has an external data_location")
    return save({name: value_of(name) for name in ids}, path)


def save(arrays: Mapping[str, np.ndarray], path: str) -> dict[str, ExternalRef]:
    """Write ``arrays`` one after another to a new ``path`` (an existing file is overwritten); their
    references, by name."""
    _check_parent(path)
    refs, offset = {}, 0
    with open(path, "wb") as file:
        for name, array in arrays.items():
            data = _little_endian(array)
            if not data:
                raise ExternalDataError(f"Tensor '{name}' has no data to save externally")
            file.write(data)
            refs[name] = ExternalRef(path, offset, len(data))
            offset += len(data)
    return refs


def append(arrays: Mapping[str, np.ndarray], path: str) -> dict[str, ExternalRef]:
    """Add ``arrays`` at the end of the existing file ``path``; their references, by name."""
    refs = {}
    with open(path, "ab") as file:
        offset = file.tell()
        for name, array in arrays.items():
            data = _little_endian(array)
            file.write(data)
            refs[name] = ExternalRef(path, offset, len(data))
            offset += len(data)
    return refs


def write_back(name: str, ref: ExternalRef, array: np.ndarray) -> None:
    """Rewrite the values of tensor ``name`` in place in its file."""
    path = found_path(ref.location, name)
    data = _little_endian(array)
    if len(data) != ref.length:
        raise ExternalDataError(f"Externally stored tensor '{name}' has {ref.length} bytes in '{ref.location}'; "
                                f"the new value has {len(data)}")
    with open(path, "r+b") as file:
        file.seek(ref.offset)
        file.write(data)


def _check_parent(path: str) -> None:
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        raise ExternalDataError(f"Saving tensor data to file {path}, but its parent directory does not exist")


def _little_endian(array: np.ndarray) -> bytes:
    array = np.asarray(array)
    return np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()


def _nbytes(data_type: int, dims) -> int:
    itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(data_type)).itemsize
    return int(np.prod(list(dims), dtype=np.int64)) * itemsize
