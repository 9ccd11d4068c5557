"""The Graph tab's layering of every graph, computed once here and shipped in the JSON export, so that the
notebook's Graph tab and the JupyterLab extension's draw a graph with the same layers and the same order in
each layer, and the page runs no layout search at any size.

The picture is the Graph tab's "ops" level of an ungrouped graph (``widgets/dataflow.py``): its ops, its
graph inputs and its graph outputs; intermediates, variables and constants are not nodes (an edge joins the
ops on either side of an intermediate; weights are folded into the boxes of the ops reading them). Its nodes
and edges are taken in the order the notebook's picture takes them, and laid out by the same
``layered.layered_layout``, so that the two layerings are one (a test compares them). Each node ships its
layer and column, each edge the (column, layer) of every layer it crosses; a view turns them into pixels,
wrapping layers too wide for its output into bands by ``wrapping.band_rows`` (the extension by
``src/shippedlayout.ts``).
"""
from __future__ import annotations

from collections import defaultdict

from workbench.ir import Graph, Ir, Tensor

from .layered import layered_layout

graph_layers_version = 1


def graph_layers_section(ir: Ir) -> dict:
    """The ``graph_layers`` section of the export: each graph's Graph-tab layering."""
    return {"version": graph_layers_version, "graphs": [graph_layers(graph) for graph in ir.graphs]}


def graph_layers(graph: Graph) -> dict:
    """One graph's entry: its nodes (op ids, and tensor ids for graph inputs and outputs) with their layer
    and column, and its edges (indices into the nodes) with the (column, layer) of each layer crossed."""
    nodes, edges = ops_level_picture(graph)
    layout = layered_layout(nodes, edges)
    index = {node: number for number, node in enumerate(nodes)}
    return {"graph": graph.id, "depth": layout.depth,
            "nodes": [node.id for node in nodes],
            "layers": [layout.layers[node] for node in nodes],
            "cols": [_number(layout.positions[node][0] - layout.left) for node in nodes],
            "edges": [[index[tail], index[head],
                       [[_number(x - layout.left), int(round(-y))] for x, y in layout.bends.get((tail, head), ())]]
                      for tail, head in edges]}


def _number(value: float):
    """A column as JSON writes it shortest: an int where it is whole."""
    return int(value) if float(value).is_integer() else round(float(value), 3)


def ops_level_picture(graph: Graph) -> tuple[list, list[tuple]]:
    """The nodes (ops and tensors) and edges (tail, head) of the Graph tab's "ops" picture of ``graph``, in
    the notebook's order: the sources first, then each op after the graph outputs it makes; an edge for each
    tensor an op reads (through an intermediate: from the op making it) and each ``in_sequence`` order."""
    outputs = set(graph.outputs)
    order: list = []
    for tensor in graph.device_tensors:
        if tensor.producer is None or tensor.producer.graph is not graph:
            order.append(tensor)
    successors: dict = defaultdict(list)
    for op in graph.ops:
        order.extend(op.outputs)
        order.append(op)
        for tensor in dict.fromkeys(op.inputs):
            successors[tensor].append(op)
        for earlier in op.after:
            successors[earlier].append(op)
        for tensor in op.outputs:
            successors[op].append(tensor)
    order = list(dict.fromkeys(order))
    present = set(order)
    hidden = {item for item in order if isinstance(item, Tensor) and item not in outputs
              and item.kind in ("intermediate", "constant", "variable")}
    edges: list[tuple] = []
    seen: set[tuple] = set()
    for tail in order:
        if tail in hidden:
            continue
        stack = [head for head in successors[tail] if head in present]
        visited: set = set()
        while stack:
            head = stack.pop()
            if head in hidden:
                if head not in visited:
                    visited.add(head)
                    stack.extend(each for each in successors[head] if each in present)
            elif (tail, head) not in seen:
                seen.add((tail, head))
                edges.append((tail, head))
    return [item for item in order if item not in hidden], edges

