"""FigureCanvas: a plotly figure as a light widget that the page's plotly.js draws.

Only the figure's JSON crosses the kernel's comm; plotly.js comes from JupyterLab's own plotly
renderer (or, where the page has none, from the kernel once per page). A new figure that differs from
the one shown in a few traces and layout keys (a marker moved by a step) crosses as just those, a
patch the page applies to its copy. Clicks on points come back as their ``customdata``, and the width the
page gives the figure as ``room`` (a view may lay its picture out again for it).
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
    room = traitlets.Int(0)  # the pixels of width the page gives the figure (0: not drawn yet), as it tells

    def __init__(self, figure: go.Figure, on_click: Optional[Callable[[Any], None]] = None):
        super().__init__(figure=figure_json(figure))
        self._on_click = on_click
        self.on_msg(self._message)

    def show(self, figure: go.Figure) -> None:
        """Draw ``figure`` in place of the current one: as a patch when it has as many traces and the patch
        is less than half the figure, else whole."""
        new = figure_json(figure)
        patch = figure_patch(self.figure, new)
        if patch is None or len(json.dumps(patch)) * 2 > len(json.dumps(new)):
            self.figure = new
            return
        with self._lock_property(figure=new):  # the page patches its own copy of the state
            self.figure = new
        self.send({"kind": "patch", **patch})

    def _message(self, widget, content: dict, buffers) -> None:
        kind = content.get("kind") if isinstance(content, dict) else None
        if kind == "click" and self._on_click is not None:
            for key in content.get("keys", []):
                self._on_click(key)
        elif kind == "room" and isinstance(content.get("width"), int):
            self.room = content["width"]
        elif kind == "need plotly.js":
            self.send({"kind": "plotly.js", "source": get_plotlyjs()})


def figure_json(figure: go.Figure) -> dict:
    """The figure as plain JSON data (NumPy arrays become lists)."""
    return json.loads(figure.to_json())


def figure_patch(old: dict, new: dict) -> Optional[dict]:
    """What turns figure ``old`` into ``new``: the changed traces by index and the changed top-level layout
    keys (None for one removed); None when the number of traces differs."""
    old_data, new_data = old.get("data", []), new.get("data", [])
    if len(old_data) != len(new_data):
        return None
    traces = {str(index): trace for index, (before, trace) in enumerate(zip(old_data, new_data)) if before != trace}
    old_layout, new_layout = old.get("layout", {}), new.get("layout", {})
    layout = {key: new_layout.get(key) for key in set(old_layout) | set(new_layout)
              if old_layout.get(key) != new_layout.get(key)}
    return {"traces": traces, "layout": layout}
