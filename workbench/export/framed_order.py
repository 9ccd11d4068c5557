"""The order of the nodes of a layered picture whose nodes sit in frames (opened groups, expanded calls), nested
or side by side. A frame is drawn as one block, so its members keep together in every layer it spans, and the
blocks and nodes inside one frame keep one order left to right in all their layers: a packing sets each, in
that order, as far left as the layers it spans allow (``widgets/figures/picture_packing``). The order is
chosen here for that packing, in columns of one node each:

* sweeps that sort the blocks and nodes of each frame by the mean column of their neighbours outside them
  (an edge leaving a block counts for the block as a whole), the outermost frame first;
* then swaps of neighbours in a layer, a node with a node or a block with what lies beside it, each kept
  where the edges, drawn straight from end to end, then cross fewer times between each two layers.

Of all orders tried the one with fewest crossings is kept, so the picture never crosses more than the order it
began with (the ``start`` columns, an ordering of the nodes without frames).
"""
from __future__ import annotations

from typing import Collection, Hashable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

SWEEPS = 6  # sorts of every frame by its neighbours' columns; a few settle the order
ROW_SWEEPS = 2  # sorts of the nodes of each layer by their neighbours above, then below, and so on
PASSES = 4  # rounds of swaps; each ends early where no swap helps
GAP = 0.8  # columns between two neighbours in a row
PAD, NEST = 0.3, 0.33  # columns between a frame's side and what it holds, and more for each frame it holds inside
MARKER = 0.5  # columns from a node's left to where its edges meet it

Child = Union["_Block", int]  # a block, or a node by its number


class _Block:
    """A frame (or the picture itself): its children in order, its nodes at any depth, the layers it spans, the
    frame round it, and where the packing puts each child (columns from its left side)."""

    __slots__ = ("children", "members", "low", "high", "width", "left", "parent", "origin", "pad")

    def __init__(self, parent: "_Block | None" = None):
        self.children: list[Child] = []
        self.members: list[int] = []
        self.low = self.high = 0
        self.width = 0.0
        self.left: dict[Child, float] = {}
        self.parent = parent
        self.origin = 0.0  # the column of its left side
        self.pad = 0.0  # columns between its sides and its children


def framed_columns(layers: Mapping[Hashable, int], edges: Iterable[tuple[Hashable, Hashable]],
                   groups: Sequence[Collection[Hashable]], start: Mapping[Hashable, float],
                   widths: Optional[Mapping[Hashable, float]] = None) -> dict[Hashable, float]:
    """The column of each node of ``layers`` (its layer) with the members of each of ``groups`` (nested or
    apart) kept together as blocks, ordered to cross few ``edges``; ``start`` gives the columns to begin from, and
    ``widths`` the columns each node takes with its label (one where not given)."""
    keys = list(layers)
    number = {key: index for index, key in enumerate(keys)}
    layer = [layers[key] for key in keys]
    pairs = [(number[tail], number[head]) for tail, head in edges
             if tail in number and head in number and layers[tail] != layers[head]]
    root, blocks = _tree(layer, [[number[key] for key in group if key in number] for group in groups],
                         [start[key] for key in keys])
    order = _Order(root, blocks, layer, pairs, [max((widths or {}).get(key, 1.0), 1.0) for key in keys])
    order.sweep()
    order.sweep_rows()
    order.swap()
    return {key: float(column) for key, column in zip(keys, order.best_columns)}


def _tree(layer: list[int], groups: list[list[int]], start: list[float]) -> tuple[_Block, list[_Block]]:
    """The blocks of ``groups`` nested by inclusion (the larger holds the smaller; of equal ones, the first the
    later), each block's children in the order of their mean column in ``start``; and every block, the outer
    before the inner."""
    sets = [list(dict.fromkeys(group)) for group in groups]
    root = _Block()
    owner: list[_Block] = [root] * len(layer)
    blocks = [root]
    for index in sorted((index for index in range(len(sets)) if sets[index]), key=lambda index: -len(sets[index])):
        members = sets[index]
        holders = {id(owner[node]): owner[node] for node in members}
        parent = next(iter(holders.values())) if len(holders) == 1 else root
        block = _Block(parent)
        block.members = members
        block.low, block.high = min(layer[node] for node in members), max(layer[node] for node in members)
        parent.children.append(block)
        for node in members:
            owner[node] = block
        blocks.append(block)
    for node in range(len(layer)):
        owner[node].children.append(node)
    root.members = list(range(len(layer)))
    if layer:
        root.low, root.high = min(layer), max(layer)
    depth = {id(root): 0}
    for block in blocks[1:]:
        depth[id(block)] = depth[id(block.parent)] + 1
    deepest = max(depth.values())
    for block in blocks:
        block.children.sort(key=lambda child: _mean(child, start))
        block.pad = PAD + NEST * (deepest - depth[id(block)]) if block is not root else 0.0
    return root, blocks


def _mean(child: Child, columns) -> float:
    """The mean column of a block's nodes, or a node's column."""
    if isinstance(child, _Block):
        return sum(columns[node] for node in child.members) / len(child.members)
    return columns[child]


class _Order:
    """The search: the blocks and their orders, the columns they give, and the crossings counted from them."""

    def __init__(self, root: _Block, blocks: list[_Block], layer: list[int], pairs: list[tuple[int, int]],
                 widths: list[float]):
        self.root, self.blocks, self.layer, self.widths = root, blocks, layer, widths
        self.count = _Crossings(pairs, layer)
        self.neighbours = _neighbours(root, pairs, len(layer))
        self.above: list[list[int]] = [[] for _ in layer]  # each node's neighbours in the layers above it
        self.below: list[list[int]] = [[] for _ in layer]
        for tail, head in pairs:
            upper, lower = (tail, head) if layer[tail] < layer[head] else (head, tail)
            self.above[lower].append(upper)
            self.below[upper].append(lower)
        for block in reversed(blocks):
            self._place(block)
        self.columns = np.zeros(len(layer))
        self._absolute(root, 0.0)
        self.fewest = self.count.total(self.columns)
        self.best_columns = self.columns.copy()
        self.best_orders = [list(block.children) for block in blocks]

    def _spans(self, child: Child) -> tuple[int, int, float]:
        if isinstance(child, _Block):
            return child.low, child.high, child.width
        return self.layer[child], self.layer[child], self.widths[child]

    def _place(self, block: _Block) -> None:
        """Sets each child of ``block`` as far left as the layers it spans allow, in order; and its width."""
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
        block.origin = left
        for child in block.children:
            at = left + block.pad + block.left[child]
            if isinstance(child, _Block):
                self._absolute(child, at)
            else:
                self.columns[child] = at + MARKER

    def _replaced(self, block: _Block) -> None:
        """Places ``block`` again after its children changed order, and the frames round it as far out as its
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
        """Counts the crossings of the columns now, remembering them where they are the fewest yet."""
        count = self.count.total(self.columns)
        if count < self.fewest:
            self.fewest, self.best_columns = count, self.columns.copy()
            self.best_orders = [list(block.children) for block in self.blocks]
        return count

    def sweep(self) -> None:
        """Sorts every frame's children by the mean column of their neighbours outside them, frame after frame."""
        for _ in range(SWEEPS):
            if not self.fewest:
                return
            for block in self.blocks:
                if len(block.children) > 1:
                    block.children.sort(key=self._barycentre)
                    self._replaced(block)
            self._keep()

    def sweep_rows(self) -> None:
        """From the best order yet, sorts the nodes of each frame in each layer by the mean column of their
        neighbours in the layers above (going down), then below (going up), and so on; frames stay in place."""
        self._restore_best()
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
        their ``ends``, in the places nodes take in the row."""
        columns = self.columns
        nodes = [child for child in row if not isinstance(child, _Block)]

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
        if len(nodes) < len(row):  # a frame in the row: what follows it may move
            self._replaced(block)
            return
        left = 0.0
        for node in ordered:
            block.left[node] = left
            columns[node] = block.origin + block.pad + left + MARKER
            left += self.widths[node] + GAP

    def _restore_best(self) -> None:
        for block, children in zip(self.blocks, self.best_orders):
            block.children = list(children)
        for block in reversed(self.blocks):
            self._place(block)
        self._absolute(self.root, 0.0)

    def _barycentre(self, child: Child) -> float:
        ends = self.neighbours.get(child if isinstance(child, _Block) else ("node", child))
        if ends is not None:
            return float(np.mean(self.columns[ends]))
        return _mean(child, self.columns)

    def swap(self) -> None:
        """Swaps neighbours in a layer where the edges then cross less, from the best order found."""
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

    def _rows(self, block: _Block) -> dict[int, list[Child]]:
        """The children of ``block`` in each layer it spans, left to right."""
        rows: dict[int, list[Child]] = {}
        for child in block.children:
            low, high, _ = self._spans(child)
            for row in range(low, high + 1):
                rows.setdefault(row, []).append(child)
        return rows

    def _swap_nodes(self, block: _Block, now: int) -> int:
        """Swaps each two nodes side by side in a layer of ``block`` where their edges then cross less (nothing
        else moves); gives the crossings after."""
        columns = self.columns
        for row in self._rows(block).values():
            for index in range(len(row) - 1):
                one, other = row[index], row[index + 1]
                if isinstance(one, _Block) or isinstance(other, _Block):
                    continue
                before = self.count.near(columns, (one, other))
                was = columns[one], columns[other]
                columns[other], columns[one] = was[0], was[0] + self.widths[other] + GAP
                after = self.count.near(columns, (one, other))
                if after < before:
                    row[index], row[index + 1] = other, one
                    children = block.children
                    first, second = children.index(one), children.index(other)
                    children[first], children[second] = other, one
                    block.left[other], block.left[one] = block.left[one], block.left[one] + self.widths[other] + GAP
                    now = self._keep()
                else:
                    columns[one], columns[other] = was
        return now

    def _swap_blocks(self, block: _Block, now: int) -> int:
        """Swaps a block with the block or node beside it in a layer of ``block`` where the edges then cross less;
        gives the crossings after."""
        tried: set[tuple[int, int]] = set()
        changed = True
        while changed:
            changed = False
            for row in self._rows(block).values():
                for one, other in zip(row, row[1:]):
                    if not (isinstance(one, _Block) or isinstance(other, _Block)) or (id(one), id(other)) in tried:
                        continue
                    tried.add((id(one), id(other)))
                    children = block.children
                    first, second = children.index(one), children.index(other)
                    saved = self._saved(block)
                    children[first], children[second] = other, one
                    self._replaced(block)
                    count = self.count.total(self.columns)
                    if count < now:
                        now = self._keep()
                        changed = True
                        break
                    children[first], children[second] = one, other
                    self._restore(saved)
                if changed:
                    break
        return now

    def _saved(self, block: _Block) -> tuple:
        chain = []
        at: "_Block | None" = block
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
    """Counts how often edges drawn straight between their ends cross between two neighbouring layers."""

    def __init__(self, pairs: list[tuple[int, int]], layer: list[int]):
        gaps: dict[int, list[int]] = {}
        tails: list[int] = []
        heads: list[int] = []
        weights: list[tuple[float, float]] = []  # each segment's ends as parts of the way from its edge's tail to head
        for tail, head in pairs:
            if layer[tail] > layer[head]:
                tail, head = head, tail
            span = layer[head] - layer[tail]
            for row in range(layer[tail], layer[head]):
                above, below = (row - layer[tail]) / span, (row + 1 - layer[tail]) / span
                gaps.setdefault(row, []).append(len(tails))
                tails.append(tail)
                heads.append(head)
                weights.append((above, below))
        self.tails, self.heads = np.array(tails, int), np.array(heads, int)
        self.above, self.below = np.array(weights, float).reshape(-1, 2).T
        first, second = [], []
        for segments in gaps.values():
            for index, one in enumerate(segments):
                for other in segments[index + 1:]:
                    first.append(one)
                    second.append(other)
        self.first, self.second = np.array(first, int), np.array(second, int)
        touching: dict[int, list[int]] = {}
        for index, (one, other) in enumerate(zip(first, second)):
            for node in {tails[one], heads[one], tails[other], heads[other]}:
                touching.setdefault(node, []).append(index)
        self.touching = {node: np.array(found, int) for node, found in touching.items()}

    def _crossed(self, columns: np.ndarray, first: np.ndarray, second: np.ndarray) -> int:
        ends = []
        for segments in (first, second):
            tail, head = columns[self.tails[segments]], columns[self.heads[segments]]
            ends.append((tail + self.above[segments] * (head - tail), tail + self.below[segments] * (head - tail)))
        (top, bottom), (other_top, other_bottom) = ends
        return int(np.count_nonzero((top - other_top) * (bottom - other_bottom) < -1e-9))

    def total(self, columns: np.ndarray) -> int:
        return self._crossed(columns, self.first, self.second)

    def near(self, columns: np.ndarray, nodes: Iterable[int]) -> int:
        """The crossings of pairs of segments of which one belongs to an edge of one of ``nodes``, a pair counted
        once for each of them its edges meet (so compare counts of the same ``nodes`` only)."""
        found = [self.touching[node] for node in nodes if node in self.touching]
        if not found:
            return 0
        which = np.concatenate(found)
        return self._crossed(columns, self.first[which], self.second[which])


def _neighbours(root: _Block, pairs: list[tuple[int, int]], count: int) -> dict:
    """For each block and each node (``("node", number)``), the nodes at the other end of its edges that lie
    outside it: an edge counts for its node and for each block round it that it leaves, up to the innermost block
    holding both its ends."""
    chains: list[list] = [[] for _ in range(count)]

    def walk(block: _Block, chain: list) -> None:
        for child in block.children:
            if isinstance(child, _Block):
                walk(child, [*chain, child])
            else:
                chains[child] = [*chain, ("node", child)]

    walk(root, [root])
    found: dict = {}
    for tail, head in pairs:
        upper, lower = chains[tail], chains[head]
        shared = 0
        while upper[shared] is lower[shared]:
            shared += 1
        for chain, other in ((upper, head), (lower, tail)):
            for unit in chain[shared:]:
                found.setdefault(unit, []).append(other)
    return {unit: np.array(ends, int) for unit, ends in found.items()}
