"""What the GraphView draws: one graph's ops and tensors as a picture model, with chosen call sites
expanded inline and a level of detail that keeps 2,000-op graphs readable.

The model is plain data read off the IR (no analysis of its own): nodes for ops and tensors, edges
for data flow, ``in_sequence`` order and call-site bindings, and one box per expanded call body.
At the "ops" level of detail only ops, graph inputs and graph outputs are drawn: intermediates,
variables, constants and the tensors of expanded bodies are left out, their edges joining the ops
on either side (their details stay in the op hover). A variable read by a hundred ops would
otherwise pull a hundred long edges across the picture.

A graph of ``GROUPED_OPS`` ops or more is drawn grouped (``workbench.export.grouping``, the groups of the
Model tab): each group a node saying its name and op count, its edges those of the ops inside it, until
it is opened; an opened group's members are drawn in a box labelled with its name. Graph inputs,
variables and constants read only inside closed groups are left out. A 10,000-op graph opens as a few
boxes, never as a wall of ops.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Sequence, Union

from workbench.analysis.gradient_names import gradient_short_name, gradient_title, name_matches
from workbench.export.call_sites import CallSite, call_sites
from workbench.export.graph_data import op_node_id, tensor_node_id
from workbench.export.grouping import OpGroup
from workbench.export.group_layout import group_summary
from workbench.export.node_content import op_lines
from workbench.export.opening import GROUPED_OPS
from workbench.ir import Graph, Op, Tensor
from workbench.ops.registry import op_def, op_types

from .dataflow_detail import adopt_sources, bundle_call_edges, contract_tensors, name_gradients
from .style import count_of, format_bytes, text

FULL_DETAIL_NODES = 60  # "auto" draws every tensor while ops and tensors are at most this many, then ops only
HOVER_TYPES = 6  # op types a group's hover counts, the commonest first
CALL_TYPES = op_types("call_site")
# A frame is the path of (call op, branch index) from the viewed graph into an expanded body.
Frame = tuple[tuple[Op, int], ...]


@dataclass(eq=False, slots=True)
class PictureNode:
    key: str
    kind: str  # "op", "tensor" or "group" (a closed group of ops)
    category: str  # ops: "op" or "call"; tensors: "variable", "constant", "input", "intermediate"; "group"
    label: str
    item: Union[Op, Tensor, OpGroup]
    frame: Frame = ()
    ipu: int = 0
    is_graph_output: bool = False
    expanded: bool = False
    sites: tuple[CallSite, ...] = ()
    gradients: Optional[Mapping[Tensor, Tensor]] = None  # what each gradient is of (``gradient_sources``)

    @property
    def caption(self) -> str:
        """What the picture writes beside the node: an op (not a call) by its type, the attribute that tells
        it apart and its first weight, as the Model tab's box says them; any other node by its label."""
        if isinstance(self.item, Op) and self.category == "op":
            return " · ".join(op_lines(self.item)[:2])
        if isinstance(self.item, OpGroup):
            return f"{self.label}: {group_summary(self.item)}"
        return self.label

    @property
    def hover(self) -> str:
        """Details for the hover box, as plotly markup with the names escaped (made when drawn: most
        tensors of a large graph never are). ``label`` is plain text."""
        item = self.item
        gradients = self.gradients or {}
        if isinstance(item, Op):
            return _op_hover(item, self.sites, gradients)
        if isinstance(item, OpGroup):
            return _group_hover(item)
        return _tensor_hover(item, self.category, gradients)


@dataclass(slots=True)
class PictureBox:
    """An expanded call body or an opened group: its label and the keys of the nodes drawn inside it;
    ``depth`` counts the boxes around it, ``key`` is an opened group's node key (clicking it closes)."""

    frame: Frame
    label: str
    members: list[str] = field(default_factory=list)
    depth: int = 1
    key: str = ""


@dataclass(slots=True)
class DataflowPicture:
    graph: Graph
    detail: str
    nodes: dict[str, PictureNode] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # (tail, head, kind)
    boxes: list[PictureBox] = field(default_factory=list)
    homes: dict[Op, str] = field(default_factory=dict)  # ops inside a closed group: the group's key

    @property
    def op_count(self) -> int:
        return sum(1 for node in self.nodes.values() if node.kind == "op")

    def find(self, text: str) -> list[str]:
        """Keys of the nodes whose op name, op type, tensor name or label contains ``text`` (any case): a gradient
        is found by its own name and by what it is the gradient of ('∂ W0')."""
        needle = text.strip().lower()
        if not needle:
            return []
        found = []
        for key, node in self.nodes.items():
            item = node.item
            names = ((item.name, item.type) if isinstance(item, Op) else
                     (item.label,) if isinstance(item, OpGroup) else (item.name, node.label))
            if any(name_matches(needle, name) for name in names):
                found.append(key)
        inside = {self.homes[op] for op in self.homes if needle in op.name.lower() or needle in op.type.lower()}
        return found + [key for key in self.nodes if key in inside and key not in found]

    def keys_of(self, item: Union[Op, Tensor]) -> list[str]:
        """Every node drawing ``item`` (an op or tensor of an expanded body may be drawn twice; an op in a
        closed group is drawn by the group)."""
        keys = [key for key, node in self.nodes.items() if node.item is item]
        return keys or ([self.homes[item]] if isinstance(item, Op) and item in self.homes else [])


def node_key(frame: Frame, item: Union[Op, Tensor]) -> str:
    prefix = "".join(f"{op.name}#{branch}/" for op, branch in frame)
    return prefix + (op_node_id(item) if isinstance(item, Op) else tensor_node_id(item))


def group_key(group: OpGroup) -> str:
    return f"group:{group.id}"


def dataflow_picture(graph: Graph, expanded: Iterable[tuple[Op, ...]] = (), detail: str = "auto",
                     groups: Optional[OpGroup] = None, opened: Iterable[str] = ()) -> DataflowPicture:
    """The picture of ``graph``; ``expanded`` holds the call paths (tuples of call ops) to draw inline;
    ``detail`` is "full", "ops" or "auto" (full up to ``FULL_DETAIL_NODES`` ops and tensors, beyond
    which tensor labels would crowd each other). With ``groups`` (``grouping.group_graph(graph)``) the
    graph is drawn grouped, each group closed but those whose ids are in ``opened``, and "auto" is "ops"."""
    if detail not in ("auto", "full", "ops"):
        raise ValueError(f"detail must be 'auto', 'full' or 'ops', got {detail!r}")
    builder = _Builder({tuple(path) for path in expanded})
    if groups is None:
        builder.graph(graph, ())
    else:
        builder.grouped_graph(graph, groups, set(opened))
    small = groups is None and len(builder.nodes) <= FULL_DETAIL_NODES
    level = detail if detail != "auto" else ("full" if small else "ops")
    picture = DataflowPicture(graph, level, builder.nodes, builder.edges, builder.boxes, builder.homes)
    if groups is not None:
        adopt_sources(picture)
    if level == "ops":
        picture.edges = [edge for edge in picture.edges if edge not in builder.weights_entering]
        contract_tensors(picture)
        bundle_call_edges(picture)
    name_gradients(picture)
    return picture


class _Builder:
    def __init__(self, opened: set[tuple[Op, ...]]):
        self.opened = opened
        self.nodes: dict[str, PictureNode] = {}
        self.edges: list[tuple[str, str, str]] = []
        self.boxes: list[PictureBox] = []
        self.sites: dict[Graph, dict[Op, list[CallSite]]] = {}
        self.homes: dict[Op, str] = {}
        self.depth = 0  # boxes around the nodes being added
        self.weights_entering: set[tuple[str, str, str]] = set()  # call edges that pass a variable or constant in

    def grouped_graph(self, graph: Graph, root: OpGroup, opened: set[str]) -> None:
        """Add ``graph``'s nodes with the ops of each closed group drawn as one node, then join the edges
        of those ops to their group's node."""
        outputs = set(graph.outputs)
        for tensor in graph.device_tensors:
            if tensor.producer is None or tensor.producer.graph is not graph:
                self.tensor(tensor, (), tensor in outputs)
        sites = self.sites.setdefault(graph, _sites_by_op(graph))
        orders = {op: order for order, op in enumerate(graph.ops)}
        aliases: dict[str, str] = {}

        def add(group: OpGroup) -> None:
            for item in group.items(orders):
                if not isinstance(item, OpGroup):
                    for tensor in item.outputs:
                        self.tensor(tensor, (), tensor in outputs)
                    self.op(item, (), sites.get(item, []))
                elif item.id in opened:
                    self.depth += 1
                    box = PictureBox((), f"▾ {item.label} ({count_of(item.count, 'op')})", depth=self.depth,
                                     key=group_key(item))
                    self.boxes.append(box)
                    before = len(self.nodes)
                    add(item)
                    box.members = list(self.nodes)[before:]
                    self.depth -= 1
                else:
                    self.closed_group(item, outputs, aliases)

        add(root)
        joined: dict[tuple[str, str], str] = {}
        for tail, head, kind in self.edges:
            tail, head = aliases.get(tail, tail), aliases.get(head, head)
            if tail != head and tail in self.nodes and head in self.nodes:
                joined.setdefault((tail, head), kind)
        self.edges = [(tail, head, kind) for (tail, head), kind in joined.items()]
        self._leave_out_sources_of_closed_groups()

    def _leave_out_sources_of_closed_groups(self) -> None:
        """Graph inputs, variables and constants read only inside closed groups are not drawn: a hundred of
        them would fan into a few boxes (a group's hover counts the graph inputs it reads)."""
        readers: dict[str, set[str]] = defaultdict(set)
        for tail, head, _ in self.edges:
            readers[tail].add(self.nodes[head].kind)
        left_out = {key for key, node in self.nodes.items()
                    if node.kind == "tensor" and node.category in ("input", "variable", "constant")
                    and not node.is_graph_output and readers.get(key) == {"group"}}
        for key in left_out:
            del self.nodes[key]
        self.edges = [edge for edge in self.edges if edge[0] not in left_out]

    def closed_group(self, group: OpGroup, outputs: set[Tensor], aliases: dict[str, str]) -> None:
        key = group_key(group)
        members = [op for each in group.walk() for op in each.ops]
        ipu = Counter(op.ipu for op in members).most_common(1)[0][0] if members else 0
        self.nodes[key] = PictureNode(key, "group", "group", f"▸ {group.label} ({count_of(group.count, 'op')})",
                                      group, (), ipu)
        for op in members:
            self.homes[op] = key
            aliases[node_key((), op)] = key
            for tensor in dict.fromkeys(op.inputs):
                self.edges.append((node_key((), tensor), key, "data"))
            for earlier in op.after:
                self.edges.append((node_key((), earlier), key, "after"))
            for tensor in op.outputs:
                if tensor in outputs:  # a graph output stays drawn, made by the group
                    self.tensor(tensor, (), True)
                    self.edges.append((key, node_key((), tensor), "data"))
                else:
                    aliases[node_key((), tensor)] = key

    def graph(self, graph: Graph, frame: Frame) -> list[str]:
        """Add ``graph``'s nodes in ``frame``; returns their keys."""
        before = len(self.nodes)
        outputs = set(graph.outputs)
        for tensor in graph.device_tensors:
            if tensor.producer is None or tensor.producer.graph is not graph:
                self.tensor(tensor, frame, tensor in outputs)
        sites = self.sites.setdefault(graph, _sites_by_op(graph))
        for op in graph.ops:
            for tensor in op.outputs:
                self.tensor(tensor, frame, tensor in outputs)
            self.op(op, frame, sites.get(op, []))
        return list(self.nodes)[before:]

    def tensor(self, tensor: Tensor, frame: Frame, is_output: bool) -> None:
        key = node_key(frame, tensor)
        category = tensor.kind
        self.nodes[key] = PictureNode(key, "tensor", category, tensor.name, tensor, frame, tensor.ipu, is_output)

    def op(self, op: Op, frame: Frame, sites: list[CallSite]) -> None:
        key = node_key(frame, op)
        path = tuple(o for o, _ in frame) + (op,)
        expanded = bool(sites) and path in self.opened
        category = "call" if op.type in CALL_TYPES else "op"
        self.nodes[key] = PictureNode(key, "op", category, _op_label(op, sites, expanded), op, frame, op.ipu,
                                      expanded=expanded, sites=tuple(sites))
        for tensor in dict.fromkeys(op.inputs):
            self.edges.append((node_key(frame, tensor), key, "data"))
        for earlier in op.after:
            self.edges.append((node_key(frame, earlier), key, "after"))
        if not expanded:
            for tensor in op.outputs:
                self.edges.append((key, node_key(frame, tensor), "data"))
            return
        for branch, site in enumerate(sites):
            inner = frame + ((op, branch),)
            box = PictureBox(inner, _site_label(site), [], depth=self.depth + len(inner))
            self.boxes.append(box)
            box.members = self.graph(site.callee, inner)
            for parent, callee_input in site.inputs:
                self.edges.append((key, node_key(inner, callee_input), "enter"))
                if parent.kind in ("variable", "constant"):
                    self.weights_entering.add(self.edges[-1])
            for callee_output, parent in site.outputs:
                self.edges.append((node_key(inner, callee_output), node_key(frame, parent), "exit"))


def opens_alone(op: Op) -> bool:
    """Whether a click on call site ``op`` shows the graph it calls on its own (grouped) rather than inline: a
    call or repeat of one graph of ``GROUPED_OPS`` ops or more, as inline it would be a wall of ops."""
    return len(op.called_graphs) == 1 and len(op.called_graphs[0].ops) >= GROUPED_OPS


def _sites_by_op(graph: Graph) -> dict[Op, list[CallSite]]:
    sites: dict[Op, list[CallSite]] = defaultdict(list)
    for site in call_sites(graph):
        sites[site.op].append(site)
    return dict(sites)


def _site_label(site: CallSite) -> str:
    if site.kind == "repeat":
        return f"repeat ×{site.repeat_count}: {site.callee.label}"
    if site.kind.startswith("conditional"):
        return f"{site.kind.split('-')[1]}: {site.callee.label}"
    return f"call: {site.callee.label}"


def _op_label(op: Op, sites: list[CallSite], expanded: bool) -> str:
    if not sites:
        return op.type
    marker = "▾" if expanded else "▸"
    if op_def(op.type).repeats:
        return f"{marker} repeat ×{op.attrs.get('repeat_count')} {sites[0].callee.label}"
    return f"{marker} {op.type} {' | '.join(site.callee.label for site in sites)}"


def _op_hover(op: Op, sites: Sequence[CallSite], gradients: Mapping[Tensor, Tensor]) -> str:
    lines = [f"<b>{text(op.type)}</b> {text(op.name)}",
             f"IPU {op.ipu}" + (f", {text(op.tile_set)} tiles" if op.tile_set != "compute" else "")]
    for label, tensors in (("in", op.inputs), ("out", op.outputs)):
        for index, tensor in enumerate(tensors):
            written = " (written in place)" if label == "in" and index in op.modified else ""
            lines.append(f"{label}[{index}] {text(gradient_title(tensor, gradients))}: {text(tensor.spec)}{written}")
    for name, value in op.attrs.items():
        if name not in ("graph_inputs", "then_inputs", "else_inputs", "spec") and value is not None:
            shown = getattr(value, "label", None) or getattr(value, "name", None) or repr(value)
            lines.append(f"{text(name)} = {text(str(shown)[:60])}")
    for site in sites:
        lines.append(f"calls {text(site.callee.label)} ({count_of(len(site.callee.ops), 'op')})")
    if sites:
        lines.append("click to show it on its own, grouped" if opens_alone(op) else "click to expand it in place")
    return "<br>".join(lines)


def _group_hover(group: OpGroup) -> str:
    members = [op for each in group.walk() for op in each.ops]
    graph_inputs = set(members[0].graph.inputs) if members else set()
    inputs = {tensor for op in members for tensor in op.inputs if tensor in graph_inputs}
    lines = [f"<b>{text(group.label)}</b> ({count_of(group.count, 'op')})",
             text(group_summary(group, HOVER_TYPES)),
             "IPU " + ", ".join(map(str, sorted({op.ipu for op in members})))
             + (f"; reads {count_of(len(inputs), 'graph input')}" if inputs else ""), "click to open"]
    return "<br>".join(lines)


def _tensor_hover(tensor: Tensor, category: str, gradients: Mapping[Tensor, Tensor]) -> str:
    """A tensor's name (a gradient's readable name, then its own), type, kind, producer and readers."""
    kind = {"input": "graph input"}.get(category, category)
    short = gradient_short_name(tensor, gradients)
    name = f"<b>{text(short)}</b>" + (f" ({text(tensor.name)})" if short != tensor.name else "")
    lines = [name, f"{text(tensor.spec)}  ({format_bytes(tensor.nbytes)})",
             f"{kind}, IPU {tensor.ipu}"]
    if tensor.producer is not None:
        lines.append(f"made by {text(tensor.producer.name)}")
    if tensor.consumers:
        names = ", ".join(text(op.name) for op in tensor.consumers[:5])
        more = f" +{len(tensor.consumers) - 5} more" if len(tensor.consumers) > 5 else ""
        lines.append(f"used by {names}{more}")
    return "<br>".join(lines)
