"""The one rule by which a picture's layers too wide for its output wrap into rows, as lines of text wrap. The
grouped pictures (``compose``), the notebook's Graph tab (``widgets/figures/graph_figure``) and the
extension's Graph tab (``src/wrapping.ts``, the same steps; a test compares the two) all wrap by it.

``wrap_rows`` wraps one layer. ``band_rows`` wraps a layered picture: a run of consecutive layers that are
all too wide wraps as one, in bands one under another, each band holding a row of every layer of the run, so
that the chains of a run (for each of 24 weights, an all-reduce and the update it feeds) wrap together and
their edges stay short, instead of the updates' rows wrapping apart from their all-reduces' rows.
"""
from __future__ import annotations

from collections import Counter
from typing import Hashable, Mapping, Sequence


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
              predecessors: Mapping[Hashable, Sequence[Hashable]], room: float, gap: float) -> dict[Hashable, int]:
    """The row of every item of ``layers`` (each a layer's items in order; ``widths`` of each, and the items
    that feed each, ``predecessors``) once the layers too wide for ``room`` are wrapped. A layer that fits is
    one row. In a run of layers too wide, the first wraps by ``wrap_rows``; in each layer after it, an item fed
    by an item of the layer above that feeds no other item of its layer goes in that item's band, and the
    others wrap by ``wrap_rows`` from the first band. Rows are numbered from the top, band by band, layer by
    layer within a band."""
    rows: dict[Hashable, int] = {}

    def wrapped(items: Sequence[Hashable]) -> list[int]:
        return wrap_rows([widths[item] for item in items], room, gap)

    def fits(items: Sequence[Hashable]) -> bool:
        return max(wrapped(items), default=0) == 0

    first = start = 0
    while start < len(layers):
        end = start + 1
        while not fits(layers[start]) and end < len(layers) and not fits(layers[end]):
            end += 1
        band = dict(zip(layers[start], wrapped(layers[start])))
        for level in range(start + 1, end):
            above = set(layers[level - 1])
            leaders = {item: next((p for p in predecessors.get(item, ()) if p in above), None) for item in layers[level]}
            fed = Counter(p for item in layers[level] for p in set(predecessors.get(item, ())) if p in above)
            rest = []
            for item in layers[level]:
                leader = leaders[item]
                if leader is not None and fed[leader] == 1:
                    band[item] = band[leader]
                else:
                    rest.append(item)
            band.update(zip(rest, wrapped(rest)))
        span = end - start
        for level in range(start, end):
            for item in layers[level]:
                rows[item] = first + band[item] * span + level - start
        first += (max(band.values(), default=0) + 1) * span
        start = end
    return rows
