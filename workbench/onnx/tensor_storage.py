"""Initializers stored as PopART's builder stores them: in the TensorProto's typed fields
(``float_data``, ``int32_data``, ``int64_data``, ``uint64_data``, ``double_data``), not
``raw_data``, so that scripts reading ``init.float_data`` of a saved model see the values.

float16 values are packed two to an ``int32_data`` entry, as PopART packs them (a script reads them
back with ``np.asarray(init.int32_data, np.int32).view(np.float16)``); ``to_array`` reads both that
packing and ONNX's one-per-entry form."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from . import external_data

# Packed fixed-width fields are written as their little-endian bytes (one parse, no per-element copy):
# the protobuf field number of each.
_PACKED_FIXED = {np.dtype(np.float32): 4, np.dtype(np.float64): 10}
_INT32_FIELD = (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.bool_)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def tensor_proto(array: np.ndarray, name: str) -> TensorProto:
    """``array`` as a TensorProto with its values in the typed field of its element type."""
    array = np.asarray(array)
    proto = TensorProto()
    proto.name = name
    proto.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
    proto.dims.extend(array.shape)
    if array.dtype in _PACKED_FIXED:
        payload = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
        if payload:
            tag = (_PACKED_FIXED[array.dtype] << 3) | 2
            proto.MergeFromString(_varint(tag) + _varint(len(payload)) + payload)
    elif array.dtype == np.float16:
        halves = np.ascontiguousarray(array, "<f2").ravel()
        if halves.size % 2:
            halves = np.concatenate([halves, np.zeros(1, "<f2")])
        proto.int32_data.extend(halves.view("<i4").tolist())
    elif array.dtype.type in _INT32_FIELD:
        proto.int32_data.extend(array.astype(np.int32).ravel().tolist())
    elif array.dtype == np.int64:
        proto.int64_data.extend(array.ravel().tolist())
    elif array.dtype in (np.uint32, np.uint64):
        proto.uint64_data.extend(array.astype(np.uint64).ravel().tolist())
    else:
        return numpy_helper.from_array(array, name)
    return proto


def to_array(proto: TensorProto) -> np.ndarray:
    """The values of an initializer, float16 packed two to an int32 (PopART's form) and values stored
    in a separate file (ONNX's external data) included."""
    if external_data.is_external(proto):
        return external_data.read(proto)
    count = int(np.prod(proto.dims, dtype=np.int64))
    if (proto.data_type == TensorProto.FLOAT16 and not proto.HasField("raw_data") and count > 1
            and len(proto.int32_data) == (count + 1) // 2):
        packed = np.asarray(proto.int32_data, "<i4").view("<f2")[:count]
        return packed.astype(np.float16).reshape(tuple(proto.dims))
    return numpy_helper.to_array(proto)


def same_storage(array: np.ndarray, old: TensorProto) -> TensorProto:
    """New values for an initializer, stored where the old ones were (raw bytes stay raw bytes, as
    in a model PopART loaded)."""
    if old.HasField("raw_data"):
        return numpy_helper.from_array(np.asarray(array), old.name)
    return tensor_proto(array, old.name)


def replace_initializers(model: onnx.ModelProto, values: dict) -> None:
    """Write ``values`` into ``model``'s initializers of those names, appending the ones it lacks."""
    present = set()
    for init in model.graph.initializer:
        if init.name in values:
            init.CopyFrom(same_storage(values[init.name], init))
            present.add(init.name)
    model.graph.initializer.extend(tensor_proto(array, name) for name, array in values.items() if name not in present)
