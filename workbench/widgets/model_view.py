"""ModelView: a graph grouped by IPU, name scope and runs of ops, one group at a time, as the JupyterLab
extension's Model tab draws it (both draw the pictures of ``workbench.export.group_layout``)."""
from __future__ import annotations

from typing import Any, Optional

from workbench.export.group_layout import GroupPictures
from workbench.ir import Graph

from .figures.model_figure import model_figure
from .selection import Selection
from .style import PICTURE_WIDTH, count_of
from .view import View


TITLE_CHAR_WIDTH = 9  # pixels per character of a figure title


class ModelView(View):
    """The groups of ``selection.graph`` (the main graph unless ``graph`` is given). Clicking a group opens
    it, clicking a call op opens the graph it calls, clicking an op selects it; ``open(group_id)`` and
    ``up()`` move by hand, and the breadcrumb above the picture goes back to any enclosing group. An op
    selected elsewhere (a stepped run's next op) opens the group holding it. ``width`` is the figure's.

    >>> view = ModelView(ir)
    >>> view.open(view.picture["nodes"][0]["key"])
    """

    live_kinds = frozenset({"op_added", "op_changed", "graph_created", "graph_built", "graph_discarded"})

    def __init__(self, source: Any, graph: Optional[Graph] = None, *, selection: Optional[Selection] = None,
                 width: int = PICTURE_WIDTH, **options):
        self.width = width
        selection = selection if selection is not None else Selection()
        if graph is not None:
            selection.graph = graph
        self.shown = ""
        self._picture_graph: Optional[Graph] = None
        super().__init__(source, selection=selection, **options)
        self.selection.observe(self._graph_selected, names="graph")
        self.selection.observe(self._op_selected, names="op")

    @property
    def graph(self) -> Graph:
        graph = self.selection.graph
        return graph if graph is not None and graph.ir is self.ir else self.ir.main_graph

    def _compute(self) -> None:
        self.groups = GroupPictures(self.graph)
        if self._picture_graph is not self.graph or self.shown not in self.groups.groups:
            self.shown = self.groups.root.id
        self._picture_graph = self.graph

    @property
    def picture(self) -> dict:
        """The picture of the group shown (``workbench.export.group_layout``)."""
        return self.groups.picture(self.shown)

    def build_figure(self):
        selected = self.selection.op.id if self.selection.op is not None else ""
        crumbs = [f"{p['label']} ({count_of(p['ops'], 'op')})" for p in self.path()]
        title = " › ".join(crumbs)
        while len(crumbs) > 1 and len(title) * TITLE_CHAR_WIDTH > self.width - 40:  # the innermost that fit
            crumbs = crumbs[1:]
            title = "… › " + " › ".join(crumbs)
        return model_figure(self.picture, title, selected, self.width)

    def path(self) -> list[dict]:
        """The pictures from the graph's top group down to the one shown."""
        chain, at = [], self.shown
        while at is not None:
            picture = self.groups.picture(at)
            chain.append(picture)
            at = picture["parent"]
        return chain[::-1]

    # ----- interaction -----
    def open(self, group_id: str) -> None:
        """Show the group ``group_id`` of the graph shown."""
        groups = self.groups.groups
        if group_id not in groups:
            raise ValueError(f"{self.graph.label!r} has no group {group_id!r}; its groups are "
                             f"{', '.join(list(groups)[:8])}{'…' if len(groups) > 8 else ''}")
        self.shown = group_id
        self.redraw()
        self._update_crumbs()

    def up(self) -> None:
        """Show the group around the one shown (nothing at the top)."""
        parent = self.picture["parent"]
        if parent is not None:
            self.open(parent)

    def _click(self, key: Any) -> None:
        if key in self.groups.groups:
            self.open(key)
            return
        op = next((op for op in self.graph.ops if op.id == key), None)
        if op is None:
            return
        if op.called_graphs:
            self.selection.graph = op.called_graphs[0]
        else:
            self.selection.op = op

    def _op_selected(self, change) -> None:
        """The selected op comes into view: the group holding it opens (a stepped run's next op, say)."""
        op = change["new"]
        if op is not None and op.graph is not self._picture_graph and op.graph is self.graph:
            self.refresh()
        home = self.groups.home(op) if op is not None and op.graph is self.graph else None
        if home is not None and home != self.shown:
            self.open(home)
        else:
            self.redraw()

    def _graph_selected(self, change) -> None:
        if change["new"] is not self._picture_graph:
            self.refresh()
            self._update_crumbs()

    def _controls(self) -> list:
        import ipywidgets

        self._crumbs = ipywidgets.HBox([])
        self._update_crumbs()
        return [self._crumbs]

    def _update_crumbs(self) -> None:
        if self._widget is None and not hasattr(self, "_crumbs"):
            return
        import ipywidgets

        buttons = []
        for picture in self.path()[:-1]:
            button = ipywidgets.Button(description=f"{picture['label']} ({count_of(picture['ops'], 'op')})",
                                       layout=ipywidgets.Layout(width="auto"))
            button.on_click(lambda _, target=picture["id"]: self.open(target))
            buttons.append(button)
        self._crumbs.children = buttons

    def __repr__(self) -> str:
        return f"ModelView({self.graph.label}: {count_of(len(self.graph.ops), 'op')}, group {self.shown!r})"
