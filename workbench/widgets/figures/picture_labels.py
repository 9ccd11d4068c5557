"""Where the graph picture writes each node's label: marker sizes for the column width, and for each node how
many characters its label may take and on which side, clear of the nodes, edge bends and labels of its layer
and of the frames (expanded calls, opened groups) the node is not drawn in."""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Hashable, Optional

from workbench.analysis.gradient_names import GRADIENT_MARK
from workbench.export.layered import Layout, column_pixels

from ..style import PICTURE_WIDTH, fitted, fitted_name, fitted_words, text

MARGIN = 20  # left and right, in pixels
CHAR_WIDTH = 6.5  # pixels per character of a 10 px label, a little above the average glyph
MIN_LABEL = 3  # characters; with less room than this, names are left to the hover
LABEL_GAP = 3  # pixels between a marker and its label
WALL_GAP = 3  # pixels between a label and a frame it stays out of
MIN_CONTENTS = 8  # characters of a group's contents worth writing after its name
LINE = "\n"  # between the two lines of a group's label: its name, and what it holds


def drawn_label(node, room: int) -> str:
    """What is written beside ``node`` (a ``PictureNode``) in ``room`` characters a line: its caption, cut where it
    must be, a tensor's name keeping its end (and a gradient's mark, ``tensor_label``), an op's type and attributes after their last whole word; but a group's
    name whole, followed by as much of what it holds as fits after a few characters of it, or on a second line
    where that holds it whole (``LINE``); with less room, the group's name alone (``group_name``)."""
    if node.kind == "group":
        return _group_label(node, room)
    if node.kind == "tensor":
        return tensor_label(node.caption, room)
    return (fitted_words if node.kind == "op" and node.category == "op" else fitted)(node.caption, room)


def tensor_label(caption: str, room: int) -> str:
    """A tensor's ``caption`` in ``room`` characters keeping its end, but a gradient's mark before it
    (``∂ …/feed_forward/gelu``), and with too little room for that, its start (``∂ la…``)."""
    if len(caption) <= room or not caption.startswith(GRADIENT_MARK):
        return fitted_name(caption, room)
    if room < len(GRADIENT_MARK) + MIN_LABEL + 1:
        return fitted(caption, room)
    return GRADIENT_MARK + fitted_name(caption[len(GRADIENT_MARK):], room - len(GRADIENT_MARK))


def _group_label(node, room: int) -> str:
    caption, label = node.caption, node.label
    if len(caption) <= room:
        return caption
    contents = caption[len(label) + len(": "):]
    if len(label) + 1 <= room and len(contents) <= room and caption.startswith(label + ": "):
        return f"{label}:{LINE}{contents}"
    if room >= len(label) + len(": ") + MIN_CONTENTS:
        return fitted(caption, room)
    return label if len(label) <= room else group_name(node.item.label, room)


def group_name(name: str, room: int) -> str:
    """A group's ``name`` (no count) in ``room`` characters, keeping what tells it from the groups beside it: with
    its open mark where that fits (``▸ layer3``), else the name alone, else its end (``…er0.qkv``: units of a run
    share their start), a run of groups by its first and last (``block0…block19``) where that fits."""
    for written in (f"▸ {name}", name, name.replace(" … ", "…")):
        if len(written) <= room:
            return written
    return "…" + name[len(name) - max(room - 1, 0):] if room > 1 else fitted(name, room)


def label_width(written: str) -> int:
    """Characters of the longest line of a label (``drawn_label``)."""
    return max(len(line) for line in written.split(LINE))


def label_markup(written: str) -> str:
    """A label (``drawn_label``) as plotly text: escaped, its lines apart."""
    return "<br>".join(text(line) for line in written.split(LINE))


def room_captions(picture) -> dict:
    """The text the layout makes room for beside each node of ``picture`` (a ``DataflowPicture``): its caption,
    but a closed group's name alone; what the group holds follows it as far as the room left allows."""
    return {key: node.label if node.kind == "group" else node.caption for key, node in picture.nodes.items()}


@dataclass(frozen=True)
class Sizes:
    """Marker sizes for a picture whose columns are ``column`` pixels apart: squares at most 16
    pixels and never wider than a column allows."""

    column: float

    @property
    def op(self) -> int:
        return int(min(16, max(4, self.column - 8)))

    @property
    def call(self) -> int:
        return self.op + 4

    @property
    def tensor(self) -> int:
        return max(3, round(self.op * 0.7))


def picture_sizes(layout: Layout, width: int = PICTURE_WIDTH) -> Sizes:
    return Sizes(column_pixels(layout, width - 2 * MARGIN, 0.0))


@dataclass(slots=True)
class PackedLayout(Layout):
    """A layout that gave each node's label its room (``picture_packing``): ``captions`` holds the text it made
    room for beside each node."""

    captions: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Wall:
    """A side of a frame: column ``x`` from layer ``low`` to ``high``; the labels of nodes not in the frame
    (not in ``members``) stop short of it."""

    x: float
    low: float
    high: float
    members: frozenset


def _rows(layout: Layout) -> dict[float, list[float]]:
    """The x of every node and edge bend in each layer, left to right: what a label must not cover."""
    obstacles: dict[float, list[float]] = defaultdict(list)
    for x, y in layout.positions.values():
        obstacles[y].append(x)
    for points in layout.bends.values():
        for x, y in points:
            obstacles[y].append(x)
    for row in obstacles.values():
        row.sort()
    return obstacles


def _wall_pixels(key: Hashable, x: float, y: float, walls: list[Wall], sizes: Sizes, side: str) -> float:
    """Pixels a label of the node at (x, y) may take on ``side`` before the nearest wall it must not cross."""
    gaps = [(wall.x - x if side == "right" else x - wall.x) for wall in walls
            if wall.low <= y <= wall.high and key not in wall.members]
    gaps = [gap for gap in gaps if gap > 0]
    if not gaps:
        return float("inf")
    return min(gaps) * sizes.column - sizes.call / 2 - LABEL_GAP - WALL_GAP


def _edges(layout: Layout, obstacles: dict[float, list[float]], framed: bool) -> tuple[float, float]:
    """The picture's left and right edges for labels: the layout's, or in a ``framed`` picture those of its
    nodes and bends alone, as the frames widen the picture round the labels."""
    if not framed or not obstacles:
        return layout.left, layout.left + layout.width
    return min(row[0] for row in obstacles.values()), max(row[-1] for row in obstacles.values()) + 1


def label_rooms(layout: Layout, sizes: Sizes, obstacles: Optional[dict[float, list[float]]] = None,
                walls: tuple[Wall, ...] = (), framed: bool = False) -> dict:
    """Characters each node's label may take to its right (0 leaves its name to the hover): as far as
    the next node or edge bend to its right in its layer (``obstacles``, by default ``_rows``), a ``walls``
    it is not inside, or the picture's right edge (see ``_edges``)."""
    obstacles = _rows(layout) if obstacles is None else obstacles
    right_edge = _edges(layout, obstacles, framed)[1]
    listed = list(walls)
    rooms = {}
    for key, (x, y) in layout.positions.items():
        row = obstacles[y]
        following = bisect_right(row, x + 1e-9)
        if following < len(row):
            pixels = (row[following] - x) * sizes.column - sizes.call - 2 * LABEL_GAP
        else:
            pixels = (right_edge - x) * sizes.column - sizes.call / 2 - LABEL_GAP
        if listed:
            pixels = min(pixels, _wall_pixels(key, x, y, listed, sizes, "right"))
        characters = int(pixels // CHAR_WIDTH)
        rooms[key] = characters if characters >= MIN_LABEL else 0
    return rooms


def label_places(layout: Layout, sizes: Sizes, captions: dict, walls: tuple[Wall, ...] = (),
                 framed: bool = False) -> dict:
    """Each node's label room and side, ``(characters, "right" or "left")``: to its right as
    ``label_rooms`` measures, or to its left where the right is too narrow for its whole caption and
    the left holds more of it (as far as the node or bend before it in its layer, and that one's own
    label to its right, a wall it is not inside, or the picture's left edge)."""
    obstacles = _rows(layout)
    rooms = label_rooms(layout, sizes, obstacles, walls, framed)
    places = {key: (room, "right") for key, room in rooms.items()}
    at = {position: key for key, position in layout.positions.items()}
    listed = list(walls)
    left_edge = _edges(layout, obstacles, framed)[0]
    for y, row in obstacles.items():
        for index, x in enumerate(row):
            key = at.get((x, y))
            if key is None or rooms[key] >= label_width(captions.get(key, "")):
                continue
            if index == 0:
                pixels = (x - left_edge + 0.5) * sizes.column - sizes.call / 2 - LABEL_GAP
            else:
                before = at.get((row[index - 1], y))
                taken = min(rooms[before], label_width(captions.get(before, ""))) * CHAR_WIDTH if before is not None else 0
                pixels = (x - row[index - 1]) * sizes.column - sizes.call - 3 * LABEL_GAP - taken
            if listed:
                pixels = min(pixels, _wall_pixels(key, x, y, listed, sizes, "left"))
            characters = int(pixels // CHAR_WIDTH)
            if characters >= MIN_LABEL and characters > rooms[key]:
                places[key] = (characters, "left")
    return places
