"""DiffView: two versions of a graph side by side, the ops a transform added, removed or changed marked."""
from __future__ import annotations

from typing import Any, Optional, Union

import plotly.graph_objects as go

from workbench.export.graph_diff import GraphDiff, find_graph, graph_diff
from workbench.ir import Graph, Ir

from .style import PICTURE_WIDTH, TEMPLATE, base_layout, count_of, text, text_array
from .view import PLOTLY_MIME

STATUS_LOOK = {  # status -> (legend name, marker colour)
    "same": ("unchanged", "#BFBFBF"),
    "changed": ("changed (hover for what)", "#ED7D31"),
    "removed": ("removed", "#C00000"),
    "added": ("added", "#70AD47"),
}
ROW_HEIGHT = 20
MAX_ROWS = 400  # rows drawn; the rest are counted in the title


def exported(source: Union[Ir, Graph, dict]) -> tuple[dict, Optional[str]]:
    """An export (``to_json``) and the graph id a Graph source names."""
    from workbench.export import to_json

    if isinstance(source, dict):
        return source, None
    if isinstance(source, Graph):
        return to_json(source.ir), source.id
    if isinstance(source, Ir):
        return to_json(source), None
    raise TypeError(f"a diff compares popxl.Irs, Graphs or their to_json() exports, got {type(source).__name__}")


class DiffView:
    """``before`` and ``after`` are Irs, Graphs or ``workbench.export.to_json`` snapshots (take one before a
    transform that edits the Ir in place). ``graph`` and ``after_graph`` (ids or labels) pick the graphs
    compared, by default the Graphs given or the main graphs.

    >>> before = workbench.export.to_json(ir)
    >>> ...  # a transform edits ir
    >>> DiffView(before, ir)
    """

    def __init__(self, before: Union[Ir, Graph, dict], after: Union[Ir, Graph, dict],
                 graph: Optional[str] = None, after_graph: Optional[str] = None):
        old, old_id = exported(before)
        new, new_id = exported(after)
        self.before_graph = find_graph(old, graph or old_id)
        self.after_graph = find_graph(new, after_graph or new_id or graph)
        self.diff: GraphDiff = graph_diff(self.before_graph, self.after_graph)
        self._figure: Optional[go.Figure] = None

    @property
    def figure(self) -> go.Figure:
        if self._figure is None:
            self._figure = diff_figure(self.diff)
        return self._figure

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

    def _repr_mimebundle_(self, include=None, exclude=None) -> tuple[dict, dict]:
        """The figure as plotly JSON (which JupyterLab draws); outside a kernel also as HTML."""
        from .figure_canvas import figure_json
        from .view import _kernel_running

        data = {PLOTLY_MIME: figure_json(self.figure), "text/plain": repr(self)}
        if not _kernel_running():
            data["text/html"] = self.to_html()
        return data, {}

    def __repr__(self) -> str:
        return f"DiffView({self.summary()})"


def diff_figure(diff: GraphDiff) -> go.Figure:
    """Before on the left, after on the right, one row per aligned op (folded runs of unchanged ops as
    one row); markers and labels coloured by status."""
    rows = diff.rows[:MAX_ROWS]
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
                text=text_array(f"{text(op['type'])}  {text(op['name'])}" for _, op, _ in points),
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
    title = (f"<b>{text(diff.before_label)}</b> (left) → <b>{text(diff.after_label)}</b> (right): "
             f"{diff.count('added')} added, {diff.count('removed')} removed, {diff.count('changed')} changed"
             + (f"<br><sup>the first {MAX_ROWS} rows of {len(diff.rows)}</sup>" if more > 0 else ""))
    figure.update_layout(**base_layout(
        title=dict(text=title, x=0.01), width=PICTURE_WIDTH, height=max(200, ROW_HEIGHT * len(rows) + 140),
        xaxis=dict(visible=False, range=[-0.05, 2.0], fixedrange=True),
        yaxis=dict(visible=False, range=[-len(rows) + 0.5, 0.8]),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0.0, xanchor="left"),
        margin=dict(l=20, r=20, t=90, b=20), dragmode="pan"))
    return figure


def _hover(op: dict, row) -> str:
    lines = [f"<b>{text(op['type'])}</b> {text(op['name'])}", f"IPU {op['ipu']}"]
    lines += [text(change) for change in row.changes]
    return "<br>".join(lines)
