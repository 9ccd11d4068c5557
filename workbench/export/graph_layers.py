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
``src/shippedlayout.ts``). Each node also ships the pixels it takes when its layer wraps (``wrap_width``):
the wider of the extension's box and the notebook's marker with its label, so that both wrap a graph into
the same bands at the same output width.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Sequence

from workbench.ir import Graph, Ir, Op, Tensor

from .call_sites import CallSite, call_sites
from .layered import layered_layout
from .node_content import op_lines

# The extension's box (src/measure.ts, src/layout.ts): its label at 7 px a character (12 for an East Asian wide
# character or an emoji) cut to 40 characters, each line of a folded weight likewise, 12 px padding each side,
# at least 56 px.
BOX_CHAR, BOX_WIDE_CHAR, BOX_PAD, BOX_LEAST, BOX_LABEL_CHARS = 7, 12, 12, 56, 40
BOX_WIDE = re.compile("[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60"
                      "\uFFE0-\uFFE6\U0001F300-\U0001FAFF]")
# The notebook's node (widgets/figures): a label at 6.5 px a character beside a marker of 20 px, 3 px each side,
# and 6 px more: a label measures its room to an edge passing its row right of it as to a marker there.
LABEL_CHAR, MARKER_ROOM = 6.5, 32

graph_layers_version = 1


def graph_layers_section(ir: Ir) -> dict:
    """The ``graph_layers`` section of the export: each graph's Graph-tab layering."""
    return {"version": graph_layers_version, "graphs": [graph_layers(graph) for graph in ir.graphs]}


def graph_layers(graph: Graph) -> dict:
    """One graph's entry: its nodes (op ids, and tensor ids for graph inputs and outputs) with their layer
    and column, and its edges (indices into the nodes) with the (column, layer) of each layer crossed."""
    nodes, edges = ops_level_picture(graph)
    layout = layered_layout(nodes, edges)
    sites: dict = defaultdict(list)
    for site in call_sites(graph):
        sites[site.op].append(site)
    index = {node: number for number, node in enumerate(nodes)}
    return {"graph": graph.id, "depth": layout.depth,
            "nodes": [node.id for node in nodes],
            "layers": [layout.layers[node] for node in nodes],
            "cols": [_number(layout.positions[node][0] - layout.left) for node in nodes],
            "widths": [wrap_width(node, sites.get(node, [])) for node in nodes],
            "edges": [[index[tail], index[head],
                       [[_number(x - layout.left), int(round(-y))] for x, y in layout.bends.get((tail, head), ())]]
                      for tail, head in edges]}


def wrap_width(item: object, sites: Sequence[CallSite] = (), caption: str = "") -> int:
    """Pixels a node of the Graph tab takes in a row of a wrapped layer: the wider of the extension's box for an
    op or tensor (``item``; a call's ``sites`` name its graphs) and the notebook's marker and caption, by
    default the item's (an op's type and distinguishing attribute with its first weight, a call's graphs, a
    tensor's name). The notebook and the extension both wrap by these widths."""
    box = 0
    if isinstance(item, Op):
        lines = op_lines(item)
        label = _call_label(item, sites) if sites else item.type
        shortened = label if len(label) <= BOX_LABEL_CHARS else label[:BOX_LABEL_CHARS - 1] + "…"
        box = max([_box_pixels(shortened), *(_box_pixels(line) for line in lines[1:])])
        caption = caption or (label if sites else " · ".join(lines[:2]))
    elif isinstance(item, Tensor):
        is_output = item.producer is not None and item in item.graph.outputs
        box = _box_pixels(f"return {item.name}" if is_output else item.name)
        caption = caption or item.name
    return max(box, BOX_LEAST, int(-(-(len(caption) * LABEL_CHAR + MARKER_ROOM) // 1)))


def _box_pixels(text: str) -> int:
    return sum(BOX_WIDE_CHAR if BOX_WIDE.match(char) else BOX_CHAR for char in text) + 2 * BOX_PAD


def _call_label(op: Op, sites: Sequence[CallSite]) -> str:
    """A closed call's label, as both views write it: ``▸ call body``, ``▸ repeat ×3 body``."""
    if sites[0].repeat_count is not None:
        return f"▸ repeat ×{sites[0].repeat_count} {sites[0].callee.label}"
    return f"▸ {op.type} {' | '.join(site.callee.label for site in sites)}"


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

