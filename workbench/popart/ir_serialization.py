"""``session._serializeIr(popart.IrSerializationFormat.JSON)``: the session's program in PopART's JSON
layout, one list of ops per graph (the main graph named ``maingraph``), each op with its type, name,
inputs (name, shape, type, index), outputs (name, index) and attributes; with virtual graphs on, the
attributes name each op's IPU as ``__ipu_number``."""
from __future__ import annotations

import enum
import json
from typing import Any

import numpy as np

from workbench.ir import Graph, Ir, Op
from workbench.onnx import dtypes


IPU_ATTRIBUTE = "__ipu_number"


class IrSerializationFormat(enum.Enum):
    JSON = 0


def serialize(ir: Ir, form: IrSerializationFormat, virtual_graphs: bool = False) -> str:
    if form is not IrSerializationFormat.JSON:
        raise TypeError(f"_serializeIr: expected a popart.IrSerializationFormat, got {form!r}")
    document: dict[str, list] = {}
    for graph in ir.graphs:
        name = _graph_name(ir, graph)
        key, count = name, 1
        while key in document:  # graphs of one name (two calls' bodies) each keep their own list
            key, count = f"{name}/{count}", count + 1
        document[key] = [_op(op, virtual_graphs) for op in graph.ops]
    return json.dumps(document)


def _graph_name(ir: Ir, graph: Graph) -> str:
    return "maingraph" if graph is ir.main_graph else graph.id


def _op(op: Op, virtual_graphs: bool) -> dict:
    attributes = {k: _attribute(v) for k, v in op.attrs.items() if _attribute(v) is not None}
    if virtual_graphs:
        attributes[IPU_ATTRIBUTE] = op.ipu
    return {"type": op.type, "name": op.name,
            "inputs": [{"name": t.name, "shape": _shape(t.shape), "type": _type(t.dtype), "index": i}
                       for i, t in enumerate(op.inputs)],
            "outputs": [{"name": t.name, "index": i} for i, t in enumerate(op.outputs)],
            "attributes": attributes}


def _shape(shape) -> str:
    return "[" + " ".join(str(d) for d in shape) + "]"


def _type(dtype) -> str:
    return dtypes.type_string(dtypes.onnx_code(dtype.as_numpy()))


def _attribute(value: Any) -> Any:
    """An attribute as JSON holds it (numbers, text, lists of them); None for what it cannot."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    return None
