"""The IR as a networkx MultiDiGraph: graphs, ops and tensors as nodes, data flow and calls as edges.

Node ids are strings built from graph ids, op names and tensor names, so they are the same in
every run: ``graph:<graph id>``, ``<graph id>:op:<op name>`` and ``<graph id>:tensor:<tensor name>``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Union

from workbench.ir import Graph, Ir, Op, Tensor

from .call_sites import call_sites
from .values import plain

if TYPE_CHECKING:  # networkx loads when a graph is made, not with popxl
    import networkx as nx


def graph_node_id(graph: Graph) -> str:
    return f"graph:{graph.id}"


def op_node_id(op: Op) -> str:
    return f"{op.graph.id}:op:{op.name}"


def tensor_node_id(tensor: Tensor) -> str:
    return f"{tensor.graph.id}:tensor:{tensor.name}"


def to_networkx(graph_or_ir: Union[Graph, Ir]) -> nx.MultiDiGraph:
    """A MultiDiGraph of one graph, or of every graph of an Ir with call edges between them.

    Nodes have ``kind`` "graph", "op" or "tensor". Edges have ``kind`` "input" (tensor to op, with
    the input ``index``), "output" (op to tensor, output ``index``), "after" (in_sequence order
    between ops) or the call-site kind ("call", "repeat" with ``repeat_count``, "conditional-then",
    "conditional-else") from a calling op to the called graph's node.
    """
    if isinstance(graph_or_ir, Ir):
        graphs = graph_or_ir.graphs
    elif isinstance(graph_or_ir, Graph):
        graphs = (graph_or_ir,)
    else:
        raise TypeError(f"to_networkx needs a popxl.Ir or popxl.Graph, got {type(graph_or_ir).__name__}")
    import networkx as nx

    result = nx.MultiDiGraph(ir=graphs[0].ir.id, graphs=[g.id for g in graphs])
    for graph in graphs:
        _add_graph(result, graph)
    return result


def _graph_attributes(graph: Graph) -> dict:
    return {"kind": "graph", "id": graph.id, "name": graph.name, "label": graph.label,
            "is_main": graph.is_main}


def _add_graph(result: nx.MultiDiGraph, graph: Graph) -> None:
    result.add_node(graph_node_id(graph), **_graph_attributes(graph))
    input_index = {t: i for i, t in enumerate(graph.inputs)}
    output_index = {t: i for i, t in enumerate(graph.outputs)}
    for tensor in graph.device_tensors:
        result.add_node(tensor_node_id(tensor), kind="tensor", graph=graph.id, id=tensor.id,
                        name=tensor.name, tensor_kind=tensor.kind, shape=list(tensor.shape),
                        dtype=tensor.dtype.name, ipu=tensor.ipu, tile_set=tensor.tile_set,
                        graph_input=input_index.get(tensor), graph_output=output_index.get(tensor))
    for op in graph.ops:
        node = op_node_id(op)
        result.add_node(node, kind="op", graph=graph.id, id=op.id, name=op.name, type=op.type,
                        ipu=op.ipu, tile_set=op.tile_set, attrs=plain(op.attrs),
                        called_graphs=[g.id for g in op.called_graphs], modified=list(op.modified))
        for index, tensor in enumerate(op.inputs):
            result.add_edge(tensor_node_id(tensor), node, key=f"input:{index}", kind="input", index=index)
        for index, tensor in enumerate(op.outputs):
            result.add_edge(node, tensor_node_id(tensor), key=f"output:{index}", kind="output", index=index)
        for earlier in op.after:
            result.add_edge(op_node_id(earlier), node, key="after", kind="after")
    for site in call_sites(graph):
        callee = graph_node_id(site.callee)
        if callee not in result:
            result.add_node(callee, **_graph_attributes(site.callee))
        result.add_edge(op_node_id(site.op), callee, key=site.kind, kind=site.kind,
                        repeat_count=site.repeat_count)
