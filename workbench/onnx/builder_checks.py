"""The checks PopART's Builder makes of a node before adding it, with its wording: the number of
inputs and outputs an op takes, and the window parameters of convolutions and pools (strides, pads and
dilations per spatial dimension, a kernel_shape that matches the weights, an output shape that is
not negative), and Pad's pads per dimension."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import onnx
import onnx.defs

from .shapes import TensorType

_WINDOWED = {"Conv", "AveragePool", "MaxPool", "LpPool"}


class BuilderCheckError(ValueError):
    """A node PopART's Builder refuses; the message is PopART's."""


def _vector(values: Sequence[int]) -> str:
    return "[" + " ".join(str(int(v)) for v in values) + "]"


def check_node(op_type: str, domain: str, inputs: Sequence[str], attributes: Mapping, types: Mapping[str, TensorType],
               opset: int, num_outputs: int = 1) -> None:
    """Raise ``BuilderCheckError`` for a node PopART's Builder would refuse (see the module)."""
    if domain not in ("", "ai.onnx"):
        return
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return
    if not (schema.min_input <= len(inputs) <= schema.max_input):
        most = "inf" if schema.max_input >= 2 ** 31 - 1 else str(schema.max_input)
        raise BuilderCheckError(f"{op_type} has invalid number of inputs {len(inputs)}. Must be between "
                                f"{schema.min_input}..{most}")
    if num_outputs > schema.max_output:
        raise BuilderCheckError(f"{op_type} has an invalid number of outputs {num_outputs}. Must be between "
                                f"0..{schema.max_output}")
    shape = _shape(types.get(inputs[0]) if inputs else None)
    if shape is None:
        return
    if op_type in _WINDOWED:
        weights = _shape(types.get(inputs[1])) if op_type == "Conv" and len(inputs) > 1 else None
        _check_window(shape, weights, inputs[1] if weights is not None else "", attributes)
    elif op_type == "Pad" and "pads" in attributes and len(attributes["pads"]) != 2 * len(shape):
        raise BuilderCheckError(f"Padding vector (length {len(attributes['pads'])}) doesn't contain 2 entries per "
                                f"input dimension {len(shape)}")


def _shape(ttype: Optional[TensorType]) -> Optional[tuple]:
    if ttype is None or ttype.shape is None or any(d is None for d in ttype.shape):
        return None
    return tuple(ttype.shape)


def _check_window(shape: tuple, weights: Optional[tuple], weights_id: str, attributes: Mapping) -> None:
    spatial = len(shape) - 2
    if spatial < 1:
        raise BuilderCheckError("Input tensor has no spatial dimensions")
    strides = list(attributes.get("strides") or [])
    pads = list(attributes.get("pads") or [])
    dilations = list(attributes.get("dilations") or [])
    if strides and len(strides) != spatial:
        raise BuilderCheckError(f"Length of strides vector {len(strides)} != number of spatial dimensions {spatial}")
    if pads and len(pads) != 2 * spatial:
        raise BuilderCheckError(f"Padding vector (length {len(pads)}) does not have 2 values for each spatial "
                                f"dimension {spatial}")
    if dilations and len(dilations) != spatial:
        raise BuilderCheckError(f"Length of dilations vector {len(dilations)} != number of spatial dimensions "
                                f"{spatial}")
    kernel = list(attributes.get("kernel_shape") or [])
    if weights is not None:
        from_weights = list(weights[2:])
        if kernel and kernel != from_weights:
            raise BuilderCheckError(f"kernel_shape, {_vector(kernel)}, does not match inferred shape from weight "
                                    f"input '{weights_id}', {_vector(from_weights)}")
        kernel = from_weights
    if not kernel or str(attributes.get("auto_pad", "NOTSET")) not in ("NOTSET", "b'NOTSET'"):
        return
    pads = pads or [0] * (2 * spatial)
    dilations = dilations or [1] * spatial
    strides = strides or [1] * spatial
    out = []
    for axis in range(spatial):
        reach = shape[2 + axis] + pads[axis] + pads[axis + spatial] - dilations[axis] * (kernel[axis] - 1) - 1
        steps = abs(reach) // strides[axis]  # divided as C++ divides: towards zero
        out.append((steps if reach >= 0 else -steps) + 1)
    if any(v < 0 for v in out):
        raise BuilderCheckError(f"Window parameter values combine to give invalid spatial output shape: {_vector(out)}")
