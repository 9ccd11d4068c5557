"""DiffView: two versions of a graph side by side, the ops a transform added, removed or changed marked, and
runs of ops folded as code diffs fold unchanged lines (``workbench.export.diff_folds``)."""
from __future__ import annotations

from typing import Any, Optional, Union

import plotly.graph_objects as go

from workbench.export.diff_folds import DiffFold, DiffFolding, Shown
from workbench.export.graph_diff import GraphDiff, find_graph, graph_diff
from workbench.ir import Graph

from .figures.diff_figure import diff_figure
from .style import PICTURE_WIDTH, count_of, fitted_width, text
from .view import PLOTLY_MIME, _ir_and_session, display_bundle

def exported(source: Any) -> tuple[dict, Optional[str]]:
    """An export (``to_json``) and the graph id a Graph source names; a Session (popxl's or PopART's)
    stands for its Ir."""
    from workbench.export import to_json

    if isinstance(source, dict):
        return source, None
    if isinstance(source, Graph):
        return to_json(source.ir, grouped=False), source.id
    try:
        ir, _ = _ir_and_session(source)
    except TypeError:
        raise TypeError("a diff compares popxl.Irs, Graphs, Sessions or workbench.export.to_json() exports, got "
                        f"{type(source).__name__}") from None
    return to_json(ir, grouped=False), None


def _graph_name(graph: Union[str, Graph, None], argument: str) -> Optional[str]:
    if graph is None or isinstance(graph, str):
        return graph
    if isinstance(graph, Graph):
        return graph.id
    raise TypeError(f"{argument} names a graph by its id or label (a str) or is a popxl.Graph, got {type(graph).__name__}")


class DiffView:
    """``before`` and ``after`` are Irs, Graphs, Sessions or ``workbench.export.to_json`` snapshots (take one
    before a transform that edits the Ir in place). ``graph`` and ``after_graph`` (Graphs, ids or labels) pick the
    graphs compared, by default the Graphs given or the main graphs.

    >>> before = workbench.export.to_json(ir)
    >>> ...  # a transform edits ir
    >>> view = DiffView(before, ir)
    >>> view.unfold(view.folds()[0])  # or click a fold's grey row; a click on its heading folds it again

    Runs of unchanged ops fold to one row each, with a little context kept around each change; where a
    transform changed more than fits one screen, runs of added and removed ops fold by name scope too
    (ops marked changed never fold). A fold opens one scope level at a time. Shown in a kernel it is a
    live figure, laid out again for a notebook output narrower than ``PICTURE_WIDTH``.
    """

    def __init__(self, before: Any, after: Any, graph: Union[str, Graph, None] = None,
                 after_graph: Union[str, Graph, None] = None):
        graph, after_graph = _graph_name(graph, "graph"), _graph_name(after_graph, "after_graph")
        old, old_id = exported(before)
        new, new_id = (old, old_id) if after is before else exported(after)
        self.before_graph = find_graph(old, graph or old_id)
        self.after_graph = find_graph(new, after_graph or new_id or graph)
        self.diff: GraphDiff = graph_diff(self.before_graph, self.after_graph)
        self.folding = DiffFolding(self.diff.rows)
        self.width = PICTURE_WIDTH
        self._figure: Optional[go.Figure] = None
        self._canvas = None
        self._widget = None

    @property
    def shown(self) -> list[Shown]:
        """The rows drawn: ops, folds of ops, and the headings of open folds."""
        return self.folding.shown()

    def folds(self) -> list[str]:
        """The keys of the folds drawn, top to bottom."""
        return [item.key for item in self.shown if isinstance(item, DiffFold)]

    def unfold(self, key: str) -> None:
        """Open fold ``key`` in place: into the folds of the next scope level down, or into its ops."""
        self.folding.unfold(key)
        self._redraw()

    def fold(self, key: str) -> None:
        """Close an opened fold again."""
        self.folding.fold(key)
        self._redraw()

    def unfold_all(self) -> None:
        self.folding.unfold_all()
        self._redraw()

    @property
    def figure(self) -> go.Figure:
        if self._figure is None:
            self._figure = diff_figure(self.diff, self.shown, self.width)
        return self._figure

    @property
    def widget(self):
        """The live figure (made on first use): a click on a fold opens it; laid out again when the page says
        how wide its output is."""
        if self._widget is None:
            import ipywidgets

            from .figure_canvas import FigureCanvas

            self._canvas = FigureCanvas(self.figure, on_click=self._click)
            self._canvas.observe(lambda change: self.fit(change["new"]), names="room")
            self._widget = ipywidgets.VBox([self._canvas])
        return self._widget

    def _click(self, key: Any) -> None:
        if key in self.folding.open:
            self.fold(key)
        elif key in self.folds():
            self.unfold(key)

    def _redraw(self) -> None:
        self._figure = None
        if self._canvas is not None:
            self._canvas.show(self.figure)

    def fit(self, room: int) -> None:
        """Lay the figure out for an output ``room`` pixels wide (PICTURE_WIDTH where that fits)."""
        width = fitted_width(PICTURE_WIDTH, room)
        if width != self.width:
            self.width = width
            self._redraw()

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
