"""One layout of every group of every graph, computed once here and shipped in the JSON export, so that
the notebook's plotly view and the JupyterLab extension draw the same picture and the page lays
nothing out.

A group's picture holds its child groups (collapsed boxes with their op count and commonest op types)
and its own ops (boxes as ``node_content`` writes them), layered top to bottom by
``layered.layered_layout`` with edges for the tensors between them. Coordinates are pixels from the
picture's top left; an edge's points run from the bottom of its tail to the top of its head.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Union

from workbench.ir import Graph, Ir, Op

from .grouping import OpGroup, group_graph
from .layered import layered_layout
from .node_content import op_lines

grouped_section_version = 1
CHAR_WIDTH = 7  # pixels per character of the 12 px label font, a little above its average glyph
LINE_HEIGHT = 15
PAD_X, PAD_Y = 8, 6
GAP_X, GAP_Y = 24, 40  # between boxes of a layer, and between layers
MARGIN = 12
MAX_COLUMN = 240  # pixels per layout column, at most (wider boxes push their neighbours right)


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


def grouped_section(ir: Ir) -> dict:
    """The ``grouped`` section of the export: each graph's groups with their pictures laid out."""
    return {"version": grouped_section_version, "graphs": [grouped_graph(graph) for graph in ir.graphs]}


def grouped_graph(graph: Graph) -> dict:
    """One graph's entry of the ``grouped`` section: every group's picture."""
    pictures = GroupPictures(graph)
    return {"graph": graph.id, "root": pictures.root.id,
            "groups": [pictures.picture(group.id) for group in pictures.root.walk()]}


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
        self._pictures: dict[str, dict] = {}

    def picture(self, group_id: str) -> dict:
        if group_id not in self._pictures:
            self._pictures[group_id] = _group_picture(self.groups[group_id], self._chains)
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


def _group_picture(group: OpGroup, chains: dict[Op, list[OpGroup]]) -> dict:
    depth = len(_chain(group)) - 1
    boxes: dict[Union[Op, OpGroup], _Box] = {}
    for child in group.children:
        boxes[child] = _Box(child.id, "group", _group_lines(child), _group_ipu(child), {"count": child.count})
    for op in group.ops:
        kind = "call" if op.called_graphs else "op"
        extra = {"calls": [g.id for g in op.called_graphs]} if op.called_graphs else {}
        boxes[op] = _Box(op.id, kind, op_lines(op), op.ipu, extra)
    edges: dict[tuple, list] = {}
    for member in _ops_below(group):
        head = _item(member, chains, depth)
        for tensor in dict.fromkeys(member.inputs):
            producer = tensor.producer
            if producer is None or producer.graph is not member.graph:
                continue
            chain = chains.get(producer)
            if chain is None or len(chain) <= depth or chain[depth] is not group:
                continue
            tail = _item(producer, chains, depth)
            if tail is not head:
                edges.setdefault((tail, head), []).append(tensor)
    order = list(boxes)
    index = {item: number for number, item in enumerate(order)}
    layout = layered_layout(order, edges)
    placed, width, height, bends = _to_pixels(layout, boxes)
    return {"id": group.id, "label": group.label, "kind": group.kind,
            "parent": group.parent.id if group.parent is not None else None, "ops": group.count,
            "width": width, "height": height,
            "nodes": [{"key": boxes[item].key, "kind": boxes[item].kind, "lines": boxes[item].lines,
                       "ipu": boxes[item].ipu, **placed[item], **boxes[item].extra} for item in order],
            "edges": [{"from": index[tail], "to": index[head],
                       "points": _edge_points(placed[tail], placed[head], bends.get((tail, head), [])),
                       "label": _edge_label(tensors)} for (tail, head), tensors in edges.items()]}


def _ops_below(group: OpGroup):
    for each in group.walk():
        yield from each.ops


def _item(op: Op, chains: dict[Op, list[OpGroup]], depth: int):
    chain = chains[op]
    return chain[depth + 1] if len(chain) > depth + 1 else op


def _group_lines(group: OpGroup) -> list[str]:
    types = Counter(op.type for op in _ops_below(group)).most_common(3)
    summary = " · ".join(f"{count} {op_type}" for op_type, count in types)
    return [f"▸ {group.label}", f"{group.count} op{'s' if group.count != 1 else ''}: {summary}"]


def _group_ipu(group: OpGroup) -> int:
    ipus = Counter(op.ipu for op in _ops_below(group))
    return ipus.most_common(1)[0][0] if ipus else 0


def _edge_label(tensors: list) -> str:
    first = tensors[0]
    label = f"{first.name}: {first.spec}"
    return label + (f" (+{len(tensors) - 1} more)" if len(tensors) > 1 else "")


def _to_pixels(layout, boxes: dict) -> tuple[dict, int, int, dict]:
    """Pixel boxes (centre x, top y, width, height) and bend points from a layout in columns and layers:
    each layer as tall as its tallest box, columns as wide as the widest box (up to ``MAX_COLUMN``); in
    each layer, boxes and bends keep their order and are pushed right where they would come closer than
    ``GAP_X`` (a bend half that), so that no edge passes through a box."""
    if not layout.positions:
        return {}, 2 * MARGIN, 2 * MARGIN, {}
    column = min(max(box.width for box in boxes.values()), MAX_COLUMN) + GAP_X
    tallest = [0] * layout.depth
    for item, layer in layout.layers.items():
        tallest[layer] = max(tallest[layer], boxes[item].height)
    tops, bottom = [], MARGIN
    for height in tallest:
        tops.append(bottom)
        bottom += height + GAP_Y
    bottom -= GAP_Y
    layer_of_y = {y: layout.layers[item] for item, (_, y) in layout.positions.items()}
    rows: dict[int, list] = {}
    for item, (x, y) in layout.positions.items():
        rows.setdefault(layout.layers[item], []).append((x, 0, item))
    for key, points in layout.bends.items():
        for index, (x, y) in enumerate(points):
            rows.setdefault(layer_of_y.get(y, int(round(-y))), []).append((x, 1, (key, index)))
    placed, bends, right = {}, {key: list(points) for key, points in layout.bends.items()}, 0.0
    for layer, row in rows.items():
        row.sort(key=lambda entry: (entry[0], entry[1]))
        edge = MARGIN
        for x, is_bend, item in row:
            ideal = (x - layout.left) * column + column / 2 + MARGIN
            half = GAP_X / 2 if is_bend else boxes[item].width / 2
            centre = max(ideal, edge + half)
            edge = centre + half + (0 if is_bend else GAP_X / 2)
            right = max(right, centre + half)
            if is_bend:
                key, index = item
                middle = tops[layer] + tallest[layer] / 2 if layer < layout.depth else bottom
                bends[key][index] = (round(centre), round(middle))
            else:
                box = boxes[item]
                top = tops[layer] + (tallest[layer] - box.height) / 2
                placed[item] = {"x": round(centre), "y": round(top), "w": box.width, "h": box.height}
    return placed, int(right + MARGIN), int(bottom + MARGIN), bends


def _edge_points(tail: dict, head: dict, bends: list) -> list[list[int]]:
    return [[tail["x"], tail["y"] + tail["h"]], *[list(point) for point in bends], [head["x"], head["y"]]]
