"""FigureCanvas: a plotly figure as a light widget that the page's plotly.js draws.

Only the figure's JSON crosses the kernel's comm; plotly.js comes from JupyterLab's own plotly
renderer (or, where the page has none, from the kernel once per page). Clicks on points come back
as their ``customdata``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Optional

import anywidget
import plotly.graph_objects as go
import traitlets
from plotly.offline import get_plotlyjs


class FigureCanvas(anywidget.AnyWidget):
    """Shows ``figure``; ``on_click`` is called with the ``customdata`` of each clicked point."""

    _esm = Path(__file__).with_name("figure_canvas.js")
    figure = traitlets.Dict().tag(sync=True)

    def __init__(self, figure: go.Figure, on_click: Optional[Callable[[Any], None]] = None):
        super().__init__(figure=figure_json(figure))
        self._on_click = on_click
        self.on_msg(self._message)

    def show(self, figure: go.Figure) -> None:
        """Draw ``figure`` in place of the current one."""
        self.figure = figure_json(figure)

    def _message(self, widget, content: dict, buffers) -> None:
        kind = content.get("kind") if isinstance(content, dict) else None
        if kind == "click" and self._on_click is not None:
            for key in content.get("keys", []):
                self._on_click(key)
        elif kind == "need plotly.js":
            self.send({"kind": "plotly.js", "source": get_plotlyjs()})


def figure_json(figure: go.Figure) -> dict:
    """The figure as plain JSON data (NumPy arrays become lists)."""
    return json.loads(figure.to_json())
