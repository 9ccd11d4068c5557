"""How the frames of a picture nest (which box holds which), and the layers of a grouped picture with groups open
laid out frame by frame: inside each frame its nodes and the frames it holds are layered as units, each frame
taking as many layers as its own contents, so that a frame begins below everything that feeds it and ends above
everything it feeds. Frames then stack one under another instead of interleaving (a backward graph's gelu
derivative of one layer, read from saved activations, would otherwise run beside the layer before it), and the
packing sets them side by side only where they truly run side by side."""
from __future__ import annotations

from collections import defaultdict
from typing import Hashable, Iterable, Optional

from ..dataflow import DataflowPicture

Unit = tuple[str, Hashable]  # ("box", index in picture.boxes) or ("node", key)


def box_parents(picture: DataflowPicture) -> list[Optional[int]]:
    """For each box of ``picture``, the index of the innermost box round it (None for the outermost)."""
    boxes = picture.boxes
    sets = [set(box.members) for box in boxes]
    parents: list[Optional[int]] = []
    for index, box in enumerate(boxes):
        holders = [other for other in range(len(boxes)) if boxes[other].depth < box.depth and sets[index] <= sets[other]]
        parents.append(max(holders, key=lambda other: boxes[other].depth) if holders else None)
    return parents


def box_owners(picture: DataflowPicture) -> dict[Hashable, int]:
    """The innermost box holding each node that some box holds."""
    owner: dict[Hashable, int] = {}
    for index in sorted(range(len(picture.boxes)), key=lambda each: picture.boxes[each].depth):
        for key in picture.boxes[index].members:
            owner[key] = index
    return owner


def nested_layers(picture: DataflowPicture, edges: Iterable[tuple[Hashable, Hashable]]) -> Optional[dict]:
    """The layer of every node of ``picture``, frame by frame (see the module docstring); None where the frames
    feed one another in a circle, so that no such layering exists."""
    parents, owner = box_parents(picture), box_owners(picture)
    chains: dict[Hashable, list[int]] = {}
    for key in picture.nodes:
        chain, box = [], owner.get(key)
        while box is not None:
            chain.append(box)
            box = parents[box]
        chains[key] = chain[::-1]
    children: dict[Optional[int], list[Unit]] = defaultdict(list)
    for index, parent in enumerate(parents):
        children[parent].append(("box", index))
    for node_key, chain in chains.items():
        children[chain[-1] if chain else None].append(("node", node_key))
    links: dict[Optional[int], set[tuple[Unit, Unit]]] = defaultdict(set)
    for tail, head in edges:
        if tail == head or tail not in chains or head not in chains:
            continue
        upper, lower = chains[tail], chains[head]
        level = 0
        while level < len(upper) and level < len(lower) and upper[level] == lower[level]:
            level += 1
        links[upper[level - 1] if level else None].add((_unit(upper, tail, level), _unit(lower, head, level)))
    found = _solve(None, children, links)
    return None if found is None else found[0]


def _unit(chain: list[int], key: Hashable, level: int) -> Unit:
    return ("box", chain[level]) if level < len(chain) else ("node", key)


def _solve(container: Optional[int], children: dict, links: dict) -> Optional[tuple[dict, int]]:
    """The layers of the nodes in ``container`` (None: the picture) from its top, and how many it takes."""
    contents: dict[Unit, tuple[dict, int]] = {}
    for unit in children[container]:
        if unit[0] == "box":
            found = _solve(unit[1], children, links)
            if found is None:
                return None
            contents[unit] = found
        else:
            contents[unit] = ({unit[1]: 0}, 1)
    successors: dict[Unit, set[Unit]] = defaultdict(set)
    predecessors: dict[Unit, set[Unit]] = defaultdict(set)
    for tail, head in links[container]:
        successors[tail].add(head)
        predecessors[head].add(tail)
    order = _topological(list(contents), predecessors, successors)
    if order is None:
        return None
    start: dict[Unit, int] = {}
    for unit in order:
        start[unit] = max((start[before] + contents[before][1] for before in predecessors[unit]), default=0)
    for unit in reversed(order):  # each unit that feeds another just above the first it feeds
        if successors[unit]:
            start[unit] = min(start[after] for after in successors[unit]) - contents[unit][1]
    top = min(start.values(), default=0)
    layers = {key: start[unit] - top + layer for unit in order for key, layer in contents[unit][0].items()}
    return layers, max((start[unit] - top + contents[unit][1] for unit in order), default=0)


def _topological(units: list[Unit], predecessors: dict, successors: dict) -> Optional[list[Unit]]:
    """``units`` in an order where each comes after those it is fed by (Kahn's), or None if they feed in a circle."""
    waiting = {unit: len(predecessors[unit]) for unit in units}
    ready = [unit for unit in units if not waiting[unit]]
    order = []
    while ready:
        unit = ready.pop()
        order.append(unit)
        for after in successors[unit]:
            waiting[after] -= 1
            if not waiting[after]:
                ready.append(after)
    return order if len(order) == len(units) else None
