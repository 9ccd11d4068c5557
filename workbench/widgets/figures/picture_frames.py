"""The frames of a graph picture (an expanded call's body, an opened group): each drawn round its members and
their labels, whole, and kept clear of every node it does not hold; the labels of those nodes stop at its
sides."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.export.layered import Layout

from ..dataflow import DataflowPicture, PictureBox
from ..style import PICTURE_WIDTH
from .picture_labels import (CHAR_WIDTH, LABEL_GAP, PackedLayout, Sizes, Wall, label_places, label_width, picture_sizes,
                             room_captions)

LAYER_HEIGHT = 55  # pixels per layer
BOX_STEP = 16  # pixels between the tops of boxes nested in one another: room for each one's title
FRAME_PAD = 5  # pixels between a frame and the markers and labels inside it
FRAME_NEST = 8  # pixels more for each frame inside it, so that nested frames stand clearly apart


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
        characters = min(room, label_width(captions.get(key, "")))
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
    A layout packed round its frames (``PackedLayout``) gave each label its room, the text of its ``captions``.
    Where a frame so drawn would hold a node it is not drawn round (a layout that did not pack its frames, such as
    the layered layout alone), frames go round their members' markers and every label stops at every frame's
    side, cut where it must be."""
    sizes = picture_sizes(layout, width)
    captions = {key: node.caption for key, node in picture.nodes.items()}
    if not picture.boxes:
        return FramePlan(sizes, label_places(layout, sizes, captions), [], ())
    packed = isinstance(layout, PackedLayout)  # its labels have their room: no frame widens the picture round them
    for captions in ((layout.captions,) if packed else (captions, room_captions(picture))):
        places = label_places(layout, sizes, captions, framed=not packed)
        frames = frame_extents(picture, layout, sizes, label_reach(layout, sizes, places, captions))
        walls = _walls(frames, members=True)
        places = label_places(layout, sizes, captions, walls, framed=not packed)
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
    return {key: (min(room, label_width(captions.get(key, ""))) if key in framed else room, side)
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
