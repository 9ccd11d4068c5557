"""TileMapView: the bytes of a PopART session's tensors on each tile of one IPU, as the simulated tile
allocator placed them (the map ``POPART_TENSOR_TILE_MAP`` writes), hovering a tile listing its tensors."""
from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from .style import PICTURE_WIDTH, TEMPLATE, base_layout, text, text_array
from .view import View

# Tensors a tile's hover lists (the largest first); the rest are counted.
LISTED = 8


class TileMapView(View):
    """One bar per tile of IPU ``ipu``: the bytes of the model's tensors mapped there
    (``session.tile_uses(ipu)``), the tile's share of each tensor in its hover. Needs a PopART session
    whose device is prepared.

    >>> session.prepareDevice()
    >>> TileMapView(session)  # in a notebook: the live widget
    """

    live_kinds = frozenset({"attached"})

    def __init__(self, session: Any, ipu: int = 0, **options):
        if not hasattr(session, "tile_uses"):
            raise TypeError(f"TileMapView needs a popart InferenceSession or TrainingSession, got "
                            f"{type(session).__name__}")
        self.popart_session = session
        self.ipu = int(ipu)
        super().__init__(session, **options)

    def _compute(self) -> None:
        self.uses = self.popart_session.tile_uses(self.ipu)

    def build_figure(self) -> go.Figure:
        hovers = text_array(_hover(use) for use in self.uses)
        figure = go.Figure(go.Bar(x=[use.tile for use in self.uses], y=[use.bytes for use in self.uses],
                                  hovertext=hovers, hoverinfo="text", marker_line_width=0),
                           layout=dict(template=TEMPLATE))
        busiest = max((use.bytes for use in self.uses), default=0)
        used = sum(1 for use in self.uses if use.bytes)
        figure.update_layout(**base_layout(
            width=PICTURE_WIDTH, height=360, bargap=0,
            title=text(f"Tensors per tile, IPU {self.ipu}: {used} of {len(self.uses)} tiles used, "
                       f"at most {busiest:,} B on one"),
            xaxis=dict(title="tile"), yaxis=dict(title="bytes")))
        return figure

    def __repr__(self) -> str:
        uses = getattr(self, "uses", None)
        size = f"{sum(1 for use in uses if use.bytes)} of {len(uses)} tiles used" if uses else "not analysed"
        return f"TileMapView(IPU {self.ipu}: {size})"


def _hover(use) -> str:
    ranked = sorted(use.tensors.items(), key=lambda item: -item[1])
    lines = [f"tile {use.tile}: {use.bytes:,} B"] + [f"{text(name)}: {held:,} B" for name, held in ranked[:LISTED]]
    if len(ranked) > LISTED:
        lines.append(f"and {len(ranked) - LISTED} more tensors")
    return "<br>".join(lines)
