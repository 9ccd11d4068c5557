"""The base of every view: analysis data in, a plotly figure out, shown live or statically.

A view computes its data (``_compute``) from ``workbench.analysis`` when made and once per debounce
window of Ir or Session events (``live.LiveBinding``), then draws it (``build_figure``). ``widget``
is an ipywidgets box around a ``FigureCanvas`` (the figure's JSON, drawn by the page's plotly.js)
that follows each refresh; ``figure`` is the
static ``go.Figure``. Displayed in a kernel, a view offers its widget plus static HTML for frontends
without a widget manager; elsewhere it offers the static plotly figure and HTML only.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

import plotly.graph_objects as go

from workbench.ir import Ir

from .live import DEFAULT_WINDOW, LiveBinding, Scheduler
from .selection import Selection
from .style import PICTURE_WIDTH, TEMPLATE, base_layout, text

PLOTLY_MIME = "application/vnd.plotly.v1+json"


class View:
    """Subclasses set ``live_kinds`` (event kinds that refresh them, None for all) and implement
    ``_compute``, ``build_figure`` and, for clickable items, ``_click(key)``."""

    live_kinds: Optional[frozenset] = None
    has_details = False  # whether the widget shows ``details_html()`` below the figure

    def __init__(self, source: Any, *, selection: Optional[Selection] = None, live: bool = True,
                 window: float = DEFAULT_WINDOW, scheduler: Optional[Scheduler] = None, defer: bool = False):
        self.ir, self.session = _ir_and_session(source)
        self.selection = selection if selection is not None else Selection()
        if self.selection.graph is None:
            self.selection.graph = self.ir.main_graph
        self.version = 0
        self.error: Optional[Exception] = None
        self._figure: Optional[go.Figure] = None
        self._canvas = None
        self._widget = None
        self._binding = (LiveBinding(self.refresh, self.ir, self.session, window, scheduler, self.live_kinds)
                         if live else None)
        self._stale = defer  # ``defer``: computed when first looked at (a tab not opened yet costs nothing)
        self._paused = False  # out of sight: redraws wait (``pause``)
        self._missed = False
        if not defer:
            self.refresh()

    def __getattr__(self, name: str):
        """A deferred view computes its data the first time any of it is read."""
        if not name.startswith("_") and self.__dict__.get("_stale"):
            self.refresh()
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ----- data -----
    def refresh(self, kinds: Iterable[str] = ()) -> None:
        """Recompute the data from the Ir (and Session) and redraw the widget if one is shown. An Ir
        that cannot be analysed yet (half built, or invalid) leaves ``error`` set and draws it."""
        self._stale = False
        try:
            self._compute()
            self.error = None
        except Exception as error:  # shown in the figure: a live view must survive a bad state
            self.error = error
        self.version += 1
        self.redraw()

    def redraw(self) -> None:
        """Rebuild the figure from the current data (after a selection or control change); a paused view
        draws when it is resumed."""
        self._figure = None
        if self._canvas is not None:
            if self._paused:
                self._missed = True
                return
            self._canvas.show(self.figure)
            self._details.value = self.details_html()

    def pause(self, paused: bool = True) -> None:
        """While paused (out of sight: a tab behind another), the widget is not redrawn; resumed, it shows
        what it missed. Nothing crosses the comm for a view no one sees."""
        self._paused = paused
        if not paused and self._missed:
            self._missed = False
            self.redraw()

    @property
    def figure(self) -> go.Figure:
        if self._stale:
            self.refresh()
        if self._figure is None:
            self._figure = error_figure(self.error) if self.error is not None else self.build_figure()
        return self._figure

    def _compute(self) -> None:
        raise NotImplementedError

    def build_figure(self) -> go.Figure:
        raise NotImplementedError

    def _click(self, key: Any) -> None:
        """Called with the ``customdata`` of a clicked point."""

    # ----- widget -----
    @property
    def widget(self):
        """The ipywidgets box (made on first use): controls above the live figure."""
        if self._stale:
            self.refresh()
        if self._widget is None:
            import ipywidgets

            from .figure_canvas import FigureCanvas

            self._canvas = FigureCanvas(self.figure, on_click=self._click)
            self._canvas.observe(lambda change: self.fit(change["new"]), names="room")
            self._details = ipywidgets.HTML(self.details_html())
            below = [self._details] if self.has_details else []
            self._widget = ipywidgets.VBox([*self._controls(), self._canvas, *below])
        return self._widget

    def _controls(self) -> list:
        return []

    def fit(self, room: int) -> None:
        """The page gives the figure ``room`` pixels of width. Views whose pictures are laid out to a width
        redraw to fit it; the others' figures take the room as it is."""

    def details_html(self) -> str:
        """What the view shows below its figure, as HTML (in the widget, static HTML and the report)."""
        return ""

    def close(self) -> None:
        """Stop following the Ir and Session."""
        if self._binding is not None:
            self._binding.close()
            self._binding = None

    # ----- display -----
    def to_html(self, include_plotlyjs: Any = "offline") -> str:
        """The figure and details as an HTML fragment. By default it carries plotly.js (gzipped, used only
        where the page has none), so it draws with no network; plotly's values (True, False, "cdn") as
        ``plotly.io.to_html`` takes them."""
        if include_plotlyjs == "offline":
            from .offline_plotly import offline_drawer

            return offline_drawer()(self.figure, "workbench-view") + self.details_html()
        return self.figure.to_html(full_html=False, include_plotlyjs=include_plotlyjs) + self.details_html()

    def _repr_mimebundle_(self, include=None, exclude=None) -> tuple[dict, dict]:
        return display_bundle(self, include, exclude)

    def static_bundle(self) -> tuple[dict, dict]:
        """The picture that stays when there is no widget: the figure as plotly JSON, as wide as it was
        laid out for (a front end would otherwise draw it at its own default width, narrower than its
        labels were fitted to)."""
        from .figure_canvas import figure_json

        picture = figure_json(self.figure)
        picture.setdefault("layout", {}).setdefault("width", PICTURE_WIDTH)
        return {PLOTLY_MIME: picture}, {}


def display_bundle(shown: Any, include=None, exclude=None) -> tuple[dict, dict]:
    """What a view or a group of views displays as (data and metadata). With a kernel: the live
    widget, and a static picture (``shown.static_bundle()``) that a front end shows where the widget
    cannot be drawn, such as a saved notebook opened again. Without one: static HTML, plus the
    static picture."""
    data, metadata = shown.static_bundle()
    if _kernel_running():
        data.update(shown.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
    else:
        data["text/html"] = shown.to_html()
    data["text/plain"] = repr(shown)
    return data, metadata


def error_figure(error: Exception) -> go.Figure:
    figure = go.Figure(layout=dict(template=TEMPLATE))
    figure.add_annotation(text=f"cannot draw this view yet:<br>{type(error).__name__}: {text(error)}", showarrow=False,
                          x=0.5, y=0.5, xref="paper", yref="paper", font=dict(color="#C00000"))
    figure.update_layout(**base_layout(xaxis=dict(visible=False), yaxis=dict(visible=False), height=200))
    return figure


def source_bundle(source: Any) -> tuple[dict, dict]:
    """The extension's bundle of an Ir or a Session, without its plain text."""
    from workbench.export.mime import ir_bundle, session_bundle

    data, metadata = ir_bundle(source) if isinstance(source, Ir) else session_bundle(source)
    data.pop("text/plain")
    return data, metadata


def _ir_and_session(source: Any):
    """The Ir and Session (or None) that ``source`` shows. Objects of other front ends, a PopART
    session for one, name what they stand for with a ``_workbench_source()`` method."""
    if hasattr(source, "_workbench_source"):
        source = source._workbench_source()
    if isinstance(source, Ir):
        return source, None
    ir = getattr(source, "ir", None)
    if isinstance(ir, Ir) and hasattr(source, "events"):
        return ir, source
    raise TypeError(f"a view needs a popxl.Ir or a popxl.Session, got {type(source).__name__}")


def _kernel_running() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None
