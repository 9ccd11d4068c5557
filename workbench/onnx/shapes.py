"""Shape inference one node at a time, by ONNX's own machinery (ai.graphcore ops have registered
schemas whose Python rules are in ``graphcore.py``).

The node is checked in a model of its own whose inputs are the node's inputs (with their known
types) and whose initializers are the small integer constants among them (a Reshape's shape, a
Slice's starts), so inferring costs the same whatever the size of the model around it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

GRAPHCORE = "ai.graphcore"
ONNX_DOMAINS = ("", "ai.onnx")
_VALUE_LIMIT = 1 << 16  # integer constants up to this many elements travel with the node


@dataclass(frozen=True, slots=True)
class TensorType:
    """An element type (ONNX code) and a shape (None where the shape or a dimension is unknown)."""

    elem_type: int
    shape: Optional[tuple]

    def value_info(self, name: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, self.elem_type, None if self.shape is None else list(self.shape))


class ShapeInferenceError(ValueError):
    """A node whose inputs do not fit its op's rules."""


# An output type is None where the rule cannot tell it (a called graph output of unknown type).
GraphcoreRule = Callable[[Sequence[TensorType], Mapping], Sequence[Optional[TensorType]]]
GRAPHCORE_RULES: dict[str, GraphcoreRule] = {}


def type_of(value_info: onnx.ValueInfoProto) -> Optional[TensorType]:
    """The TensorType a ValueInfoProto declares, or None when it declares no element type."""
    tensor = value_info.type.tensor_type
    if not tensor.elem_type:
        return None
    if not tensor.HasField("shape"):
        return TensorType(tensor.elem_type, None)
    dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim)
    return TensorType(tensor.elem_type, dims)


def outer_names(node: onnx.NodeProto) -> list[str]:
    """Names a node's subgraphs (If branches, Loop bodies, Call callees) read from enclosing graphs."""
    found: dict[str, None] = {}
    for attribute in node.attribute:
        graphs = [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)
        for graph in graphs:
            defined = {v.name for v in graph.input} | {i.name for i in graph.initializer}
            for inner in graph.node:
                for name in list(inner.input) + outer_names(inner):
                    if name and name not in defined:
                        found.setdefault(name)
                defined.update(inner.output)
            for value in graph.output:
                if value.name not in defined:
                    found.setdefault(value.name)
    return list(found)


def infer_node(node: onnx.NodeProto, types: Mapping[str, TensorType], values: Mapping[str, np.ndarray],
               opsets: Sequence[onnx.OperatorSetIdProto]) -> list[Optional[TensorType]]:
    """The types of ``node``'s outputs, from the types (and constant values) of its inputs."""
    inputs = [types.get(name) if name else None for name in node.input]
    graph_inputs = [t.value_info(name) for name, t in zip(node.input, inputs) if name and t is not None]
    listed = set(node.input)
    graph_inputs += [types[name].value_info(name) for name in outer_names(node)
                     if name not in listed and types.get(name) is not None]
    initializers = [numpy_helper.from_array(values[name], name) for name in dict.fromkeys(node.input)
                    if name in values and values[name].dtype.kind in "iub" and values[name].size <= _VALUE_LIMIT]
    graph = helper.make_graph([node], "node", graph_inputs, [], initializer=initializers)
    model = helper.make_model(graph, opset_imports=list(opsets))
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=True)
    except shape_inference.InferenceError as error:
        if any(name and (t is None or not t.elem_type) for name, t in zip(node.input, inputs)):
            return [None] * len(node.output)  # an untyped input (a subgraph's): its outputs stay open
        raise ShapeInferenceError(str(error)) from None
    except (ValueError, TypeError, IndexError, KeyError) as error:  # from an ai.graphcore rule
        raise ShapeInferenceError(f"{node.op_type} ({node.name or node.output[0]}): {error}") from None
    found = {v.name: type_of(v) for v in inferred.graph.value_info}
    outputs = [found.get(name) for name in node.output]
    if node.op_type == "Loop":  # ONNX leaves loop-carried shapes open: they are the body's
        body = next(a.g for a in node.attribute if a.name == "body")
        carried = len(node.input) - 2
        for index in range(min(carried, len(outputs))):
            current = outputs[index]
            if current is None or current.shape is None:
                outputs[index] = type_of(body.output[index + 1])
    return outputs
