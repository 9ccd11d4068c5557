"""One Workbench as an HTML fragment: its views one under the other, each figure drawn as the caller
says (plotly's own HTML by default). ``Workbench.to_html`` and the standalone report (``html_report``)
both write it.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Optional

from workbench.analysis.call_tree import call_tree

from .graph_view import GraphView
from .offline_plotly import PLOTLY_CONFIG
from .stepper_view import SessionStepperView
from .style import text



def plotly_figure_html(include_plotlyjs: Any = "cdn") -> Callable[[Any, str], str]:
    """Draws figures as plotly's own HTML; ``include_plotlyjs`` (plotly's values: True, False,
    'cdn') applies to the first figure."""
    first = [include_plotlyjs]

    def draw(figure, div_id: str) -> str:
        html = figure.to_html(full_html=False, include_plotlyjs=first[0], div_id=div_id, config=PLOTLY_CONFIG)
        first[0] = False
        return html
    return draw


def workbench_html(workbench: Any, draw: Optional[Callable[[Any, str], str]] = None,
                   ids: Optional[Iterable[str]] = None) -> str:
    """The views of ``workbench`` (a ``Workbench``), one under the other (the stepper only once it has stopped), as
    an HTML fragment. ``draw`` makes a figure's HTML from the figure and its div's id (by default
    plotly's, with plotly.js from its CDN); ``ids`` names the figure divs."""
    draw = draw or plotly_figure_html()
    ids = iter(ids) if ids is not None else (f"workbench-{n}" for n in itertools.count())
    parts = []
    for tab, view in workbench.views.items():
        heading = tab.capitalize()
        if isinstance(view, SessionStepperView):
            if view.stop is not None:
                parts.append(f"<h3>{text(heading)}</h3>{view.to_html()}")
            continue
        for title, shown in _pages(workbench, heading, view):
            parts.append(f"<h3>{text(title)}</h3>{draw(shown.figure, next(ids))}{shown.details_html()}")
    return "\n".join(parts)


def _pages(workbench: Any, heading: str, view: Any) -> list:
    """A view's figures in the report: the graph tab draws every graph of the call tree, since a
    static page cannot expand call sites; the other tabs draw their one figure."""
    if not isinstance(view, GraphView):
        return [(heading, view)]
    source = workbench.session if workbench.session is not None else workbench.ir
    graphs = [node.graph for node in call_tree(workbench.ir).nodes]
    return [(f"Graph {graph.label}", GraphView(source, graph=graph, live=False)) for graph in graphs]
