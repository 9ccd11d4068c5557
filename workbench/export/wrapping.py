"""The one rule by which a picture's layers too wide for its output wrap into rows, as lines of text wrap. The
grouped pictures (``compose``), the notebook's Graph tab (``widgets/figures/graph_figure``) and the
extension's Graph tab (``src/wrapping.ts``, the same steps; a test compares the two) all wrap by it, the two
Graph tabs the same layers in the same order (``graph_layers``).

``wrap_rows`` wraps one layer. ``band_rows`` wraps a layered picture: a run of consecutive layers that are
all too wide wraps as one, in bands one under another, each band holding a row of every layer of the run, so
that the chains of a run (for each of 24 weights, an all-reduce and the update it feeds) wrap together and
their edges stay short, instead of the updates' rows wrapping apart from their all-reduces' rows.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Hashable, Mapping, Sequence


def wrap_rows(widths: Sequence[float], room: float, gap: float) -> list[int]:
    """The row of each of a layer's boxes (``widths``, in order): each row takes boxes in order while they fit
    side by side, ``gap`` apart, within ``room`` (a box wider than ``room`` takes a row alone)."""
    rows = []
    row, used = 0, -gap
    for width in widths:
        if used > 0 and used + gap + width > room:
            row, used = row + 1, -gap
        used += gap + width
        rows.append(row)
    return rows


def band_rows(layers: Sequence[Sequence[Hashable]], widths: Mapping[Hashable, float],
              predecessors: Mapping[Hashable, Sequence[Hashable]], room: float,
              gap: float) -> tuple[dict[Hashable, int], dict[Hashable, float]]:
    """The row of every item of ``layers`` (each a layer's items in order; ``widths`` of each, and the items
    that feed each, ``predecessors``) once the layers too wide for ``room`` are wrapped, and its left edge in
    its row. A layer that fits is one row. A run of layers too wide wraps as one. Chains start at the run's
    first layer; an item of a later layer joins the chain of its first feeder in the layer above where that
    feeder is in a chain and feeds no other item of the layer. The first layer wraps by ``wrap_rows``, each of
    its items as wide as the widest of its chain, and each chain takes its first item's band and left edge;
    the items in no chain wrap by ``wrap_rows``, each layer's in bands after all bands before them. Where an
    edge would then point up, the run's layers wrap one after another instead. Rows are numbered from the top,
    band by band, layer by layer within a band."""
    rows: dict[Hashable, int] = {}
    lefts: dict[Hashable, float] = {}

    def place(items: Sequence[Hashable], width: Callable[[Hashable], float], first_row: int, step: int) -> int:
        """Wraps ``items`` into rows ``step`` apart from ``first_row``; gives the number of rows."""
        left, last = 0.0, -1
        for item, row in zip(items, wrap_rows([width(item) for item in items], room, gap)):
            if row != last:
                left, last = 0.0, row
            rows[item], lefts[item] = first_row + row * step, left
            left += width(item) + gap
        return last + 1

    def fits(items: Sequence[Hashable]) -> bool:
        return max(wrap_rows([widths[item] for item in items], room, gap), default=0) == 0

    first = start = 0
    while start < len(layers):
        end = start + 1
        while not fits(layers[start]) and end < len(layers) and not fits(layers[end]):
            end += 1
        run = layers[start:end]
        root = {item: item for item in run[0]}
        for above, layer in zip(run, run[1:]):
            fed = Counter(p for item in layer for p in set(predecessors.get(item, ())) if p in above)
            for item in layer:
                leader = next((p for p in predecessors.get(item, ()) if p in above), None)
                if leader in root and fed[leader] == 1:
                    root[item] = root[leader]
        cell: dict[Hashable, float] = {}
        for item, chain in root.items():
            cell[chain] = max(cell.get(chain, 0.0), widths[item])
        span = len(run)
        bands = place(run[0], cell.__getitem__, first, span)
        for level, layer in enumerate(run[1:], 1):
            for item in layer:
                if item in root:
                    rows[item], lefts[item] = rows[root[item]] + level, lefts[root[item]]
            bands += place([item for item in layer if item not in root], widths.__getitem__, first + bands * span + level, span)
        members = {item for layer in run for item in layer}
        if any(rows[p] >= rows[item] for item in members for p in predecessors.get(item, ()) if p in members):
            bands, span = 0, 1  # an edge would point up: the run's layers wrap one after another instead
            for layer in run:
                bands += place(layer, widths.__getitem__, first + bands, 1)
        first += bands * span
        start = end
    return rows, lefts


# Pixels of an output's width that the rows of a wrapped Graph tab leave free (``GRAPH_BAND_MARGIN`` of
# ``src/wrapping.ts``): the notebook and the extension wrap a graph to its output's width less this, each node as
# wide as ``graph_layers.wrap_width`` says, an edge's bend ``GRAPH_BEND`` pixels, ``GRAPH_GAP`` apart, into the
# same bands.
GRAPH_BAND_MARGIN = 40
GRAPH_BEND = 6
GRAPH_GAP = 18
