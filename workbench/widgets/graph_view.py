"""GraphView: one graph's dataflow, with call sites that expand inline, search and hover details."""
from __future__ import annotations

from typing import Any, Optional

from workbench.export.grouping import OpGroup, group_graph
from workbench.export.opening import graph_opening
from workbench.ir import Graph, Op

from .dataflow import CALL_TYPES, dataflow_picture, opens_alone
from .figures import graph_figure
from .figures.graph_figure import picture_layout
from .selection import Selection
from .style import PICTURE_WIDTH, fitted_width
from .view import View


class GraphView(View):
    """The ops and tensors of ``selection.graph`` (the main graph unless ``graph`` is given), laid out
    in layers. Hover shows shapes, dtypes, tensor kinds and IPUs; clicking an op or tensor selects
    it, clicking a call site expands or collapses its body inline, or, for a body of ``GROUPED_OPS`` ops or
    more (a wall of ops inline), shows the called graph grouped, with a button back to the caller
    (``back``); ``search`` rings matching names.
    ``detail`` is "auto", "full" (every tensor drawn) or "ops" (ops only, for large graphs). ``grouped``
    is "auto" (as the export decides for both Graph tabs, ``workbench.export.opening``: from ``GROUPED_OPS``
    ops, or where the ops one by one take more than a screen and a half and the groups fit one), True or False: a
    grouped graph opens as the Model tab's groups, each a node with its op count that opens in place on click (``open_group``). In a notebook
    output narrower than ``PICTURE_WIDTH`` the nodes and labels are sized to the output's width.
    """

    live_kinds = frozenset({"op_added", "op_changed", "tensor_added", "graph_created", "graph_built",
                            "graph_discarded"})

    def __init__(self, source: Any, graph: Optional[Graph] = None, *, detail: str = "auto",
                 grouped: Any = "auto", selection: Optional[Selection] = None, **options):
        if grouped not in ("auto", True, False):
            raise ValueError(f"grouped must be 'auto', True or False, got {grouped!r}")
        self.detail = detail
        self.grouped = grouped
        self.expanded: set[tuple[Op, ...]] = set()
        self.opened: set[str] = set()  # ids of the groups drawn open
        self.matches: list[str] = []
        self.query = ""
        self.width = PICTURE_WIDTH
        self.callers: list[Graph] = []  # the graphs whose calls were clicked to get here, the last first out
        self._back = None
        selection = selection if selection is not None else Selection()
        if graph is not None:
            selection.graph = graph
        self._shown_graph = selection.graph
        super().__init__(source, selection=selection, **options)
        self.selection.observe(self._selection_changed, names=["graph", "op", "tensor"])
        self.selection.observe(lambda change: self.redraw(), names=["breakpoints"])

    @property
    def graph(self) -> Graph:
        graph = self.selection.graph
        return graph if graph is not None and graph.ir is self.ir else self.ir.main_graph

    @property
    def is_grouped(self) -> bool:
        return self.grouped is True or self.grouped == "auto" and graph_opening(self.graph).grouped

    def _compute(self) -> None:
        self.groups: Optional[OpGroup] = None
        if self.graph is not self._shown_graph:
            self.expanded, self.opened = set(), set()
            self._shown_graph = self.graph
        self.groups = group_graph(self.graph) if self.is_grouped else None
        if self.groups is not None:
            self._group_ids = {group.id: group for group in self.groups.walk()}
            self._homes = {op: group for group in self.groups.walk() for op in group.ops}
            self.opened &= set(self._group_ids)
        self._lay_out()

    def _lay_out(self) -> None:
        """The picture of the graph as grouped, with the groups and call sites opened now."""
        self.picture = dataflow_picture(self.graph, self.expanded, self.detail, self.groups, self.opened)
        self.layout = picture_layout(self.picture, self.width)
        self.matches = self.picture.find(self.query)

    def _reopened(self) -> None:
        """Groups opened or closed: the Ir is as it was, so its groups stand and only the picture changes."""
        if self.error is not None:
            self.refresh()
            return
        self._lay_out()
        self.version += 1
        self.redraw()

    def build_figure(self):
        picked = [item for item in (self.selection.op, self.selection.tensor) if item is not None]
        selected = [key for item in picked for key in self.picture.keys_of(item)]
        stops = [node.key for node in self.picture.nodes.values()
                 if node.kind == "op" and self.selection.breakpoints and self.selection.stops_before(node.item)]
        return graph_figure(self.picture, self.layout, highlight=self.matches, selected=selected, breakpoints=stops,
                            width=self.width)

    def fit(self, room: int) -> None:
        width = fitted_width(PICTURE_WIDTH, room)
        if width != self.width:
            self.width = width
            if getattr(self, "picture", None) is not None:  # folded or packed to the width
                self.layout = picture_layout(self.picture, width)
            self.redraw()

    # ----- interaction -----
    def show(self, graph: Graph) -> None:
        """Show ``graph`` (every view sharing the selection follows)."""
        self.selection.graph = graph

    def expand(self, *path: Op) -> None:
        """Draw the body of the call site at ``path`` (call ops from the shown graph inward) inline (and
        open the groups holding it)."""
        self._check_path(path)
        self.expanded.add(tuple(path))
        home = self._homes.get(path[0]) if self.groups is not None and path else None
        if home is not None and home.parent is not None:
            self.open_group(home.id)
            return
        self.refresh()

    def collapse(self, *path: Op) -> None:
        """Draw the call site at ``path`` as one node again (and anything expanded inside it)."""
        path = tuple(path)
        self.expanded = {p for p in self.expanded if p[:len(path)] != path}
        self.refresh()

    def open_group(self, group_id: str) -> None:
        """Draw the members of group ``group_id`` (and of the groups around it) in place of its node."""
        group = self._group(group_id)
        while group is not None and group.parent is not None:
            self.opened.add(group.id)
            group = group.parent
        self._reopened()

    def close_group(self, group_id: str) -> None:
        """Draw group ``group_id`` as one node again (the groups inside it close too)."""
        group = self._group(group_id)
        self.opened -= {each.id for each in group.walk()}
        self._reopened()

    def _group(self, group_id: str) -> OpGroup:
        if self.groups is None:  # (read from a tab not looked at yet, it computes them)
            raise ValueError(f"{self.graph.label!r} is drawn ungrouped (grouped={self.grouped!r}, "
                             f"{len(self.graph.ops)} ops): it has no groups to open or close")
        if group_id not in self._group_ids:
            known = list(self._group_ids)
            raise ValueError(f"{self.graph.label!r} has no group {group_id!r}; its groups are "
                             f"{', '.join(known[:8])}{'…' if len(known) > 8 else ''}")
        return self._group_ids[group_id]

    def search(self, text: str) -> list[str]:
        """Ring the nodes whose names or op types contain ``text`` (a closed group holding such an op is
        ringed); returns their keys. A single op or tensor matched is also selected."""
        self.query = text
        self.matches = self.picture.find(text) if self.error is None else []
        if len(self.matches) == 1:
            node = self.picture.nodes[self.matches[0]]
            if node.kind == "op":
                self.selection.op = node.item
            elif node.kind == "tensor":
                self.selection.tensor = node.item
        self.redraw()
        if self._widget is not None:
            self._match_label.value = f"{len(self.matches)} found" if text.strip() else ""
        return self.matches

    def _click(self, key: Any) -> None:
        if isinstance(key, str) and key.startswith("group:") and self.groups is not None:
            group_id = key[len("group:"):]
            if group_id in self._group_ids:
                (self.close_group if group_id in self.opened else self.open_group)(group_id)
            return
        node = self.picture.nodes.get(key)
        if node is None:
            return
        if node.kind == "tensor":
            self.selection.tensor = node.item
            return
        op = node.item
        if not isinstance(op, Op):
            return
        self.selection.op = op
        if op.type in CALL_TYPES:
            path = tuple(caller for caller, _ in node.frame) + (op,)
            if path not in self.expanded and opens_alone(op):
                self.callers.append(self.graph)
                self.show(op.called_graphs[0])
                return
            (self.collapse if path in self.expanded else self.expand)(*path)

    def back(self) -> None:
        """Show the graph whose call was clicked to show this one."""
        if not self.callers:
            raise ValueError(f"{self.graph.label!r} was not opened from a call: there is no graph to go back to")
        self.show(self.callers.pop())

    def _check_path(self, path: tuple) -> None:
        graph: Optional[Graph] = self.graph
        for op in path:
            if not isinstance(op, Op) or op.graph is not graph or not op.called_graphs:
                raise ValueError(f"expand takes call ops from {self.graph.label!r} inward, each in the graph "
                                 f"the previous one calls; {op!r} is not a call site of "
                                 f"{graph.label if graph is not None else 'a branch'!r}")
            graph = op.called_graphs[0] if len(op.called_graphs) == 1 else None
            if graph is None and op is not path[-1]:
                raise ValueError("a conditional's branches expand together; it must come last in the path")

    def _selection_changed(self, change) -> None:
        if change["name"] == "graph" and change["new"] is not self._shown_graph:
            if change["new"] in self.callers:  # gone back by another way: the calls below it are left
                del self.callers[self.callers.index(change["new"]):]
            self.refresh()
            self._show_back()
        else:
            self.redraw()

    def _show_back(self) -> None:
        if self._back is not None:
            self._back.description = f"◂ back to {self.callers[-1].label}" if self.callers else ""
            self._back.layout.display = None if self.callers else "none"

    def _controls(self) -> list:
        import ipywidgets

        box = ipywidgets.Text(placeholder="search ops and tensors by name", continuous_update=False,
                              layout=ipywidgets.Layout(width="320px"))
        box.observe(lambda change: self.search(change["new"]), names="value")
        self._match_label = ipywidgets.Label("")
        detail = ipywidgets.Dropdown(options=[("auto detail", "auto"), ("every tensor", "full"), ("ops only", "ops")],
                                     value=self.detail, layout=ipywidgets.Layout(width="140px"))
        detail.observe(self._detail_changed, names="value")
        grouping = ipywidgets.Dropdown(options=[("grouped when large or tall", "auto"), ("grouped", True), ("every op", False)],
                                       value=self.grouped, layout=ipywidgets.Layout(width="210px"))
        grouping.observe(self._grouping_changed, names="value")
        back = ipywidgets.Button(layout=ipywidgets.Layout(width="auto", align_self="flex-start"),
                                 tooltip="show the calling graph again")
        back.on_click(lambda _: self.back())
        self._back = back
        self._show_back()
        return [ipywidgets.HBox([box, self._match_label, detail, grouping]), back]

    def _grouping_changed(self, change) -> None:
        self.grouped = change["new"]
        self.refresh()

    def _detail_changed(self, change) -> None:
        self.detail = change["new"]
        self.refresh()

    def __repr__(self) -> str:
        grouped = ", grouped" if self.groups is not None else ""
        return f"GraphView({self.graph.label}: {len(self.graph.ops)} ops{grouped})"
