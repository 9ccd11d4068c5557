"""The order of the nodes of a layered picture whose nodes sit in frames (opened groups, expanded calls), nested
or side by side. A frame is drawn as one block: its members keep together in every layer it spans, and the
blocks and nodes inside one frame keep one order left to right in all their layers, each set, in that order, as
far left as the layers it spans allow (the packing of ``widgets/figures/picture_packing`` draws it so). The order
is chosen here for that packing, with each node as wide as its label (``widths``, in columns):

* sweeps down and then up the layers sort the nodes of each frame in each layer by the mean column of their
  neighbours above (going down) or below (going up), the frames staying where they are;
* then a node swaps with the node beside it in a layer, and a block with the block or node beside it, wherever
  the edges then cross less;
* then, a few times, each edge spanning layers is given the lane it would be routed down: the column nearest
  its straight line that is clear of every label and frame's side in all the layers it passes (the router of
  the packing takes such a lane where it can, often beside the frames, and bends to it under its tail and from
  it over its head); sweeps and swaps follow with the edge counted there, its lane a neighbour of its ends.

Crossings are counted between each two neighbouring layers, an edge drawn straight from its tail to its head, or
to its lane, down it and on to its head. Each round keeps the order with fewest crossings it found, so an order
never crosses more, counted as that round counts, than the one the round began from (at first ``start``: an
ordering of the nodes with no regard to frames, whose mean columns order each frame's children).
"""
from __future__ import annotations

from typing import Collection, Hashable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

ROW_SWEEPS = 2  # layer by layer: down, then up (more seldom helped, and sometimes led to a worse end)
PASSES = 4  # rounds of swaps; a round ends the search where no swap helped
MOST_TRIES = 600  # swaps of blocks tried at most (each places the frames again), so that a big picture stays quick
MOST_PAIRS = 300_000  # pairs of edges sharing a gap between layers; beyond, the start order is kept
GAP = 0.8  # columns between two neighbours in a layer (the packing's 20 px at 24 px a column)
PAD, NEST = 0.3, 0.33  # columns between a frame's side and what it holds, and more for each frame nested inside
MARKER = 0.5  # columns from a node's left to its marker, where its edges meet it
LANE_ROUNDS = 3  # rounds of sweeps and swaps with long edges down their lanes (found again each round)
CLEAR, LABEL_CLEAR, SIDE = 0.1, 0.3, 0.3  # columns a lane keeps from a node, past its label, from a frame's side

Child = Union["_Block", int]  # a block, or a node by its number


class _Block:
    """A frame (or the picture itself): its children in order, its nodes at any depth, the layers it spans, the
    block round it, its padding, and where its children go (columns from its left side, which is at ``origin``)."""

    __slots__ = ("children", "members", "low", "high", "width", "left", "parent", "origin", "pad")

    def __init__(self, parent: Optional[_Block] = None):
        self.children: list[Child] = []
        self.members: list[int] = []
        self.low = self.high = 0
        self.width = 0.0
        self.left: dict[Child, float] = {}
        self.parent = parent
        self.origin = 0.0
        self.pad = 0.0


def framed_columns(layers: Mapping[Hashable, int], edges: Iterable[tuple[Hashable, Hashable]],
                   groups: Sequence[Collection[Hashable]], start: Mapping[Hashable, float],
                   widths: Optional[Mapping[Hashable, float]] = None) -> dict[Hashable, float]:
    """The column of each node of ``layers`` (node -> layer) with the members of each of ``groups`` (nested or
    apart) kept together as blocks, ordered to cross few ``edges``; ``start`` gives the columns to begin from,
    ``widths`` the columns each node takes with its label (one where not given)."""
    keys = list(layers)
    number = {key: index for index, key in enumerate(keys)}
    layer = [layers[key] for key in keys]
    pairs = list(dict.fromkeys((number[tail], number[head]) for tail, head in edges
                               if tail in number and head in number and layers[tail] != layers[head]))
    root, blocks = _tree(layer, [[number[key] for key in group if key in number] for group in groups],
                         [start[key] for key in keys])
    sizes = [max((widths or {}).get(key, 1.0), 1.0) for key in keys]
    order = _Order(root, blocks, layer, pairs, sizes)
    if order.count.pairs <= MOST_PAIRS:
        order.sweep_rows()
        order.swap()
        for _ in range(LANE_ROUNDS):
            order.use_lanes()
            order.sweep_rows()
            order.swap()
    return {key: float(column) for key, column in zip(keys, order.best_columns)}


def _tree(layer: list[int], groups: list[list[int]], start: list[float]) -> tuple[_Block, list[_Block]]:
    """The blocks of ``groups`` nested by inclusion (the larger holds the smaller; of two equal ones, the first
    the other) with their nodes, each block's children in the order of their mean column in ``start``; and every
    block, the picture's first and each before those it holds."""
    sets = [list(dict.fromkeys(group)) for group in groups]
    root = _Block()
    owner: list[_Block] = [root] * len(layer)
    blocks = [root]
    depth = {id(root): 0}
    for index in sorted((index for index in range(len(sets)) if sets[index]), key=lambda index: -len(sets[index])):
        members = sets[index]
        holders = {id(owner[node]): owner[node] for node in members}
        parent = next(iter(holders.values())) if len(holders) == 1 else root  # a group cutting across: the picture's
        block = _Block(parent)
        block.members = members
        block.low, block.high = min(layer[node] for node in members), max(layer[node] for node in members)
        parent.children.append(block)
        depth[id(block)] = depth[id(parent)] + 1
        for node in members:
            owner[node] = block
        blocks.append(block)
    for node in range(len(layer)):
        owner[node].children.append(node)
    root.members = list(range(len(layer)))
    root.low, root.high = min(layer, default=0), max(layer, default=0)
    deepest = max(depth.values())
    for block in blocks:
        block.children.sort(key=lambda child: _mean(child, start))
        if block is not root:  # as the packing pads a frame: more for one that holds others
            block.pad = PAD + NEST * (deepest - depth[id(block)])
    return root, blocks


def _mean(child: Child, columns) -> float:
    """The mean column of a block's nodes, or a node's column."""
    if isinstance(child, _Block):
        return sum(columns[node] for node in child.members) / len(child.members)
    return columns[child]


class _Order:
    """The search: the blocks and their orders, the columns they give, the crossings counted from those, and the
    best order found."""

    def __init__(self, root: _Block, blocks: list[_Block], layer: list[int], pairs: list[tuple[int, int]],
                 widths: list[float]):
        self.root, self.blocks, self.layer, self.widths = root, blocks, layer, widths
        self.pairs = pairs
        self.count = _Crossings(pairs, layer)
        self._neighbours({})
        self.columns = np.zeros(len(layer))
        self.best_orders = [list(block.children) for block in blocks]
        self._restore_best()
        self.fewest = self.count.total(self.columns)
        self.best_columns = self.columns.copy()
        self.tries = 0

    def _neighbours(self, lanes: Mapping[tuple[int, int], int]) -> None:
        """Each node's neighbours in the layers above it and below: the other ends of its edges, or the lanes
        (``lanes``, pseudo-nodes of the columns) where its long edges run."""
        self.above: list[list[int]] = [[] for _ in self.layer]
        self.below: list[list[int]] = [[] for _ in self.layer]
        for tail, head in self.pairs:
            upper, lower = (tail, head) if self.layer[tail] < self.layer[head] else (head, tail)
            lane = lanes.get((upper, lower))
            self.above[lower].append(upper if lane is None else lane)
            self.below[upper].append(lower if lane is None else lane)

    def use_lanes(self) -> None:
        """From the best order found, counts crossings with each long edge running down the lane it would take now
        (``_lanes``), so that the swaps that follow weigh where it truly runs."""
        self._restore_best()
        lanes = self._lanes()
        count = len(self.layer)
        numbered = {pair: count + number for number, pair in enumerate(lanes)}  # each lane a column after the nodes'
        self.count = _Crossings(self.pairs, self.layer, numbered)
        self._neighbours(numbered)
        self.columns = np.concatenate([self.columns[:count], list(lanes.values())])
        self.fewest = self.count.total(self.columns)
        self.best_columns = self.columns.copy()

    def _lanes(self) -> dict[tuple[int, int], float]:
        """For each edge spanning layers between its ends, the column nearest its straight line's in the first
        layer passed that is clear of every node's label and every frame's side in all the layers it passes:
        where the packing's router runs it down (else it bends to and fro between the rows' gaps)."""
        taken: dict[int, list[tuple[float, float]]] = {}
        for node, row in enumerate(self.layer):
            left = self.columns[node] - MARKER
            taken.setdefault(row, []).append((left - CLEAR, left + self.widths[node] + LABEL_CLEAR))
        for block in self.blocks[1:]:
            for side in (block.origin, block.origin + block.width):
                for row in range(block.low, block.high + 1):
                    taken.setdefault(row, []).append((side - SIDE, side + SIDE))
        lanes: dict[tuple[int, int], float] = {}
        for tail, head in self.pairs:
            if self.layer[tail] > self.layer[head]:
                tail, head = head, tail
            top, bottom = self.layer[tail], self.layer[head]
            if bottom - top < 2:
                continue
            start, end = self.columns[tail], self.columns[head]
            near = start + (end - start) / (bottom - top)
            merged: list[list[float]] = []
            for low, high in sorted(span for row in range(top + 1, bottom) for span in taken.get(row, ())):
                if merged and low <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], high)
                else:
                    merged.append([low, high])
            lane = near
            for low, high in merged:
                if low < near < high:
                    lane = low - CLEAR if near - low <= high - near else high + CLEAR
                    break
            lanes[(tail, head)] = lane
        return lanes

    def _spans(self, child: Child) -> tuple[int, int, float]:
        """A child's first and last layer and its width."""
        if isinstance(child, _Block):
            return child.low, child.high, child.width
        return self.layer[child], self.layer[child], self.widths[child]

    def _place(self, block: _Block) -> None:
        """Sets each child of ``block``, in order, as far left as the layers it spans allow; and its width."""
        skyline: dict[int, float] = {}
        block.left = {}
        for child in block.children:
            low, high, wide = self._spans(child)
            reach = max(skyline.get(row, -GAP) for row in range(low, high + 1)) + GAP
            block.left[child] = reach
            for row in range(low, high + 1):
                skyline[row] = reach + wide
        block.width = max(skyline.values(), default=0.0) + 2 * block.pad

    def _absolute(self, block: _Block, left: float) -> None:
        """The columns of the nodes in ``block``, whose left side is at column ``left``."""
        block.origin = left
        for child in block.children:
            at = left + block.pad + block.left[child]
            if isinstance(child, _Block):
                self._absolute(child, at)
            else:
                self.columns[child] = at + MARKER

    def _replaced(self, block: _Block) -> None:
        """Places ``block`` again after its children changed order, and the blocks round it as far out as its
        width changed; then the columns of the nodes inside the outermost of those."""
        at = block
        while True:
            width = at.width
            self._place(at)
            if at.parent is None or at.width == width:
                break
            at = at.parent
        self._absolute(at, at.origin)

    def _keep(self) -> int:
        """Counts the crossings now, remembering the order where they are the fewest yet."""
        count = self.count.total(self.columns)
        if count < self.fewest:
            self.fewest, self.best_columns = count, self.columns.copy()
            self.best_orders = [list(block.children) for block in self.blocks]
        return count

    def _restore_best(self) -> None:
        """Takes the best order found up again."""
        for block, children in zip(self.blocks, self.best_orders):
            block.children = list(children)
        for block in reversed(self.blocks):
            self._place(block)
        self._absolute(self.root, 0.0)

    def _rows(self, block: _Block) -> dict[int, list[Child]]:
        """The children of ``block`` in each layer it spans, left to right."""
        rows: dict[int, list[Child]] = {}
        for child in block.children:
            low, high, _ = self._spans(child)
            for row in range(low, high + 1):
                rows.setdefault(row, []).append(child)
        return rows

    def sweep_rows(self) -> None:
        """Sorts the nodes of each frame in each layer by the mean column of their neighbours in the layers above,
        layer after layer going down, then below going up, and so on."""
        rows = {id(block): self._rows(block) for block in self.blocks}
        for sweep in range(ROW_SWEEPS):
            if not self.fewest:
                return
            upward = sweep % 2 == 1
            for row in sorted(range(self.root.low, self.root.high + 1), reverse=upward):
                for block in self.blocks:
                    children = rows[id(block)].get(row)
                    if children and len(children) > 1:
                        self._sort_row(block, children, self.below if upward else self.above)
            self._keep()

    def _sort_row(self, block: _Block, row: list[Child], ends: list[list[int]]) -> None:
        """Sorts the nodes of ``row`` (the children of ``block`` in one layer, left to right) by the mean column of
        their ``ends`` (their own column where they have none), among the places nodes take in the row."""
        columns = self.columns
        nodes = [child for child in row if isinstance(child, int)]

        def key(node: int) -> float:
            found = ends[node]
            return sum(columns[end] for end in found) / len(found) if found else columns[node]

        ordered = sorted(nodes, key=key)
        if ordered == nodes:
            return
        places = sorted(block.children.index(node) for node in nodes)
        for place, node in zip(places, ordered):
            block.children[place] = node
        slots = iter(ordered)
        row[:] = [child if isinstance(child, _Block) else next(slots) for child in row]
        if len(nodes) < len(row):  # a block in the row: it and what follows it may move
            self._replaced(block)
            return
        left = 0.0
        for node in ordered:
            block.left[node] = left
            columns[node] = block.origin + block.pad + left + MARKER
            left += self.widths[node] + GAP

    def swap(self) -> None:
        """From the best order found, swaps neighbours in a layer wherever the edges then cross less."""
        self._restore_best()
        now = self.fewest
        for _ in range(PASSES):
            if not now:
                return
            before = now
            for block in self.blocks:
                now = self._swap_nodes(block, now)
            for block in self.blocks:
                now = self._swap_blocks(block, now)
            if now >= before:
                return

    def _swap_nodes(self, block: _Block, now: int) -> int:
        """Swaps each two nodes side by side in a layer of ``block`` where their edges then cross less (nothing
        else moves); gives the crossings after."""
        columns, widths = self.columns, self.widths
        for row in self._rows(block).values():
            for index in range(len(row) - 1):
                one, other = row[index], row[index + 1]
                if not (isinstance(one, int) and isinstance(other, int)):
                    continue
                before = self.count.near(columns, (one, other))
                was = columns[one], columns[other]
                columns[other], columns[one] = was[0], was[0] + widths[other] + GAP
                if self.count.near(columns, (one, other)) < before:
                    row[index], row[index + 1] = other, one
                    children = block.children
                    first, second = children.index(one), children.index(other)
                    children[first], children[second] = other, one
                    block.left[other], block.left[one] = block.left[one], block.left[one] + widths[other] + GAP
                    now = self._keep()
                else:
                    columns[one], columns[other] = was
        return now

    def _swap_blocks(self, block: _Block, now: int) -> int:
        """Swaps a block with the block or node beside it in a layer of ``block`` where the edges then cross less
        (each pair tried once); gives the crossings after."""
        tried: set[tuple[int, int]] = set()
        changed = True
        while changed and self.tries < MOST_TRIES:
            changed = False
            for one, other in ((row[index], row[index + 1]) for row in self._rows(block).values()
                               for index in range(len(row) - 1)):
                if (isinstance(one, int) and isinstance(other, int)) or (id(one), id(other)) in tried:
                    continue
                tried.add((id(one), id(other)))
                self.tries += 1
                children = block.children
                first, second = children.index(one), children.index(other)
                saved = self._saved(block)
                children[first], children[second] = other, one
                self._replaced(block)
                if self.count.total(self.columns) < now:
                    now = self._keep()
                    changed = True
                    break
                children[first], children[second] = one, other
                self._restore(saved)
                if self.tries >= MOST_TRIES:
                    break
        return now

    def _saved(self, block: _Block) -> tuple:
        """What placing ``block`` again changes: its and its outer blocks' places, every origin, the columns."""
        chain = []
        at: Optional[_Block] = block
        while at is not None:
            chain.append((at, at.left, at.width))
            at = at.parent
        return chain, [each.origin for each in self.blocks], self.columns.copy()

    def _restore(self, saved: tuple) -> None:
        chain, origins, columns = saved
        for at, left, width in chain:
            at.left, at.width = left, width
        for each, origin in zip(self.blocks, origins):
            each.origin = origin
        self.columns = columns


class _Crossings:
    """Counts how often edges drawn straight between their ends cross between two neighbouring layers: each edge
    is cut into a segment per gap it crosses, and two segments of one gap cross where their ends swap sides."""

    def __init__(self, pairs: list[tuple[int, int]], layer: list[int],
                 lanes: Optional[Mapping[tuple[int, int], int]] = None):
        gaps: dict[int, list[int]] = {}
        tails: list[int] = []
        heads: list[int] = []
        parts: list[tuple[float, float]] = []  # how far from its edge's tail to its head each segment starts and ends
        for tail, head in pairs:
            if layer[tail] > layer[head]:
                tail, head = head, tail
            span = layer[head] - layer[tail]
            lane = (lanes or {}).get((tail, head))
            for row in range(layer[tail], layer[head]):
                gaps.setdefault(row, []).append(len(tails))
                if lane is None:
                    tails.append(tail)
                    heads.append(head)
                    parts.append(((row - layer[tail]) / span, (row + 1 - layer[tail]) / span))
                else:  # to its lane, down it, and from it to its head
                    tails.append(tail if row == layer[tail] else lane)
                    heads.append(head if row == layer[head] - 1 else lane)
                    parts.append((0.0, 1.0))
        self.tails, self.heads = np.array(tails, int), np.array(heads, int)
        self.above, self.below = np.array(parts, float).reshape(-1, 2).T
        self.pairs = sum(len(segments) * (len(segments) - 1) // 2 for segments in gaps.values())
        first, second = [np.zeros(0, int)], [np.zeros(0, int)]
        if self.pairs <= MOST_PAIRS:
            for segments in gaps.values():
                one, other = np.triu_indices(len(segments), 1)
                first.append(np.array(segments, int)[one])
                second.append(np.array(segments, int)[other])
        self.first, self.second = np.concatenate(first), np.concatenate(second)
        # node -> the pairs with a segment of one of its edges (a pair once for each end of either segment there)
        ends = np.concatenate([self.tails[self.first], self.heads[self.first], self.tails[self.second],
                               self.heads[self.second]])
        which = np.tile(np.arange(len(self.first)), 4)
        order = np.argsort(ends, kind="stable")
        nodes, starts = np.unique(ends[order], return_index=True)
        self.touching = dict(zip(nodes.tolist(), np.split(which[order], starts[1:])))

    def _crossed(self, columns: np.ndarray, first: np.ndarray, second: np.ndarray) -> int:
        ends = []
        for segments in (first, second):
            tail, head = columns[self.tails[segments]], columns[self.heads[segments]]
            ends.append((tail + self.above[segments] * (head - tail), tail + self.below[segments] * (head - tail)))
        (top, bottom), (other_top, other_bottom) = ends
        return int(np.count_nonzero((top - other_top) * (bottom - other_bottom) < -1e-9))

    def total(self, columns: np.ndarray) -> int:
        """The crossings of the nodes at ``columns``."""
        return self._crossed(columns, self.first, self.second)

    def near(self, columns: np.ndarray, nodes: Iterable[int]) -> int:
        """The crossings of pairs of segments with one of an edge of ``nodes``, a pair counted once for each of
        ``nodes`` its edges meet (so compare counts for the same ``nodes`` only)."""
        found = [self.touching[node] for node in nodes if node in self.touching]
        if not found:
            return 0
        which = np.concatenate(found)
        return self._crossed(columns, self.first[which], self.second[which])
