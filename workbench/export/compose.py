"""A group's picture in pixels with any of its child groups expanded in place: an expanded group is drawn
as a frame around its own picture (composed the same way), and the frame takes the room its picture
needs in the layers and columns its collapsed box had. The JupyterLab extension composes pictures by the
same steps (``src/compose.ts``), so that both draw the same picture; a test compares the two.

Each picture of the ``grouped`` section gives every box its layer and column, and every edge the
(column, layer) of each layer it crosses. Placement: columns as wide as the middle collapsed box (up to
``MAX_COLUMN``; wider ones push their neighbours), each layer as tall as its tallest box or frame; in a layer, boxes, ports and the edges
crossing it keep their order and are pushed right where they would come closer than ``GAP_X`` (an edge
half that). An edge crosses a layer as a vertical run, leaves its tail's layer from the tail's bottom
and enters its head's layer straight down to the head, so that no edge passes through a box.

A picture's ports stand for the rest of the graph: the ``in`` port above its first layer feeds the boxes
that read tensors made outside the group, the ``out`` port under its last layer takes the tensors read
outside. In a frame they sit on its top and bottom borders, where the edges of the enclosing picture
arrive and leave: an edge between an op inside an expanded group and an op or group outside it is the
enclosing picture's edge joined to the frame's port edge.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Optional

CHAR_WIDTH = 7  # pixels per character of the 12 px label font, a little above its average glyph
LINE_HEIGHT = 15
PAD_X, PAD_Y = 8, 6
GAP_X, GAP_Y = 24, 40  # between boxes of a layer, and between layers
MARGIN = 12
MAX_COLUMN = 240  # pixels per layout column, at most (wider boxes push their neighbours right)
INSET = 10  # between a frame's border and the picture inside it
HEADER = LINE_HEIGHT + 2 * PAD_Y  # the frame's title band


@dataclass(slots=True)
class Scene:
    """Boxes (frames first, then what they hold) and edges in pixels from the top left; ``in_x`` and
    ``out_x`` are where the ports sit (the middle where there is none). A box's ``x`` is its centre."""

    width: float
    height: float
    boxes: list[dict] = field(default_factory=list)
    edges: list[dict] = field(default_factory=list)
    in_x: float = 0.0
    out_x: float = 0.0


def frame_title(picture: dict) -> str:
    """The title of an expanded group's frame."""
    count = picture["ops"]
    return f"▾ {picture['label']} · {count} op{'s' if count != 1 else ''}"


def compose(picture_of: Callable[[str], dict], group_id: str, expanded: Collection[str] = ()) -> Scene:
    """The picture of group ``group_id`` with the groups in ``expanded`` (at any depth below it, each
    with its enclosing groups expanded too) drawn in place; ``picture_of(id)`` gives a picture."""
    picture = picture_of(group_id)
    nodes, ports, edges = picture["nodes"], picture["ports"], picture["edges"]
    inner: dict[int, Scene] = {}
    titles: dict[int, str] = {}
    sizes = []
    for index, node in enumerate(nodes):
        if node["kind"] == "group" and node["key"] in expanded:
            scene = compose(picture_of, node["key"], expanded)
            inner[index] = scene
            titles[index] = frame_title(picture_of(node["key"]))
            sizes.append((max(scene.width + 2 * INSET, len(titles[index]) * CHAR_WIDTH + 2 * PAD_X),
                          scene.height + HEADER + INSET))
        else:
            sizes.append((node["w"], node["h"]))
    widths = sorted(node["w"] for node in nodes)
    column = min(widths[len(widths) // 2] if widths else 0, MAX_COLUMN) + GAP_X
    depth = picture["depth"]
    tallest: list[float] = [0.0] * depth
    for index, node in enumerate(nodes):
        tallest[node["layer"]] = max(tallest[node["layer"]], sizes[index][1])
    tops = []
    bottom: float = MARGIN
    for height in tallest:
        tops.append(bottom)
        bottom += height + GAP_Y
    bottom -= GAP_Y if depth else 0
    rows: list[list[tuple]] = [[] for _ in range(depth)]
    for index, node in enumerate(nodes):
        rows[node["layer"]].append((node["col"], 0, ("node", index)))
    for index, port in enumerate(ports):
        rows[port["layer"]].append((port["col"], 0, ("port", index)))
    for number, edge in enumerate(edges):
        for bend, (col, layer) in enumerate(edge["bends"]):
            rows[layer].append((col, 1, ("bend", number, bend)))
    centres: dict[tuple, float] = {}
    right = 0.0
    for row in rows:
        row.sort(key=lambda entry: (entry[0], entry[1]))
        reach = float(MARGIN)
        for col, is_bend, ref in row:
            ideal = (col - picture["left"]) * column + column / 2 + MARGIN
            half = GAP_X / 2 if is_bend else sizes[ref[1]][0] / 2 if ref[0] == "node" else 0.0
            centre = max(ideal, reach + half)
            reach = centre + half + (0 if is_bend else GAP_X / 2)
            right = max(right, centre + half)
            centres[ref] = centre
    scene = Scene(right + MARGIN, bottom + MARGIN)
    placed = []
    for index, node in enumerate(nodes):
        width, height = sizes[index]
        layer = node["layer"]
        box = {**node, "x": centres[("node", index)], "y": tops[layer] + (tallest[layer] - height) / 2,
               "w": width, "h": height, "expanded": index in inner}
        for key in ("layer", "col"):
            box.pop(key, None)
        if index in inner:
            box["lines"] = [titles[index]]
        placed.append(box)
    port_x = {port["side"]: centres[("port", index)] for index, port in enumerate(ports)}
    scene.in_x = port_x.get("in", scene.width / 2)
    scene.out_x = port_x.get("out", scene.width / 2)

    port_y = {port["side"]: tops[port["layer"]] + (tallest[port["layer"]] if port["side"] == "out" else 0)
              for port in ports}

    def tail_point(end: int) -> list:
        if end < 0:
            return [port_x["in"], port_y["in"]]
        box = placed[end]
        x = box["x"] - box["w"] / 2 + INSET + inner[end].out_x if end in inner else box["x"]
        return [x, box["y"] + box["h"]]

    def head_point(end: int) -> list:
        if end < 0:
            return [port_x["out"], port_y["out"]]
        box = placed[end]
        x = box["x"] - box["w"] / 2 + INSET + inner[end].in_x if end in inner else box["x"]
        return [x, box["y"]]

    for number, edge in enumerate(edges):
        tail, head = edge["from"], edge["to"]
        start, end = tail_point(tail), head_point(head)
        points = [start]
        if tail >= 0 and start[1] < tops[nodes[tail]["layer"]] + tallest[nodes[tail]["layer"]]:
            points.append([start[0], tops[nodes[tail]["layer"]] + tallest[nodes[tail]["layer"]]])
        for bend, (_, layer) in enumerate(edge["bends"]):
            x = centres[("bend", number, bend)]
            points += [[x, tops[layer]], [x, tops[layer] + tallest[layer]]]
        if head >= 0 and end[1] > tops[nodes[head]["layer"]]:
            points.append([end[0], tops[nodes[head]["layer"]]])
        points.append(end)
        scene.edges.append({"points": points, "label": edge["label"], "arrow": head >= 0,
                            "tail": placed[tail]["key"] if tail >= 0 else None,
                            "head": placed[head]["key"] if head >= 0 else None})
    scene.boxes.extend(placed)
    for index, part in inner.items():
        box = placed[index]
        left, top = box["x"] - box["w"] / 2 + INSET, box["y"] + HEADER
        for drawn in part.boxes:
            scene.boxes.append({**drawn, "x": drawn["x"] + left, "y": drawn["y"] + top})
        for drawn in part.edges:
            points = [[x + left, y + top] for x, y in drawn["points"]]
            if drawn["tail"] is None:
                points[0][1] = box["y"]
            if drawn["head"] is None:
                points[-1][1] = box["y"] + box["h"]
            scene.edges.append({**drawn, "points": points, "tail": drawn["tail"] or box["key"],
                                "head": drawn["head"] or box["key"]})
    return scene


def expanded_chain(picture_of: Callable[[str], dict], top: str, group_id: str) -> Optional[list[str]]:
    """The groups from ``top``'s child down to ``group_id`` (expanding all of them shows it), or None
    where ``group_id`` is not below ``top``."""
    chain = []
    at: Optional[str] = group_id
    while at is not None and at != top:
        chain.append(at)
        at = picture_of(at)["parent"]
    return chain[::-1] if at == top else None
