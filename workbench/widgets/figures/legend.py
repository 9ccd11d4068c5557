"""How many rows a figure's horizontal legend takes, so that a figure can leave room for it: plotly wraps the
entries that do not fit a row, then pushes the plot into a margin too small for them or draws them over the
title."""
from __future__ import annotations

from typing import Sequence

LEGEND_ROW = 20  # pixels per row of legend entries (12-px text)
LEGEND_ENTRY = 46  # pixels of an entry beside its text: the swatch, and the gap before the next entry
LEGEND_CHARACTER = 6.5  # pixels per character of an entry's text, a little over 12-px Helvetica's average


def legend_rows(names: Sequence[str], width: float) -> int:
    """Rows the horizontal legend of entries ``names`` takes in ``width`` pixels."""
    rows, used = 1, 0.0
    for name in names:
        entry = LEGEND_ENTRY + LEGEND_CHARACTER * len(name)
        if used and used + entry > width:
            rows, used = rows + 1, 0.0
        used += entry
    return rows
