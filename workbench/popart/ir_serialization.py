"""``session._serializeIr(popart.IrSerializationFormat.JSON)``: the session's program in PopART's JSON
layout, one list of ops per graph, each op with its type (PopART's: ``MatMul``, ``ReduceSumSquare``), name, inputs (name, shape, type, index),
outputs (name, index) and attributes; with virtual graphs on, the attributes name each op's IPU as
``__ipu_number``. As in PopART, the main graph is keyed by the name the model's graph was given
(``Builder.setGraphName``), else ``maingraph``; the graphs a session builds for itself (a training
step's forward and gradient graphs) are listed inline where they are called; and the host transfers
(with the ops making their targets) are listed only with ``useHostCopyOps``."""
from __future__ import annotations

import enum
import json
from typing import Any, Collection, Iterator

import numpy as np

from workbench.ir import Graph, Ir, Op
from workbench.onnx import dtypes
from workbench.ops.registry import op_def

from ._internal.ir.names import op_type_of


IPU_ATTRIBUTE = "__ipu_number"


class IrSerializationFormat(enum.Enum):
    JSON = 0


MAIN_GRAPH = "maingraph"
DEFAULT_GRAPH_NAMES = ("", "BuilderGraph")  # a builder's own name for its graph: not a name of the user's


def serialize(ir: Ir, form: IrSerializationFormat, virtual_graphs: bool = False, model_name: str = "",
              inline: Collection[Graph] = (), host_copies: bool = False) -> str:
    """``inline``: the graphs listed in place of their calls; ``host_copies``: list the host transfers."""
    if form is not IrSerializationFormat.JSON:
        raise TypeError(f"_serializeIr: expected a popart.IrSerializationFormat, got {form!r}")
    document: dict[str, list] = {}
    for graph in ir.graphs:
        if graph in inline:
            continue
        name = _graph_name(ir, graph, model_name)
        key, count = name, 1
        while key in document:  # graphs of one name (two calls' bodies) each keep their own list
            key, count = f"{name}/{count}", count + 1
        document[key] = [_op(op, virtual_graphs) for op in _listed_ops(graph, inline, host_copies)]
    return json.dumps(document)


def _graph_name(ir: Ir, graph: Graph, model_name: str) -> str:
    if graph is not ir.main_graph:
        return graph.id
    return MAIN_GRAPH if model_name in DEFAULT_GRAPH_NAMES or "BuilderGraph_" in model_name else model_name


def _listed_ops(graph: Graph, inline: Collection[Graph], host_copies: bool) -> Iterator[Op]:
    for op in graph.ops:
        if not host_copies and (_host_transfer(op) or _fills_for_host(op)):
            continue
        if op.called_graphs and all(g in inline for g in op.called_graphs):
            for callee in op.called_graphs:
                yield from _listed_ops(callee, inline, host_copies)
        else:
            yield op


def _host_transfer(op: Op) -> bool:
    return op_def(op.type).exchange and "stream" in op.attrs


def _fills_for_host(op: Op) -> bool:
    """An op making the target a host load then overwrites."""
    consumers = [c for t in op.outputs for c in t.consumers]
    return bool(op_def(op.type).fills and consumers and all(_host_transfer(c) for c in consumers))


def _op(op: Op, virtual_graphs: bool) -> dict:
    attributes = {k: _attribute(v) for k, v in op.attrs.items() if _attribute(v) is not None}
    if virtual_graphs:
        attributes[IPU_ATTRIBUTE] = op.ipu
    return {"type": op_type_of(op_def(op.type).popart_class), "name": op.name,
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
