"""A group's picture in pixels with any of its child groups expanded in place: an expanded group is drawn
as a frame around its own picture (composed the same way), and the frame takes the room its picture
needs in the layers and columns its collapsed box had. The JupyterLab extension composes pictures by the
same steps (``src/compose.ts``), so that both draw the same picture; a test compares the two.

Each picture of the ``grouped`` section gives every box its layer and column, and every edge the
(column, layer) of each layer it crosses. Placement: columns as wide as the middle collapsed box (up to
``MAX_COLUMN``; wider ones push their neighbours), each layer as tall as its tallest box or frame (columns drawn closer where that is wider than the output); in a layer,
boxes, ports and the edges crossing it keep their order and are pushed right where they would come closer
than ``GAP_X`` (an edge half that, and edges bent at one column, a bus, ``BUS_GAP``).

A layer whose boxes side by side are wider than ``room`` (the output's width) wraps into rows, one under
another, and a picture still wider draws its columns closer (``_wrapped``, ``_closed_up``); parts of a
picture with no edge between them were already packed into rows when it was laid out (``stacking``).

A picture taller than ``FOLD_ABOVE`` and taller than wide (a long run of groups, one under the other) is
folded: its layers are cut into bands of consecutive layers set side by side, as many as make it about as
wide as tall within ``room`` pixels (a notebook figure's width), like the columns of a newspaper.

Edges are orthogonal: an edge crosses a layer as a vertical run, leaves its tail's layer from the tail's
bottom and enters its head's layer straight down to the head, and moves sideways only in the gaps between
layers, each edge on its own track of the gap; an edge from one band to another runs down its tail's band
to the gap under the tail, along it to the gutter between the bands (over the top of the bands between,
where they are not neighbours), and into the gap above its head. So no edge passes through a box.

A picture's ports stand for the rest of the graph: the ``in`` port above its first layer feeds the boxes
that read tensors made outside the group, the ``out`` port under its last layer takes the tensors read
outside. In a frame they sit on its top and bottom borders, where the edges of the enclosing picture
arrive and leave (edges come in right of the frame's title and run above its picture to the ``in`` port,
so that none crosses the title): an edge
between an op inside an expanded group and an op or group outside it is the enclosing picture's edge
joined to the frame's port edge.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Optional

from .wrapping import wrap_rows

CHAR_WIDTH = 7  # pixels per character of the 12 px label font, a little above its average glyph
LINE_HEIGHT = 15
PAD_X, PAD_Y = 8, 6
GAP_X, GAP_Y = 24, 40  # between boxes of a layer, and between layers
MARGIN = 12
MAX_COLUMN = 240  # pixels per layout column, at most (wider boxes push their neighbours right)
INSET = 10  # between a frame's border and the picture inside it
HEADER = LINE_HEIGHT + 2 * PAD_Y  # the frame's title band
FOLD_WIDTH = 920  # pixels a folded picture may take: the plot area of a notebook's figure
FOLD_ABOVE = 900  # pixels: taller pictures fold where they are also taller than wide
GUTTER = 2 * GAP_X  # between the bands of a folded picture; edges from band to band run in it
BUS_GAP = 8  # between the runs of edges bent at one column of a layer (a bus of edges, ``stacking``)


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


def compose(picture_of: Callable[[str], dict], group_id: str, expanded: Collection[str] = (),
            room: float = FOLD_WIDTH, title_end: float = 0.0) -> Scene:
    """The picture of group ``group_id`` with the groups in ``expanded`` (at any depth below it, each
    with its enclosing groups expanded too) drawn in place; ``picture_of(id)`` gives a picture. A tall
    picture folds to at most ``room`` pixels wide; its ``in`` port stays right of ``title_end`` (the end
    of the title of the frame it is drawn in)."""
    picture = picture_of(group_id)
    nodes, ports, edges = picture["nodes"], picture["ports"], picture["edges"]
    inner: dict[int, Scene] = {}
    titles: dict[int, str] = {}
    sizes = []
    for index, node in enumerate(nodes):
        if node["kind"] == "group" and node["key"] in expanded:
            titles[index] = frame_title(picture_of(node["key"]))
            clear = PAD_X + len(titles[index]) * CHAR_WIDTH - INSET + GAP_X / 2
            scene = compose(picture_of, node["key"], expanded, room - 2 * MARGIN - 2 * INSET, clear)
            inner[index] = scene
            sizes.append((max(scene.width + 2 * INSET, len(titles[index]) * CHAR_WIDTH + 2 * PAD_X),
                          scene.height + HEADER + INSET))
        else:
            sizes.append((node["w"], node["h"]))
    picture = _wrapped(picture, sizes, room)
    nodes, ports, edges = picture["nodes"], picture["ports"], picture["edges"]
    widths = sorted(node["w"] for node in nodes)
    column = min(widths[len(widths) // 2] if widths else 0, MAX_COLUMN) + GAP_X
    depth = picture["depth"]
    tallest: list[float] = [0.0] * depth
    for index, node in enumerate(nodes):
        tallest[node["layer"]] = max(tallest[node["layer"]], sizes[index][1])
    centres, rights = _place_rows(picture, sizes, column, set())
    column, centres, rights = _closed_up(picture, sizes, column, centres, rights, room)
    band = [0] * depth
    tops = []
    bottom: float = MARGIN
    for height in tallest:
        tops.append(bottom)
        bottom += height + GAP_Y
    bottom -= GAP_Y if depth else 0
    if bottom + MARGIN > FOLD_ABOVE and bottom + MARGIN > max(rights, default=0.0) + MARGIN and depth >= 4:
        band = _fold(tallest, rights, room)
    bands = band[-1] + 1 if depth else 1
    crossing = {number for number, edge in enumerate(edges)
                if _band_of(band, nodes, ports, edge["from"], "in") != _band_of(band, nodes, ports, edge["to"], "out")}
    if crossing:  # the bends of edges between bands are not drawn: they take no room in their layers
        centres, rights = _place_rows(picture, sizes, column, crossing)
    band_width = [0.0] * bands  # pixels right of the left margin
    for layer in range(depth):
        band_width[band[layer]] = max(band_width[band[layer]], rights[layer] - MARGIN)
    shift = [0.0] * bands
    for number in range(1, bands):
        shift[number] = shift[number - 1] + band_width[number - 1] + GUTTER
    floor = [0.0] * bands  # the bottom of each band's last layer
    if bands > 1:
        at: list[float] = [MARGIN + GAP_Y] * bands
        for layer in range(depth):
            tops[layer] = at[band[layer]]
            at[band[layer]] += tallest[layer] + GAP_Y
            floor[band[layer]] = tops[layer] + tallest[layer]
        bottom = max(floor) + GAP_Y
        right = shift[-1] + MARGIN + band_width[-1]
    else:
        right = max(rights, default=0.0)
    x_of: dict[tuple, float] = {ref: centre + shift[band[layer]] for ref, (centre, layer) in centres.items()}
    port_x = {port["side"]: x_of[("port", index)] for index, port in enumerate(ports)}
    entry = port_x.get("in", 0.0)  # where edges come in: right of the frame's title
    if "in" in port_x and title_end > entry:
        entry = title_end
        right = max(right, entry + GAP_X / 2)
    scene = Scene(right + MARGIN, bottom + MARGIN)
    placed = []
    for index, node in enumerate(nodes):
        width, height = sizes[index]
        layer = node["layer"]
        box = {**node, "x": x_of[("node", index)], "y": tops[layer] + (tallest[layer] - height) / 2,
               "w": width, "h": height, "expanded": index in inner}
        for key in ("layer", "col"):
            box.pop(key, None)
        if index in inner:
            box["lines"] = [titles[index]]
        placed.append(box)
    scene.in_x = entry if "in" in port_x else scene.width / 2
    scene.out_x = port_x.get("out", scene.width / 2)
    port_layer = {port["side"]: port["layer"] for port in ports}

    def tail_point(end: int) -> list:
        if end < 0:
            return [port_x["in"], tops[port_layer["in"]]]
        box = placed[end]
        x = box["x"] - box["w"] / 2 + INSET + inner[end].out_x if end in inner else box["x"]
        return [x, box["y"] + box["h"]]

    def head_point(end: int) -> list:
        if end < 0:
            return [port_x["out"], tops[port_layer["out"]] + tallest[port_layer["out"]]]
        box = placed[end]
        x = box["x"] - box["w"] / 2 + INSET + inner[end].in_x if end in inner else box["x"]
        return [x, box["y"]]

    def gutter(left_band: int) -> float:
        return shift[left_band] + MARGIN + band_width[left_band] + GUTTER / 2

    routes = []
    for number, edge in enumerate(edges):
        tail, head = edge["from"], edge["to"]
        start, end = tail_point(tail), head_point(head)
        tail_layer = nodes[tail]["layer"] if tail >= 0 else port_layer["in"]
        head_layer = nodes[head]["layer"] if head >= 0 else port_layer["out"]
        points: list = [start]
        if tail < 0 and entry != start[0]:  # from the entry along the top, above every box, to the port
            points = [[entry, 0.0], [entry, MARGIN / 2], [start[0], MARGIN / 2], start]
        if tail >= 0 and start[1] < tops[tail_layer] + tallest[tail_layer]:
            points.append([start[0], tops[tail_layer] + tallest[tail_layer]])
        tail_band, head_band = band[tail_layer], band[head_layer]
        if tail_band != head_band:
            leaving = (tail_band, tail_layer + 1)
            out_x = gutter(tail_band if head_band > tail_band else tail_band - 1)
            in_x = gutter(head_band - 1 if head_band > tail_band else head_band)
            points += [[start[0], leaving], [out_x, leaving]]
            if in_x != out_x:  # over the top of the bands between
                points += [[out_x, MARGIN + GAP_Y / 4], [in_x, MARGIN + GAP_Y / 4]]
            points += [[in_x, (head_band, head_layer)], [end[0], (head_band, head_layer)]]
        elif head_layer <= tail_layer:  # groups that feed each other both ways: drawn straight
            for bend, (_, layer) in enumerate(edge["bends"]):
                x = x_of[("bend", number, bend)]
                points += [[x, tops[layer]], [x, tops[layer] + tallest[layer]]]
        else:
            x = points[-1][0]
            for bend, (_, layer) in enumerate(edge["bends"]):
                bend_x = x_of[("bend", number, bend)]
                if bend_x != x:
                    points += [[x, (tail_band, layer)], [bend_x, (tail_band, layer)]]
                points += [[bend_x, tops[layer]], [bend_x, tops[layer] + tallest[layer]]]
                x = bend_x
            if head >= 0 and head not in inner and abs(end[0] - x) <= placed[head]["w"] / 2 - PAD_X:
                end = [x, end[1]]  # straight down into the box, off its middle, rather than a jog
            if end[0] != x:
                points += [[x, (tail_band, head_layer)], [end[0], (tail_band, head_layer)]]
        if head >= 0 and end[1] > tops[head_layer]:
            points.append([end[0], tops[head_layer]])
        points.append(end)
        routes.append(points)
    tracks: dict[tuple, list[int]] = {}  # each gap's tracks: one per edge passing along it, in edge order
    for number, points in enumerate(routes):
        for _, y in points:
            if isinstance(y, tuple) and number not in tracks.setdefault(y, []):
                tracks[y].append(number)

    def track_y(number: int, gap: tuple) -> float:
        gap_band, layer = gap
        if layer < depth and band[layer] == gap_band:
            below = tops[layer]
            above = below - GAP_Y
        else:  # under the band's last layer
            above = floor[gap_band] if bands > 1 else tops[layer - 1] + tallest[layer - 1]
            below = above + GAP_Y
        users = tracks[gap]
        return above + (below - above) * (users.index(number) + 1) / (len(users) + 1)

    for number, (edge, points) in enumerate(zip(edges, routes)):
        tail, head = edge["from"], edge["to"]
        points = [[x, track_y(number, y) if isinstance(y, tuple) else y] for x, y in points]
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


def natural_width(picture: dict) -> float:
    """The width in pixels of ``picture`` drawn with its groups collapsed and not folded."""
    widths = sorted(node["w"] for node in picture["nodes"])
    column = min(widths[len(widths) // 2] if widths else 0, MAX_COLUMN) + GAP_X
    _, rights = _place_rows(picture, [(node["w"], node["h"]) for node in picture["nodes"]], column, set())
    return max(rights, default=0.0) + MARGIN


def _place_rows(picture: dict, sizes: list, column: float, skipped: set[int]) -> tuple[dict, list[float]]:
    """The centre (and layer) of every box, port and bend in its layer, the bends of edges ``skipped``
    left out; and how far right each layer reaches."""
    depth = picture["depth"]
    rows: list[list[tuple]] = [[] for _ in range(depth)]
    for index, node in enumerate(picture["nodes"]):
        rows[node["layer"]].append((node["col"], 0, ("node", index)))
    for index, port in enumerate(picture["ports"]):
        rows[port["layer"]].append((port["col"], 0, ("port", index)))
    for number, edge in enumerate(picture["edges"]):
        if number not in skipped:
            for bend, (col, layer) in enumerate(edge["bends"]):
                rows[layer].append((col, 1, ("bend", number, bend)))
    centres: dict[tuple, tuple[float, int]] = {}
    rights = [0.0] * depth
    for layer, row in enumerate(rows):
        row.sort(key=lambda entry: (entry[0], entry[1]))
        reach = float(MARGIN)
        bus = None  # the column of the bend just placed: the next bend of that column runs beside it
        for col, is_bend, ref in row:
            ideal = (col - picture["left"]) * column + column / 2 + MARGIN
            half = GAP_X / 2 if is_bend else sizes[ref[1]][0] / 2 if ref[0] == "node" else 0.0
            centre = max(ideal, reach + half)
            if is_bend and col == bus:
                centre = max(ideal, reach - half + BUS_GAP)
            bus = col if is_bend else None
            reach = centre + half + (0 if is_bend else GAP_X / 2)
            rights[layer] = max(rights[layer], centre + half)
            centres[ref] = (centre, layer)
    return centres, rights


def _wrapped(picture: dict, sizes: list, room: float) -> dict:
    """``picture`` with each layer whose boxes (``sizes``, frames at their size) are wider side by side than
    ``room`` wrapped into rows of consecutive boxes, one under another, as lines of text wrap: an edge from a
    box runs down through the rows under it, and one into a box down through the rows above it, each at its
    box's column, and one across the layer through every row. Pictures whose groups feed each other both ways
    stay as they are."""
    nodes, edges = picture["nodes"], picture["edges"]
    depth = picture["depth"]
    if any(edge["from"] >= 0 and edge["to"] >= 0 and nodes[edge["to"]]["layer"] <= nodes[edge["from"]]["layer"]
           for edge in edges):
        return picture
    rows: list[list[int]] = [[] for _ in range(depth)]
    for index, node in enumerate(nodes):
        rows[node["layer"]].append(index)
    row_of = [0] * len(nodes)
    count = [1] * depth
    for layer, members in enumerate(rows):
        members.sort(key=lambda index: nodes[index]["col"])
        wrapped_rows = wrap_rows([sizes[index][0] for index in members], room - 2 * MARGIN, GAP_X)
        for index, row in zip(members, wrapped_rows):
            row_of[index] = row
        count[layer] = wrapped_rows[-1] + 1 if wrapped_rows else 1
    if max(count, default=1) == 1:
        return picture
    first = [0] * depth
    for layer in range(1, depth):
        first[layer] = first[layer - 1] + count[layer - 1]
    port_at = {port["side"]: port for port in picture["ports"]}

    def end(index: int, side: str) -> tuple[int, int, float]:
        if index >= 0:
            return nodes[index]["layer"], row_of[index], nodes[index]["col"]
        port = port_at[side]
        return port["layer"], 0 if side == "in" else count[port["layer"]] - 1, port["col"]

    new_edges = []
    for edge in edges:
        tail_layer, tail_row, tail_col = end(edge["from"], "in")
        head_layer, head_row, head_col = end(edge["to"], "out")
        bends = [[tail_col, first[tail_layer] + row] for row in range(tail_row + 1, count[tail_layer])]
        for col, layer in edge["bends"]:
            bends += [[col, first[layer] + row] for row in range(count[layer])]
        bends += [[head_col, first[head_layer] + row] for row in range(head_row)]
        new_edges.append({**edge, "bends": bends})
    return {**picture, "depth": sum(count), "edges": new_edges,
            "nodes": [{**node, "layer": first[node["layer"]] + row_of[index]} for index, node in enumerate(nodes)],
            "ports": [{**port, "layer": first[port["layer"]] + (0 if port["side"] == "in" else count[port["layer"]] - 1)}
                      for port in picture["ports"]]}


def _closed_up(picture: dict, sizes: list, column: float, centres: dict, rights: list[float],
               room: float) -> tuple[float, dict, list[float]]:
    """Where the picture is wider than ``room``, its columns drawn closer, by the largest factor (in
    twentieths) that brings it within, or the smallest: a layer's boxes, ports and bends keep their order
    and stay apart, only the slack between them goes. Gives the column and the places."""
    chosen = column
    for twentieths in range(19, 0, -1):
        if max(rights, default=0.0) + MARGIN <= room:
            break
        chosen = column * twentieths / 20
        centres, rights = _place_rows(picture, sizes, chosen, set())
    return chosen, centres, rights


def _fold(tallest: list[float], rights: list[float], room: float) -> list[int]:
    """The band of each layer: the layers cut into bands of about equal height, as many as make the
    picture about as wide as tall while it stays within ``room`` pixels (one band where two do not fit)."""
    total = sum(height + GAP_Y for height in tallest)
    chosen = [0] * len(tallest)
    for count in range(2, len(tallest) // 2 + 1):
        band, done, number = [], 0.0, 0
        for height in tallest:
            if number < count - 1 and done > 0 and done + (height + GAP_Y) / 2 > total * (number + 1) / count:
                number += 1
            band.append(number)
            done += height + GAP_Y
        widths = [0.0] * (number + 1)
        heights = [0.0] * (number + 1)
        for layer, height in enumerate(tallest):
            widths[band[layer]] = max(widths[band[layer]], rights[layer] - MARGIN)
            heights[band[layer]] += height + GAP_Y
        width = sum(widths) + GUTTER * number + 2 * MARGIN
        if width > room:
            break
        chosen = band
        if max(heights) <= width:
            break
    return chosen


def _band_of(band: list[int], nodes: list, ports: list, end: int, side: str) -> int:
    """The band of an edge's end (a box, or the port on ``side``)."""
    if end >= 0:
        return band[nodes[end]["layer"]]
    return band[next(port["layer"] for port in ports if port["side"] == side)]


def expanded_chain(picture_of: Callable[[str], dict], top: str, group_id: str) -> Optional[list[str]]:
    """The groups from ``top``'s child down to ``group_id`` (expanding all of them shows it), or None
    where ``group_id`` is not below ``top``."""
    chain = []
    at: Optional[str] = group_id
    while at is not None and at != top:
        chain.append(at)
        at = picture_of(at)["parent"]
    return chain[::-1] if at == top else None
