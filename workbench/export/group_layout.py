"""One layout of every group of every graph, computed once here and shipped in the JSON export, so that
the notebook's plotly view and the JupyterLab extension draw the same picture and the page lays
nothing out.

A group's picture holds its child groups (collapsed boxes with their op count and commonest op types)
and its own ops (boxes as ``node_content`` writes them), layered top to bottom by
``layered.layered_layout`` with edges for the tensors between them, and ports for the tensors that
cross the group's border (``compose``). It ships each box's size, layer and column and each edge's
bends; a view turns them into pixels, with any groups expanded in place, by ``compose.compose`` (the
extension by the same steps), which is cheap enough to run on every click.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional, Union

from workbench.ir import Graph, Ir, Op

from .compose import CHAR_WIDTH, LINE_HEIGHT, PAD_X, PAD_Y
from .grouping import OpGroup, group_graph
from .layered import layered_layout
from .node_content import op_lines
from .stacking import stacked

grouped_section_version = 2  # 2: layers and columns, composed by the view
IN, OUT = "in", "out"  # a picture's ports: where tensors from outside the group arrive, and leave


@dataclass(slots=True)
class _Box:
    key: str
    kind: str  # "op", "call" or "group"
    lines: list[str]
    ipu: int
    extra: dict

    @property
    def width(self) -> int:
        return max(len(line) for line in self.lines) * CHAR_WIDTH + 2 * PAD_X

    @property
    def height(self) -> int:
        return len(self.lines) * LINE_HEIGHT + 2 * PAD_Y


def grouped_section(ir: Ir, layerings: Optional[dict[str, dict]] = None) -> dict:
    """The ``grouped`` section of the export: each graph's groups with their pictures laid out, and whether
    its Graph-tab picture opens grouped (``layerings``: the ``graph_layers`` entry of each graph by id, where
    made already)."""
    layerings = layerings or {}
    return {"version": grouped_section_version,
            "graphs": [grouped_graph(graph, layerings.get(graph.id)) for graph in ir.graphs]}


def grouped_graph(graph: Graph, layering: Optional[dict] = None) -> dict:
    """One graph's entry of the ``grouped`` section: every group's picture, and how its Graph tab opens."""
    from .opening import graph_opening

    pictures = GroupPictures(graph)
    return {"graph": graph.id, "root": pictures.root.id,
            "groups": [pictures.picture(group.id) for group in pictures.root.walk()],
            "opens": graph_opening(graph, layering, pictures).to_json()}


class GroupPictures:
    """The groups of one graph, each group's picture laid out when first asked for (a view shows one
    group at a time: a 10,000-op graph's first picture costs its grouping and one small layout)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.root = group_graph(graph)
        self.groups = {group.id: group for group in self.root.walk()}
        self._chains: dict[Op, list[OpGroup]] = {}
        for group in self.root.walk():
            chain = _chain(group)
            for op in group.ops:
                self._chains[op] = chain
        self._readers: dict[Op, list[Op]] = {}
        for op in graph.ops:
            for tensor in dict.fromkeys(op.inputs):
                producer = tensor.producer
                if producer is not None and producer.graph is graph:
                    self._readers.setdefault(producer, []).append(op)
        self._pictures: dict[str, dict] = {}

    def picture(self, group_id: str) -> dict:
        if group_id not in self._pictures:
            self._pictures[group_id] = _group_picture(self.groups[group_id], self._chains, self._readers)
        return self._pictures[group_id]

    def home(self, op: Op) -> str:
        """The id of the group whose picture draws ``op``."""
        return self._chains[op][-1].id


def _chain(group: OpGroup) -> list[OpGroup]:
    chain = []
    while group is not None:
        chain.append(group)
        group = group.parent
    return chain[::-1]


def _group_picture(group: OpGroup, chains: dict[Op, list[OpGroup]], readers: dict[Op, list[Op]]) -> dict:
    depth = len(_chain(group)) - 1
    boxes: dict[Union[Op, OpGroup], _Box] = {}
    for child in group.children:
        boxes[child] = _Box(child.id, "group", _group_lines(child), _group_ipu(child), {"count": child.count})
    for op in group.ops:
        kind = "call" if op.called_graphs else "op"
        extra = {"calls": [g.id for g in op.called_graphs]} if op.called_graphs else {}
        boxes[op] = _Box(op.id, kind, op_lines(op), op.ipu, extra)

    def inside(op: Op) -> bool:
        chain = chains.get(op)
        return chain is not None and len(chain) > depth and chain[depth] is group

    edges: dict[tuple, list] = {}
    for member in _ops_below(group):
        head = _item(member, chains, depth)
        for tensor in dict.fromkeys(member.inputs):
            producer = tensor.producer
            if producer is None or producer.graph is not member.graph:
                continue
            tail = _item(producer, chains, depth) if inside(producer) else IN
            if tail is not head:
                edges.setdefault((tail, head), []).append(tensor)
        if any(not inside(reader) for reader in readers.get(member, ())):
            outside = {tensor for reader in readers[member] if not inside(reader)
                       for tensor in reader.inputs if tensor.producer is member}
            edges.setdefault((_item(member, chains, depth), OUT), []).extend(
                tensor for tensor in member.outputs if tensor in outside)
    ports = [port for port in (IN, OUT) if any(port in pair for pair in edges)]
    order: list = [*boxes, *ports]
    index: dict = {item: number for number, item in enumerate(boxes)}
    index[IN] = index[OUT] = -1
    layout = layered_layout(order, edges, first=IN if IN in ports else None, last=OUT if OUT in ports else None)
    picture = {"id": group.id, "label": group.label, "kind": group.kind,
               "parent": group.parent.id if group.parent is not None else None, "ops": group.count,
               "left": layout.left, "depth": layout.depth,
               "nodes": [{"key": boxes[item].key, "kind": boxes[item].kind, "lines": boxes[item].lines,
                          "ipu": boxes[item].ipu, "layer": layout.layers[item], "col": layout.positions[item][0],
                          "w": boxes[item].width, "h": boxes[item].height, **boxes[item].extra} for item in boxes],
               "ports": [{"side": port, "layer": layout.layers[port], "col": layout.positions[port][0]}
                         for port in ports],
               "edges": [{"from": index[tail], "to": index[head],
                          "bends": [[x, int(round(-y))] for x, y in layout.bends.get((tail, head), ())],
                          "label": _edge_label(tensors)} for (tail, head), tensors in edges.items()]}
    return stacked(picture)


def _ops_below(group: OpGroup):
    for each in group.walk():
        yield from each.ops


def _item(op: Op, chains: dict[Op, list[OpGroup]], depth: int):
    chain = chains[op]
    return chain[depth + 1] if len(chain) > depth + 1 else op


def group_summary(group: OpGroup, most: int = 3) -> str:
    """What a group holds, its ``most`` commonest op types with their counts: ``10 conv · 9 relu · 3 add``
    (the Model tab's group boxes and the Graph tab's group nodes both say it); for units of repeated structure
    their count and types, ``24 × replicated_all_reduce → accumulate_``, and for one unit its types in order."""
    if group.repeat:
        return group.repeat
    if group.kind == "unit":
        return " → ".join(op.type for op in group.ops)
    types = Counter(op.type for op in _ops_below(group)).most_common(most)
    return " · ".join(f"{count} {op_type}" for op_type, count in types)


def _group_lines(group: OpGroup) -> list[str]:
    return [f"▸ {group.label}", f"{group.count} op{'s' if group.count != 1 else ''}: {group_summary(group)}"]


def _group_ipu(group: OpGroup) -> int:
    ipus = Counter(op.ipu for op in _ops_below(group))
    return ipus.most_common(1)[0][0] if ipus else 0


def _edge_label(tensors: list) -> str:
    first = tensors[0]
    label = f"{first.name}: {first.spec}"
    return label + (f" (+{len(tensors) - 1} more)" if len(tensors) > 1 else "")
