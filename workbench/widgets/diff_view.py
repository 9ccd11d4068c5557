"""DiffView: two versions of a graph side by side, the ops a transform added, removed or changed marked."""
from __future__ import annotations

from typing import Any, Optional, Union

import plotly.graph_objects as go

from workbench.export.graph_diff import GraphDiff, find_graph, graph_diff
from workbench.ir import Graph, Ir

from .style import PICTURE_WIDTH, TEMPLATE, base_layout, count_of, fitted_width, text, text_array
from .view import PLOTLY_MIME, display_bundle

STATUS_LOOK = {  # status -> (legend name, marker colour)
    "same": ("unchanged", "#BFBFBF"),
    "changed": ("changed (hover for what)", "#ED7D31"),
    "removed": ("removed", "#C00000"),
    "added": ("added", "#70AD47"),
}
ROW_HEIGHT = 20
MAX_ROWS = 400  # rows drawn; the rest are counted in the title
SIDE_MARGIN = 20  # pixels left and right of the plot
X_RANGE = (-0.05, 2.0)  # before's markers at x=0, after's at x=1, each side's labels to the right of its markers
LABEL_CHAR_WIDTH = 6.7  # pixels per character of an 11 px monospace label
LABEL_OFFSET = 9  # pixels from a marker's centre to its label's first character
TITLE_CHAR_WIDTH = 8  # pixels per character of the title, bold names and plain counts together


def exported(source: Union[Ir, Graph, dict]) -> tuple[dict, Optional[str]]:
    """An export (``to_json``) and the graph id a Graph source names."""
    from workbench.export import to_json

    if isinstance(source, dict):
        return source, None
    if isinstance(source, Graph):
        return to_json(source.ir, grouped=False), source.id
    if isinstance(source, Ir):
        return to_json(source, grouped=False), None
    raise TypeError(f"a diff compares popxl.Irs, Graphs or their to_json() exports, got {type(source).__name__}")


class DiffView:
    """``before`` and ``after`` are Irs, Graphs or ``workbench.export.to_json`` snapshots (take one before a
    transform that edits the Ir in place). ``graph`` and ``after_graph`` (ids or labels) pick the graphs
    compared, by default the Graphs given or the main graphs.

    >>> before = workbench.export.to_json(ir)
    >>> ...  # a transform edits ir
    >>> DiffView(before, ir)

    Shown in a kernel it is a live figure that lays itself out again for a notebook output narrower than
    ``PICTURE_WIDTH`` (labels shortened to their column, the full name on hover).
    """

    def __init__(self, before: Union[Ir, Graph, dict], after: Union[Ir, Graph, dict],
                 graph: Optional[str] = None, after_graph: Optional[str] = None):
        old, old_id = exported(before)
        new, new_id = exported(after)
        self.before_graph = find_graph(old, graph or old_id)
        self.after_graph = find_graph(new, after_graph or new_id or graph)
        self.diff: GraphDiff = graph_diff(self.before_graph, self.after_graph)
        self.width = PICTURE_WIDTH
        self._figure: Optional[go.Figure] = None
        self._canvas = None
        self._widget = None

    @property
    def figure(self) -> go.Figure:
        if self._figure is None:
            self._figure = diff_figure(self.diff, self.width)
        return self._figure

    @property
    def widget(self):
        """The live figure (made on first use), laid out again when the page says how wide its output is."""
        if self._widget is None:
            import ipywidgets

            from .figure_canvas import FigureCanvas

            self._canvas = FigureCanvas(self.figure)
            self._canvas.observe(lambda change: self.fit(change["new"]), names="room")
            self._widget = ipywidgets.VBox([self._canvas])
        return self._widget

    def fit(self, room: int) -> None:
        """Lay the figure out for an output ``room`` pixels wide (PICTURE_WIDTH where that fits)."""
        width = fitted_width(PICTURE_WIDTH, room)
        if width != self.width:
            self.width = width
            self._figure = None
            if self._canvas is not None:
                self._canvas.show(self.figure)

    def summary(self) -> str:
        changes = self.diff.type_changes()
        by_type = ", ".join(f"{'+' if n > 0 else '−'}{abs(n)} {t}" for t, n in changes.items())
        return (f"{self.diff.before_label} → {self.diff.after_label}: {count_of(self.diff.count('added'), 'op')} "
                f"added, {self.diff.count('removed')} removed, {self.diff.count('changed')} changed"
                + (f" ({by_type})" if by_type else ""))

    def to_html(self, include_plotlyjs: Any = "offline") -> str:
        from .offline_plotly import offline_drawer

        figure = (offline_drawer()(self.figure, "workbench-diff") if include_plotlyjs == "offline"
                  else self.figure.to_html(full_html=False, include_plotlyjs=include_plotlyjs))
        return figure + f"<p>{text(self.summary())}</p>"

    def static_bundle(self) -> tuple[dict, dict]:
        """The figure as plotly JSON, which JupyterLab draws where the widget cannot be."""
        from .figure_canvas import figure_json

        return {PLOTLY_MIME: figure_json(self.figure)}, {}

    def _repr_mimebundle_(self, include=None, exclude=None) -> tuple[dict, dict]:
        """In a kernel the live widget and the static figure; elsewhere the static figure and HTML."""
        return display_bundle(self, include, exclude)

    def __repr__(self) -> str:
        return f"DiffView({self.summary()})"


def label_room(width: int) -> int:
    """Characters of a label that fit in one side's column of a figure ``width`` pixels wide."""
    column = (width - 2 * SIDE_MARGIN) / (X_RANGE[1] - X_RANGE[0])  # pixels between the two sides' markers
    return max(8, int((column - 2 * LABEL_OFFSET) // LABEL_CHAR_WIDTH))


def shortened(label: str, room: int) -> str:
    return label if len(label) <= room else label[:room - 1] + "…"


def diff_figure(diff: GraphDiff, width: int = PICTURE_WIDTH) -> go.Figure:
    """Before on the left, after on the right, one row per aligned op (folded runs of unchanged ops as
    one row); markers and labels coloured by status, labels shortened to fit their side of a figure
    ``width`` pixels wide."""
    rows = diff.rows[:MAX_ROWS]
    room = label_room(width)
    figure = go.Figure(layout=dict(template=TEMPLATE))
    for status, (name, color) in STATUS_LOOK.items():
        for side, x in (("before", 0), ("after", 1)):
            points = [(index, getattr(row, side), row) for index, row in enumerate(rows)
                      if row.status == status and getattr(row, side) is not None]
            if not points:
                continue
            figure.add_trace(go.Scatter(
                x=[x] * len(points), y=[-index for index, _, _ in points], mode="markers+text", name=name,
                legendgroup=status, showlegend=side == ("before" if status != "added" else "after"),
                marker=dict(symbol="square", size=10, color=color),
                text=text_array(text(shortened(f"{op['type']}  {op['name']}", room)) for _, op, _ in points),
                textposition="middle right", textfont=dict(size=11, family="monospace",
                                                           color="#262626" if status != "same" else "#7F7F7F"),
                customdata=text_array(op["id"] for _, op, _ in points),
                hovertext=text_array(_hover(op, row) for _, op, row in points), hoverinfo="text",
                meta=dict(status=status, side=side)))
    folded = [(index, row) for index, row in enumerate(rows) if row.status == "folded"]
    for index, row in folded:
        figure.add_annotation(x=0.5, y=-index, text=f"… {count_of(row.count, 'unchanged op')} …", showarrow=False,
                              font=dict(size=10, color="#7F7F7F"))
    more = len(diff.rows) - len(rows)
    sides = f"{diff.before_label} (left) → {diff.after_label} (right): "
    counts = f"{diff.count('added')} added, {diff.count('removed')} removed, {diff.count('changed')} changed"
    wraps = len(sides + counts) * TITLE_CHAR_WIDTH > width - 2 * SIDE_MARGIN  # the counts on a line of their own
    title = (f"<b>{text(diff.before_label)}</b> (left) → <b>{text(diff.after_label)}</b> (right): "
             + ("<br>" if wraps else "") + counts
             + (f"<br><sup>the first {MAX_ROWS} rows of {len(diff.rows)}</sup>" if more > 0 else ""))
    top = 90 + (20 if wraps else 0)
    figure.update_layout(**base_layout(
        title=dict(text=title, x=0.01), width=width, height=max(200, ROW_HEIGHT * len(rows) + top + 50),
        xaxis=dict(visible=False, range=list(X_RANGE), fixedrange=True),
        yaxis=dict(visible=False, range=[-len(rows) + 0.5, 0.8]),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0.0, xanchor="left"),
        margin=dict(l=SIDE_MARGIN, r=SIDE_MARGIN, t=top, b=20), dragmode="pan"))
    return figure


def _hover(op: dict, row) -> str:
    lines = [f"<b>{text(op['type'])}</b> {text(op['name'])}", f"IPU {op['ipu']}"]
    lines += [text(change) for change in row.changes]
    return "<br>".join(lines)
