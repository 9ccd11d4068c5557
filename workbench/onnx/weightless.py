"""A model's structure without its large weights' values, for ONNX shape inference.

Shape inference passes the whole model through its serialized form, into ONNX's C++ and back: some
four copies of every initializer alive at once, which made loading a model take about six times its
largest weights in host memory. Inference reads only an initializer's type and dimensions, besides the
values of small integer ones (which may be shapes, or axes), so it is given a copy whose large
initializers carry their type and dimensions alone; the values are read from the model itself.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

# Initializers up to this size keep their values (a shape or a list of axes is far smaller).
KEPT_BYTES = 64 << 10
_SHAPE_LIKE = (TensorProto.INT64, TensorProto.INT32)


def without_weight_values(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose large initializers hold no values (``values_dropped`` tells them);
    nothing large is copied on the way."""
    light = onnx.ModelProto()
    _copy_fields(model, light, skip="graph")
    _copy_fields(model.graph, light.graph, skip="initializer")
    light.graph.initializer.extend(type_only(init) if values_dropped(init) else init
                                   for init in model.graph.initializer)
    return light


def values_dropped(init: TensorProto) -> bool:
    """Whether ``without_weight_values`` keeps only the type and dimensions of ``init``."""
    if init.data_type in _SHAPE_LIKE and len(init.dims) <= 1:
        return False  # may be a shape that inference reads
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(init.data_type)).itemsize
    except (KeyError, TypeError, ValueError):  # strings, or a type NumPy lacks: kept as they are
        return False
    return int(np.prod(init.dims, dtype=np.int64)) * itemsize > KEPT_BYTES


def type_only(init: TensorProto) -> TensorProto:
    """An initializer of ``init``'s name, type and dimensions, with no values."""
    header = TensorProto(name=init.name, data_type=init.data_type)
    header.dims.extend(init.dims)
    return header


def _copy_fields(source, target, skip: str) -> None:
    """Copy every field set in ``source`` but ``skip`` into ``target`` (a message of the same type)."""
    for field, value in source.ListFields():
        if field.name == skip:
            continue
        if field.is_repeated:
            getattr(target, field.name).extend(value)
        elif field.message_type is not None:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)
