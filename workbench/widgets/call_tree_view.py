"""CallTreeView: which graph calls which, how and how often; click a graph to open it."""
from __future__ import annotations

from typing import Any

from workbench.analysis.call_tree import call_tree

from .figures import call_tree_figure
from .style import count_of
from .view import View


class CallTreeView(View):
    """The call tree of an Ir (``analysis.call_tree``): graphs with their op counts and runs per
    session run, call sites as edges labelled call, repeat ×N or branch.

    Clicking a graph selects it (``selection.graph``); a GraphView sharing the selection follows.
    Without one, the first click opens a GraphView under the tree (``open_graphs=True``).

    >>> view = CallTreeView(ir)
    >>> view  # in a notebook: the live widget
    """

    live_kinds = frozenset({"op_added", "op_changed", "graph_created", "graph_built", "graph_discarded"})

    def __init__(self, source: Any, *, open_graphs: bool = True, **options):
        self.open_graphs = open_graphs
        self.graph_view = None
        super().__init__(source, **options)
        self.selection.observe(self._graph_selected, names="graph")

    def _compute(self) -> None:
        self.tree = call_tree(self.ir)

    def build_figure(self):
        return call_tree_figure(self.tree, self.selection.graph)

    def _click(self, key: Any) -> None:
        graph = self.graph_by_id(key)
        if graph is not None:
            self.open(graph)

    def graph_by_id(self, graph_id: str):
        return next((graph for graph in self.ir.graphs if graph.id == graph_id), None)

    def open(self, graph) -> None:
        """Select ``graph``; with ``open_graphs`` and a shown widget, show it in a GraphView below."""
        self.selection.graph = graph
        if self.open_graphs and self._widget is not None and self.graph_view is None:
            from .graph_view import GraphView

            self.graph_view = GraphView(self.session or self.ir, selection=self.selection,
                                        live=self._binding is not None)
            self._widget.children = (*self._widget.children, self.graph_view.widget)

    def _graph_selected(self, change) -> None:
        self.redraw()

    def __repr__(self) -> str:
        tree = getattr(self, "tree", None)
        size = f"{count_of(len(tree.nodes), 'graph')}, {count_of(len(tree.edges), 'call site')}" if tree else "not analysed"
        return f"CallTreeView({self.ir!r}: {size})"
