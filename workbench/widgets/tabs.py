"""The Workbench: every view of an Ir or a Session in tabs, sharing one selection."""
from __future__ import annotations

from typing import Any, Mapping, Optional, TypedDict

from workbench.export.first_picture import FIRST_PICTURE_OPS

from .call_tree_view import CallTreeView
from .graph_view import GraphView
from .live import DEFAULT_WINDOW, Scheduler
from .liveness_view import LivenessView
from .model_view import ModelView
from .replica_group_view import ReplicaGroupView
from .schedule_view import ScheduleView
from .selection import Selection
from .stepper_view import SessionStepperView
from .view import _ir_and_session, display_bundle, source_bundle
from .offline_plotly import offline_drawer
from .workbench_html import plotly_figure_html, workbench_html


STEPPER_PICTURE_WIDTH = 560  # the model picture beside the stepper's table
STEPPER_PICTURE_HEIGHT = 560  # its plot area at most: taller pictures scroll to the next op
# Each tab as wide as its title, the tabs wrapping to a second row where the output is too narrow for one:
# ipywidgets' own tabs share one row and cut their titles ("replica gr…") in a 630-px output.
TAB_STYLE = ("<style>.jupyter-widget-tab.ipu-wb-tabs > .lm-TabBar .lm-TabBar-content {flex-wrap: wrap;}"
             ".jupyter-widgets.jupyter-widget-tab.ipu-wb-tabs > .lm-TabBar .lm-TabBar-tab {flex: 0 0 auto;}</style>")


class ViewOptions(TypedDict):
    """What every tab's view takes from the Workbench."""

    selection: Selection
    live: bool
    window: float
    scheduler: Optional[Scheduler]


class LaterViewOptions(ViewOptions):
    """The options of a tab that computes its view when first looked at."""

    defer: bool


class Workbench:
    """Tabs of the model (grouped graph), call tree, graph, schedule, liveness and replica-group views of an
    Ir or a Session,
    plus, for a Session, a stepper (stepping with ``inputs``) whose current op the other tabs show.
    Every view shares ``selection``: a graph clicked in the call tree opens in the graph tab, an op
    clicked anywhere is marked everywhere.

    >>> wb = workbench.show(session, {x_stream: data})
    >>> wb  # in a notebook: the tabs; wb["schedule"] is the ScheduleView
    """

    def __init__(self, source: Any, inputs: Optional[Mapping[Any, Any]] = None, *,
                 selection: Optional[Selection] = None, live: bool = True, window: float = DEFAULT_WINDOW,
                 scheduler: Optional[Scheduler] = None):
        self.ir, self.session = _ir_and_session(source)
        self.selection = selection if selection is not None else Selection()
        options = ViewOptions(selection=self.selection, live=live, window=window, scheduler=scheduler)
        source = self.session if self.session is not None else self.ir
        later = LaterViewOptions(**options, defer=True)  # the tabs behind the first compute when first looked at
        self.views: dict[str, Any] = {
            "model": ModelView(source, **options),
            "call tree": CallTreeView(source, open_graphs=False, **later),
            "graph": GraphView(source, **later),
            "schedule": ScheduleView(source, **later),
            "liveness": LivenessView(source, **later),
            "replica groups": ReplicaGroupView(source, **later),
        }
        if self.session is not None:
            beside = ModelView(self.session, width=STEPPER_PICTURE_WIDTH, max_height=STEPPER_PICTURE_HEIGHT,
                               fits_output=False, **options)  # the next op's groups, opened in place
            self.views["stepper"] = SessionStepperView(self.session, inputs, views=[beside, self.views["schedule"]],
                                                       **options)
        self._widget = None
        self._pages: list = []
        self.selection.observe(self._graph_chosen, names="graph")

    @property
    def tabs(self) -> list[str]:
        return list(self.views)

    def __getitem__(self, tab: str):
        if tab not in self.views:
            raise KeyError(f"no tab {tab!r}; the tabs are: {', '.join(self.views)}")
        return self.views[tab]

    @property
    def widget(self):
        """An ipywidgets Tab with one view per tab (made on first use). A tab's view widget is made
        when the tab is first opened, so only the open tab's figure crosses to the browser."""
        if self._widget is None:
            import ipywidgets

            style = ipywidgets.HTML(TAB_STYLE, layout=ipywidgets.Layout(display="none"))
            self._pages = [ipywidgets.VBox([style]) for _ in self.views]
            self._widget = ipywidgets.Tab(children=self._pages, titles=self.tabs)
            self._widget.add_class("ipu-wb-tabs")
            self._widget.observe(lambda change: self._open_page(change["new"]), names="selected_index")
            self._open_page(self._widget.selected_index or 0)
        return self._widget

    def _open_page(self, index: Optional[int]) -> None:
        """Make the widget of tab ``index`` when first opened; pause the views of the other tabs."""
        if index is None:
            return
        shown = self._page_views(index)
        for number in range(len(self._pages)):
            if number != index and len(self._pages[number].children) > 1:
                for view in self._page_views(number):
                    if view not in shown:
                        view.pause(True)
        for view in shown:
            view.pause(False)
        style, *opened = self._pages[index].children
        if not opened:
            self._pages[index].children = [style, list(self.views.values())[index].widget]

    def _page_views(self, index: int) -> list:
        """The views whose figures tab ``index`` shows."""
        view = list(self.views.values())[index]
        return list(view.views) if isinstance(view, SessionStepperView) else [view]

    def _graph_chosen(self, change) -> None:
        """A graph picked while the call tree tab is open opens in the model tab."""
        if self._widget is not None and self._widget.selected_index == self.tabs.index("call tree"):
            self._widget.selected_index = self.tabs.index("model")

    def to_html(self, include_plotlyjs: Any = "offline") -> str:
        """Every view one under the other, as an HTML fragment that draws with no network (plotly.js inside
        it, gzipped, used only where the page has none); or with plotly's ``include_plotlyjs`` values."""
        if include_plotlyjs == "offline":
            return workbench_html(self, offline_drawer())
        return workbench_html(self, plotly_figure_html(include_plotlyjs))

    def _repr_mimebundle_(self, include=None, exclude=None) -> tuple[dict, dict]:
        return display_bundle(self, include, exclude)

    def static_bundle(self) -> tuple[dict, dict]:
        """The picture that stays when there is no widget: the extension's view of the Ir (or the
        Session, opened on its memory); for a program of ``FIRST_PICTURE_OPS`` ops or more, whose whole
        document would take a second to make and weigh megabytes in the notebook, the model tab's picture
        instead."""
        if sum(len(graph.ops) for graph in self.ir.graphs) >= FIRST_PICTURE_OPS:
            return self.views["model"].static_bundle()
        return source_bundle(self.session if self.session is not None else self.ir)

    def close(self) -> None:
        """Stop every view following the Ir and Session."""
        for view in self.views.values():
            view.close()

    def __repr__(self) -> str:
        what = repr(self.ir) if self.session is None else f"Session on {self.session.device.kind} of {self.ir!r}"
        return f"Workbench({what}: {', '.join(self.tabs)})"


def show(source: Any, inputs: Optional[Mapping[Any, Any]] = None, **options) -> Workbench:
    """The tabbed Workbench of an Ir or a Session (with ``inputs`` for its stepper); the last
    expression of a notebook cell, it shows there. ``options`` go to ``Workbench``."""
    return Workbench(source, inputs, **options)
