"""ModelView: a graph grouped by IPU, name scope and runs of ops, groups expanded in place, as the JupyterLab
extension's Model tab draws it (both compose the pictures of ``workbench.export.group_layout`` by the same
rules, ``workbench.export.compose``)."""
from __future__ import annotations

from typing import Any, Optional

from workbench.export.compose import Scene, compose, expanded_chain
from workbench.export.group_layout import GroupPictures
from workbench.ir import Graph

from .figures.model_figure import MAX_HEIGHT, model_figure, plot_area
from .selection import Selection
from .style import PICTURE_WIDTH, count_of, fitted_width
from .view import PLOTLY_MIME, View


TITLE_CHAR_WIDTH = 9  # pixels per character of a figure title


class ModelView(View):
    """The groups of ``selection.graph`` (the main graph unless ``graph`` is given). Clicking a group expands
    it in place (a frame around its own picture), clicking a frame's title closes it, clicking a call op
    opens the graph it calls, clicking an op selects it. The breadcrumb above the picture names every group
    from the graph down to the one last expanded: clicking one shows that group alone (``open``), the
    first shows the whole graph again. An op selected elsewhere (a stepped run's next op) expands the
    groups holding it and comes into view. ``width`` and ``max_height`` are the figure's; in a narrower
    notebook output the picture is laid out again to the output's width, unless ``fits_output`` is False
    (a picture in a box as wide as its content, which would shrink it step by step).

    >>> view = ModelView(ir)
    >>> view.expand(view.picture["nodes"][0]["key"])
    """

    live_kinds = frozenset({"op_added", "op_changed", "graph_created", "graph_built", "graph_discarded"})

    def __init__(self, source: Any, graph: Optional[Graph] = None, *, selection: Optional[Selection] = None,
                 width: int = PICTURE_WIDTH, max_height: int = MAX_HEIGHT, fits_output: bool = True, **options):
        self.width = self.preferred_width = width
        self.fits_output = fits_output
        self.max_height = max_height
        self.expanded: set[str] = set()
        self.last = ""  # the group last expanded: the breadcrumb's end
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
            self.expanded, self.last = set(), ""
        self.expanded &= set(self.groups.groups)
        self._picture_graph = self.graph
        ops = self.graph.ops
        self._ipus = sorted({op.ipu for op in ops}) or [0]
        self._kinds = self._box_kinds(ops)

    def _box_kinds(self, ops) -> list[str]:
        """The kinds of box the picture can hold (the legend's entries): ops, call sites, groups and frames."""
        kinds = ["op"]
        if any(op.called_graphs for op in ops):
            kinds.append("call")
        if self.groups.root.children:
            kinds += ["group", "frame"]
        return kinds

    @property
    def picture(self) -> dict:
        """The picture of the group shown, every child collapsed (``workbench.export.group_layout``)."""
        return self.groups.picture(self.shown)

    @property
    def scene(self) -> Scene:
        """The group shown with the groups in ``expanded`` drawn in place, a tall picture folded to the
        figure's width."""
        return compose(self.groups.picture, self.shown, self.expanded, room=plot_area(self.width))

    def build_figure(self):
        return self._figure_titled(not hasattr(self, "_crumbs"))

    def static_bundle(self) -> tuple[dict, dict]:
        """The static picture names the path to the group shown in its title: it has no breadcrumb."""
        if not hasattr(self, "_crumbs"):
            return super().static_bundle()
        from .figure_canvas import figure_json

        picture = figure_json(self._figure_titled(True))
        picture.setdefault("layout", {}).setdefault("width", PICTURE_WIDTH)
        return {PLOTLY_MIME: picture}, {}

    @property
    def widget(self):
        """The live figure leaves the path of the group shown to the breadcrumb above it (said once)."""
        if self._widget is None:
            self._figure = None
            self._crumbs = None  # the figure is drawn for a breadcrumb, made with the widget's controls
        return super().widget

    def _figure_titled(self, with_path: bool):
        selected = self.selection.op.id if self.selection.op is not None else ""
        crumbs = [f"{p['label']} ({count_of(p['ops'], 'op')})" for p in self.path()] if with_path else []
        title = " › ".join(crumbs)
        while len(crumbs) > 1 and len(title) * TITLE_CHAR_WIDTH > self.width - 40:  # the innermost that fit
            crumbs = crumbs[1:]
            title = "… › " + " › ".join(crumbs)
        return model_figure(self.scene, title, selected, self.width, focus=selected or None,
                            max_height=self.max_height, ipus=self._ipus, kinds=self._kinds)

    def path(self) -> list[dict]:
        """The pictures from the graph's top group down to the one last expanded (or the one shown)."""
        chain, at = [], self.last if self.last in self.expanded else self.shown
        while at is not None:
            picture = self.groups.picture(at)
            chain.append(picture)
            at = picture["parent"]
        return chain[::-1]

    def fit(self, room: int) -> None:
        width = fitted_width(self.preferred_width, room) if self.fits_output else self.preferred_width
        if width != self.width:
            self.width = width
            if getattr(self, "_crumbs", None) is not None:
                self._crumbs.layout.max_width = f"{width}px"
            self.redraw()

    # ----- interaction -----
    def open(self, group_id: str) -> None:
        """Show the group ``group_id`` of the graph shown alone (the groups expanded in it stay so)."""
        self._check(group_id)
        self.shown = group_id
        if self.last and expanded_chain(self.groups.picture, group_id, self.last) is None:
            self.last = ""
        self._changed()

    def expand(self, group_id: str) -> None:
        """Draw group ``group_id`` in place with its contents (and the groups around it likewise), showing
        the whole graph if it lies outside the group shown."""
        self._check(group_id)
        chain = expanded_chain(self.groups.picture, self.shown, group_id)
        if chain is None:
            self.shown = self.groups.root.id
            chain = expanded_chain(self.groups.picture, self.shown, group_id) or []
        self.expanded.update(chain)
        self.last = group_id
        self._changed()

    def collapse(self, group_id: str) -> None:
        """Draw group ``group_id`` as one box again (the groups inside it close too)."""
        self._check(group_id)
        self.expanded = {g for g in self.expanded
                         if expanded_chain(self.groups.picture, group_id, g) is None and g != group_id}
        if self.last not in self.expanded:
            self.last = self.groups.picture(group_id)["parent"] or ""
        self._changed()

    def up(self) -> None:
        """Show the group around the one shown alone (nothing at the top)."""
        parent = self.picture["parent"]
        if parent is not None:
            self.open(parent)

    def _check(self, group_id: str) -> None:
        groups = self.groups.groups
        if group_id not in groups:
            raise ValueError(f"{self.graph.label!r} has no group {group_id!r}; its groups are "
                             f"{', '.join(list(groups)[:8])}{'…' if len(groups) > 8 else ''}")

    def _changed(self) -> None:
        self.redraw()
        self._update_crumbs()

    def _click(self, key: Any) -> None:
        if key in self.groups.groups:
            if key in self.expanded:
                self.collapse(key)
            else:
                self.expand(key)
            return
        op = next((op for op in self.graph.ops if op.id == key), None)
        if op is None:
            return
        if op.called_graphs:
            self.selection.graph = op.called_graphs[0]
        else:
            self.selection.op = op

    def _op_selected(self, change) -> None:
        """The selected op comes into view: the groups holding it expand (a stepped run's next op, say)."""
        op = change["new"]
        if op is not None and op.graph is not self._picture_graph and op.graph is self.graph:
            self.refresh()
        home = self.groups.home(op) if op is not None and op.graph is self.graph else None
        chain = expanded_chain(self.groups.picture, self.shown, home) if home is not None else []
        if home is not None and (chain is None or not self.expanded.issuperset(chain)):  # out of sight:
            if chain is None:  # only its groups open
                self.shown = self.groups.root.id
                chain = expanded_chain(self.groups.picture, self.shown, home) or []
            self.expanded, self.last = set(chain), home
            self._changed()
        else:
            self.redraw()

    def _graph_selected(self, change) -> None:
        if change["new"] is not self._picture_graph:
            self.refresh()
            self._update_crumbs()

    def _controls(self) -> list:
        import ipywidgets

        self._crumbs = ipywidgets.HBox([], layout=ipywidgets.Layout(flex_flow="row wrap", max_width=f"{self.width}px"))
        self._update_crumbs()
        return [self._crumbs]

    def _update_crumbs(self) -> None:
        if getattr(self, "_crumbs", None) is None:
            return
        import ipywidgets

        path = self.path()
        pool = getattr(self, "_crumb_pool", [])
        while len(pool) < len(path):  # buttons are made once and kept: a new widget costs a few KB of comm
            button = ipywidgets.Button(layout=ipywidgets.Layout(width="auto"))
            button.on_click(lambda clicked: self.open(clicked._target))
            pool.append(button)
        self._crumb_pool = pool
        for button, picture in zip(pool, path):
            button._target = picture["id"]
            button.description = f"{picture['label']} ({count_of(picture['ops'], 'op')})"
            button.tooltip = "show this group alone" if picture["parent"] else "show the whole graph"
        self._crumbs.children = pool[:len(path)]

    def __repr__(self) -> str:
        return f"ModelView({self.graph.label}: {count_of(len(self.graph.ops), 'op')}, group {self.shown!r})"
