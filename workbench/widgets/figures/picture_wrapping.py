"""A frame of a packed picture (an expanded call, an opened group) too wide for the output, its own nodes wrapped into
rows as the picture's own nodes wrap (``wrapping.band_rows``): in the layers that make the frame as wide as it is,
its nodes (not the frames it holds) wrap into as many rows as the width needs (as the frame alone needs, where
others stand beside it), a run of such layers in bands (each all-reduce of an opened optimizer over the update it
feeds), and the layers below move down by the rows added; its nodes beside a frame it holds move below that frame.
The innermost frame wraps first, and the picture's own nodes between two frames last, as a frame's do; none wraps
where that would turn an edge upwards."""
from __future__ import annotations

from collections import defaultdict
from typing import Hashable, Iterator, Optional

from workbench.export.wrapping import band_rows

from ..dataflow import DataflowPicture
from .picture_blocks import Block

GAP = 20  # pixels between two neighbours of a row, as the packing sets them


def wrap_frame(root: Block, over: set, excess: float, cells: dict, layer: dict, picture: DataflowPicture,
               refused: set) -> Optional[tuple[dict, list]]:
    """The layer of every node, and the nodes of the frame that moved, once a frame that makes the picture's
    ``over`` layers ``excess`` pixels too wide moves its own nodes in its widest layer below the frames beside them
    or, where none does, the innermost such frame wraps them (``cells``: each node's pixels); None where no frame
    can. A frame and layer whose wrapping changes nothing or would turn an edge upwards are added to ``refused``
    (with the way tried) and skipped."""
    predecessors: dict[Hashable, list[Hashable]] = defaultdict(list)
    for tail, head, _ in picture.edges:
        predecessors[head].append(tail)
    candidates = list(_candidates(root, over, layer))
    tries = [(block, number, "below") for block, number in candidates if _spanned(block, number)]
    tries += [(block, number, "wrap") for block, number in candidates if len(_own(block, number, layer)) >= 2]
    tries += [(root, number, "wrap") for number in sorted(over) if len(_own(root, number, layer)) >= 2]
    for block, number, way in tries:
        if (id(block.box), number, way) in refused:
            continue
        wrapped: Optional[dict]
        if way == "below":
            wrapped = _moved_below(layer, _own(block, number, layer), max(_spanned(block, number)))
        else:
            wrapped = _wrapped(block, number, max(block.skyline.values()) - excess, cells, layer, predecessors)
        if wrapped is not None and all(wrapped[tail] < wrapped[head] for tail, head, _ in picture.edges
                                       if tail in layer and head in layer and layer[tail] < layer[head]):
            return wrapped, [child for child in block.children if not isinstance(child, Block)]
        refused.add((id(block.box), number, way))
    return None


def _candidates(block: Block, layers: set, layer: dict) -> Iterator[tuple[Block, int]]:
    """The frames in ``block`` spanning ``layers``, the widest first and, in each, the frames inside it before it,
    each with a widest layer of its that holds nodes of its own."""
    inside = [child for child in block.children
              if isinstance(child, Block) and any(child.low <= number <= child.high for number in layers)]
    for child in sorted(inside, key=lambda each: -each.width):
        widest = max(child.skyline.values(), default=0.0)
        numbers = sorted(number for number, end in child.skyline.items() if end >= widest - 0.5)
        yield from _candidates(child, set(numbers), layer)
        yield from ((child, number) for number in numbers if _own(child, number, layer))


def _wrapped(block: Block, number: int, target: float, cells: dict, layer: dict, predecessors: dict) -> Optional[dict]:
    """The layers once the nodes of ``block`` in the run of layers round ``number`` wider than ``target`` wrap
    into rows that leave the frame ``target`` wide; None where they take no more rows than layers."""
    run = _run(block, number, target, layer)
    items = [_own(block, each, layer) for each in run]
    room = max(min(target - block.skyline[each] + _span(nodes, cells) for each, nodes in zip(run, items)),
               max(cells[key] for nodes in items for key in nodes))
    rows, _ = band_rows(items, cells, predecessors, room, GAP)
    return _renumbered(layer, run, items, rows) if max(rows.values()) >= len(run) else None


def _moved_below(layer: dict, nodes: list, below: int) -> dict:
    """The layers once ``nodes`` move to a layer of their own under layer ``below``, numbered again from 0."""
    moved = {key: below + 0.5 if key in nodes else number for key, number in layer.items()}
    return _numbered(moved)


def _spanned(block: Block, number: int) -> list[int]:
    """The last layer of each frame in ``block`` spanning layer ``number``."""
    return [child.high for child in block.children if isinstance(child, Block) and child.low <= number <= child.high]


def _own(block: Block, number: int, layer: dict) -> list:
    """The nodes of ``block`` itself (not of the frames inside it) in layer ``number``, left to right; of the
    picture, those between its frames (its tails beside them wrap as the packing sets them out)."""
    beside = block.tails.get(number, [])
    return [child for child in block.children
            if not isinstance(child, Block) and layer[child] == number and child not in beside]


def _span(nodes: list, cells: dict) -> float:
    return sum(cells[key] for key in nodes) + GAP * (len(nodes) - 1)


def _run(block: Block, number: int, target: float, layer: dict) -> list[int]:
    """The layers next to ``number`` (it included) wider than ``target`` in ``block`` with nodes of its own there."""
    def wide(each: int) -> bool:
        return block.skyline.get(each, 0.0) > target and bool(_own(block, each, layer))

    low = high = number
    while wide(low - 1):
        low -= 1
    while wide(high + 1):
        high += 1
    return list(range(low, high + 1))


def _renumbered(layer: dict, run: list[int], items: list[list], rows: dict) -> dict:
    """The layers once the ``items`` of the ``run`` of layers take ``rows`` (from the run's first layer): the other
    nodes of those layers in the first row of their layer's items, the layers below moved down by the rows added;
    numbered again from 0 without a gap."""
    first, added = run[0], max(rows.values()) + 1 - len(run)
    starts = {number: min(rows[key] for key in nodes) for number, nodes in zip(run, items)}
    wrapped = {}
    for key, number in layer.items():
        if key in rows:
            wrapped[key] = first + rows[key]
        elif number in starts:
            wrapped[key] = first + starts[number]
        else:
            wrapped[key] = number + added if number > run[-1] else number
    return _numbered(wrapped)


def _numbered(layers: dict) -> dict:
    """``layers`` numbered again from 0 without a gap, in their order."""
    used = {number: index for index, number in enumerate(sorted(set(layers.values())))}
    return {key: used[number] for key, number in layers.items()}
