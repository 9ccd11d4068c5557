"""Reading an ONNX model from a path or from bytes, with the same checks and the same wording either way.

A path must name a regular file (not a device such as ``/dev/zero``, a FIFO or a directory, which could
block or never end) of at most protobuf's 2 GB limit; both paths and bytes must hold a non-empty
serialized ``ModelProto`` with a graph. Every refusal is a ``ModelFileError`` naming the source (the file,
or ``the string`` of bytes, as PopART calls it) and the problem.
"""
from __future__ import annotations

import os
import stat
from typing import Any, Collection

import onnx

from . import external_data

# protobuf refuses a serialized message over INT_MAX bytes.
PROTOBUF_LIMIT = 2**31 - 1
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


# PopART's closing advice on a model it cannot parse.
_ADVICE = (" Check that it is either a valid path to an existing onnx model file, or is a valid onnx ModelProto "
           "string.")


class ModelFileError(ValueError):
    """A model that cannot be loaded: what was given, and why."""


def load_model(source: Any) -> onnx.ModelProto:
    """A ModelProto from serialized bytes, a path, or a ModelProto (returned as it is)."""
    if isinstance(source, onnx.ModelProto):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        label = f"the string of {len(source):,} bytes"
        return _checked(_parsed(bytes(source), label), label)
    if isinstance(source, str) or hasattr(source, "__fspath__"):
        path = os.fspath(source)
        label = f"file {path}"
        _check_regular_file(path, label)
        with open(path, "rb") as file:
            model = _parsed(file.read(), label)
        _checked(model, label)
        _check_external_files(model)
        return model
    raise TypeError(f"expected an ONNX model as bytes or a file path, got {type(source).__name__}")


def _check_external_files(model: onnx.ModelProto) -> None:
    """Every external location must be found from the working directory, as PopART reads it (not beside
    the model file); the error is the one PopART passes on from ONNX's checker."""
    for tensor in model.graph.initializer:
        if not external_data.is_external(tensor):
            continue
        for entry in tensor.external_data:
            if entry.key == "location" and not os.path.exists(entry.value):
                raise ModelFileError(f"Data of TensorProto ( tensor name: {tensor.name}) should be stored in "
                                     f"{entry.value}, but it doesn't exist or is not accessible.")


def serialized_size(source: Any) -> int:
    """The bytes of the serialized model ``load_model`` would read from ``source`` (0 when it cannot
    tell: a ModelProto, or a path it will refuse)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return len(source)
    if isinstance(source, str) or hasattr(source, "__fspath__"):
        try:
            info = os.stat(os.fspath(source))
        except OSError:
            return 0
        return info.st_size if stat.S_ISREG(info.st_mode) else 0
    return 0


def _check_regular_file(path: str, label: str) -> None:
    """Refuse before reading anything that is not a regular file of at most protobuf's limit."""
    try:
        info = os.stat(path)
    except FileNotFoundError:  # not a file: PopART then reads the text as a serialized model, and fails
        shown = path if len(path) <= 100 else path[:100] + "..."
        raise ModelFileError(f"Failed to load a ModelProto from the string '{shown}'.\nCheck that it is either a "
                             "valid path to an existing onnx model file, or is a valid onnx ModelProto string.") from None
    except OSError as error:
        raise ModelFileError(f"Failed to open {label}: {error.strerror}") from None
    for is_kind, kind in _KINDS:
        if is_kind(info.st_mode):
            raise ModelFileError(f"Failed to load a ModelProto from {label}: it is {kind}, not a regular file; "
                                 "expected the path of an ONNX model file")
    if info.st_size > PROTOBUF_LIMIT:
        raise ModelFileError(f"Failed to load a ModelProto from {label}: it has {info.st_size:,} bytes, over "
                             f"protobuf's limit of {PROTOBUF_LIMIT:,} bytes for one message; store the weights as "
                             "ONNX external data (onnx.save_model(..., save_as_external_data=True))")


def _parsed(data: bytes, label: str) -> onnx.ModelProto:
    if not data:
        raise ModelFileError(f"Failed to load a ModelProto from {label}: it is empty (0 bytes).{_ADVICE}")
    if len(data) > PROTOBUF_LIMIT:
        raise ModelFileError(f"Failed to load a ModelProto from {label}: it has {len(data):,} bytes, over "
                             f"protobuf's limit of {PROTOBUF_LIMIT:,} bytes for one message")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as error:  # protobuf's DecodeError (its module differs between implementations)
        raise ModelFileError(f"Failed to load a ModelProto from {label}: it is not a serialized ONNX ModelProto "
                             f"({len(data):,} bytes; protobuf says: {error}).{_ADVICE}") from None
    return model


def _checked(model: onnx.ModelProto, label: str) -> onnx.ModelProto:
    """Bytes can parse as a ModelProto by chance (every field is optional): a model must have a graph."""
    if not model.HasField("graph"):
        raise ModelFileError(f"Failed to load a ModelProto from {label}: it parses, but holds no graph (no "
                             f"inputs, nodes or outputs).{_ADVICE}")
    return model


def check_input_shapes(model: onnx.ModelProto, given: Collection[str]) -> None:
    """An input of the model (not a weight) that ``given`` (InputShapeInfo's ids) leaves out must not have
    a shape with a ``dim_param`` or a negative size: ValueError naming the input and the value."""
    weights = {init.name for init in model.graph.initializer}
    for value in model.graph.input:
        if value.name in weights or value.name in given or not value.type.HasField("tensor_type"):
            continue
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            continue  # no shape at all: the lowering names the input
        dims = [d.dim_param if d.HasField("dim_param") else (str(d.dim_value) if d.HasField("dim_value") else "?")
                for d in tensor_type.shape.dim]
        unknown = next((d for d in dims if d == "?" or not d.isdigit()), None)
        if unknown is not None:
            raise ValueError(f"Input tensor '{value.name}' must be specified in InputShapeInfo, as it has shape "
                             f"[{', '.join(dims)}], which uses an unknown value '{unknown}'.")
