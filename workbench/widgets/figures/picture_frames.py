"""The frames of a graph picture (an expanded call's body, an opened group): each drawn round its members and
their labels, whole, and kept clear of every node it does not hold; the labels of those nodes stop at its
sides."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.export.layered import Layout

from ..dataflow import DataflowPicture, PictureBox
from ..style import PICTURE_WIDTH
from .picture_labels import CHAR_WIDTH, LABEL_GAP, Sizes, Wall, label_places, picture_sizes, room_captions

LAYER_HEIGHT = 55  # pixels per layer
BOX_STEP = 16  # pixels between the tops of boxes nested in one another: room for each one's title
FRAME_PAD = 5  # pixels between a frame and the markers and labels inside it
FRAME_NEST = 8  # pixels more for each frame inside it, so that nested frames stand clearly apart
FRAME_INSIDE = 0.05  # columns between a frame and the edge of the picture
CLEARING_ROUNDS = 12  # moves of strangers and widenings, each to the labels of the last; they settle in a few


@dataclass(frozen=True, slots=True)
class FramePlan:
    """What the picture draws at a width: marker sizes, each node's label (room, side), each frame's extent
    (x0, x1, y0, y1 in columns and layers, beside its box) and the walls those frames make."""

    sizes: Sizes
    places: dict
    frames: list[tuple[PictureBox, tuple[float, float, float, float]]]
    walls: tuple[Wall, ...]


def layer_pixels(picture: DataflowPicture) -> int:
    """Pixels per layer: more where boxes nest, so that the title of each sits above the one inside it."""
    deepest = max((box.depth for box in picture.boxes), default=0)
    return LAYER_HEIGHT + BOX_STEP * max(deepest - 1, 0)


def label_reach(layout: Layout, sizes: Sizes, places: dict, captions: dict) -> dict:
    """Columns each node's marker and drawn label take to its left and to its right of its centre."""
    half, unit = sizes.call / 2, sizes.column
    reach = {}
    for key in layout.positions:
        room, side = places.get(key, (0, "right"))
        characters = min(room, len(captions.get(key, "")))
        label = characters * CHAR_WIDTH + LABEL_GAP if characters else 0.0
        reach[key] = ((half + (label if side == "left" else 0)) / unit, (half + (label if side == "right" else 0)) / unit)
    return reach


def frame_extents(picture: DataflowPicture, layout: Layout, sizes: Sizes, reach: dict) -> list:
    """Each box drawn, with its extent round its members' markers and labels (frames nested in it inside)."""
    deepest = max((box.depth for box in picture.boxes), default=0)
    step = BOX_STEP / layer_pixels(picture)
    frames = []
    for box in picture.boxes:
        members = [key for key in box.members if key in layout.positions]
        if not members:
            continue
        pad = (FRAME_PAD + FRAME_NEST * (deepest - box.depth)) / sizes.column
        xs = [(layout.positions[key][0] - reach[key][0], layout.positions[key][0] + reach[key][1]) for key in members]
        ys = [layout.positions[key][1] for key in members]
        frames.append((box, (min(left for left, _ in xs) - pad, max(right for _, right in xs) + pad,
                             min(ys) - 0.3 - 0.15 * (deepest - box.depth), max(ys) + 0.3 + step * (deepest - box.depth))))
    return frames


def frame_plan(picture: DataflowPicture, layout: Layout, width: int = PICTURE_WIDTH) -> FramePlan:
    """Labels placed clear of nodes, bends and each other, frames round their members' labels, and then the
    labels of the nodes outside a frame placed again to stop at its sides (the frames measured once more).
    Where a frame so drawn would hold a node it is not drawn round (a picture of frames too crowded for their
    labels, which ``clear_frames`` gave up widening), frames go round their members' markers and every label
    stops at every frame's side, cut where it must be."""
    sizes = picture_sizes(layout, width)
    captions = {key: node.caption for key, node in picture.nodes.items()}
    if not picture.boxes:
        return FramePlan(sizes, label_places(layout, sizes, captions), [], ())
    for captions in (captions, room_captions(picture)):  # whole captions, else groups' contents cut short
        places = label_places(layout, sizes, captions, framed=True)
        frames = frame_extents(picture, layout, sizes, label_reach(layout, sizes, places, captions))
        walls = _walls(frames, members=True)
        places = label_places(layout, sizes, captions, walls, framed=True)
        frames = frame_extents(picture, layout, sizes, label_reach(layout, sizes, places, captions))
        if not _hold_strangers(frames, layout, sizes):
            return FramePlan(sizes, _within_reach(places, captions, frames), frames, walls)
    frames = frame_extents(picture, layout, sizes, label_reach(layout, sizes, {}, captions))
    walls = _walls(frames, members=False)
    return FramePlan(sizes, label_places(layout, sizes, captions, walls, framed=True), frames, walls)


def _within_reach(places: dict, captions: dict, frames: list) -> dict:
    """``places`` with the room of each label inside a frame no more than its caption in ``captions`` took when
    the frames were measured round it: a group's contents are not written past the frame made for its name
    (labels outside the frames stop at their sides)."""
    framed = {key for box, _ in frames for key in box.members}
    return {key: (min(room, len(captions.get(key, ""))) if key in framed else room, side)
            for key, (room, side) in places.items()}


def _walls(frames: list, members: bool) -> tuple[Wall, ...]:
    """The sides of ``frames``; with ``members``, the labels of a frame's own nodes may cross its sides (it
    grows round them)."""
    return tuple(Wall(x, y0, y1, frozenset(box.members) if members else frozenset())
                 for box, (x0, x1, y0, y1) in frames for x in (x0, x1))


def _hold_strangers(frames: list, layout: Layout, sizes: Sizes) -> bool:
    """Whether a frame reaches the marker of a node it is not drawn round."""
    half = sizes.call / 2 / sizes.column
    for box, (x0, x1, y0, y1) in frames:
        members = set(box.members)
        if any(key not in members and x0 - half < x < x1 + half and y0 < y < y1
               for key, (x, y) in layout.positions.items()):
            return True
    return False


def clear_frames(layout: Layout, picture: DataflowPicture, width: int) -> None:
    """Moves each node whose marker the layered layout put inside the frame of a box it is not drawn in to the
    right of that frame (and what lies right of it in its layer further right), and widens the picture to hold
    every frame, until no frame holds a stranger (frames are drawn round their members' labels, which take
    more columns as the picture widens)."""
    position = {key: list(point) for key, point in layout.positions.items()}
    routes = {edge: [list(point) for point in route] for edge, route in layout.bends.items()}
    bends = [point for route in routes.values() for point in route]
    captions = room_captions(picture)
    for _ in range(CLEARING_ROUNDS):
        sizes = picture_sizes(layout, width)
        reach = label_reach(layout, sizes, label_places(layout, sizes, captions, framed=True), captions)
        plan = FramePlan(sizes, {}, frame_extents(picture, layout, sizes, reach), ())
        half = plan.sizes.call / 2 / plan.sizes.column
        moved = False
        for box, (x0, x1, y0, y1) in plan.frames:
            keep = {id(position[key]) for key in box.members if key in position}
            for point in list(position.values()):
                if id(point) not in keep and x0 - half < point[0] < x1 + half and y0 < point[1] < y1:
                    _push_right(point, x1 + half + 0.5, [*position.values(), *bends], keep)
                    moved = True
        layout.positions = {key: (x, y) for key, (x, y) in position.items()}
        layout.bends = {edge: [(x, y) for x, y in route] for edge, route in routes.items()}
        before = (layout.left, layout.width)
        _span(layout, plan.frames)
        if not moved and abs(layout.left - before[0]) + abs(layout.width - before[1]) < 1e-6:
            break


def _span(layout: Layout, frames: list) -> None:
    """Sets the picture's left column and width to hold its nodes, bends and ``frames`` (a little inside the
    x axis's range: plotly leaves out a frame's title placed outside it)."""
    xs = [x for x, _ in layout.positions.values()] + [x for route in layout.bends.values() for x, _ in route]
    left, right = min(xs), max(xs) + 1
    for _, (x0, x1, _, _) in frames:
        left, right = min(left, x0 + 0.5 - FRAME_INSIDE), max(right, x1 + FRAME_INSIDE)
    layout.left, layout.width = left, right - left


def _push_right(point: list, x: float, points: list, keep: set[int]) -> None:
    """Moves ``point`` right to ``x`` (beside a frame), and the other ``points`` of its layer beyond the frame
    (not those of ``keep``) further where they would come closer than a column, in order."""
    layer = point[1]
    row = sorted((other for other in points if other[1] == layer and other is not point and id(other) not in keep
                  and other[0] >= point[0]), key=lambda other: other[0])
    point[0] = reach = x
    for other in row:
        if other[0] > x - 0.5:  # those nearer are in the frame: strangers moved in their turn
            other[0] = max(other[0], reach + 1.0)
            reach = other[0]
