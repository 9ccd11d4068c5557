"""What the GraphView draws: one graph's ops and tensors as a picture model, with chosen call sites
expanded inline and a level of detail that keeps 2,000-op graphs readable.

The model is plain data read off the IR (no analysis of its own): nodes for ops and tensors, edges
for data flow, ``in_sequence`` order and call-site bindings, and one box per expanded call body.
At the "ops" level of detail only ops, graph inputs and graph outputs are drawn: intermediates,
variables, constants and the tensors of expanded bodies are left out, their edges joining the ops
on either side (their details stay in the op hover). A variable read by a hundred ops would
otherwise pull a hundred long edges across the picture.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Union

from workbench.export.call_sites import CallSite, call_sites
from workbench.export.graph_data import op_node_id, tensor_node_id
from workbench.ir import Graph, Op, Tensor
from workbench.ops.registry import op_def, op_types

from .style import count_of, format_bytes, text

FULL_DETAIL_NODES = 60  # "auto" draws every tensor while ops and tensors are at most this many, then ops only
CALL_TYPES = op_types("call_site")
# A frame is the path of (call op, branch index) from the viewed graph into an expanded body.
Frame = tuple[tuple[Op, int], ...]


@dataclass(eq=False, slots=True)
class PictureNode:
    key: str
    kind: str  # "op" or "tensor"
    category: str  # ops: "op" or "call"; tensors: "variable", "constant", "input", "intermediate"
    label: str
    item: Union[Op, Tensor]
    frame: Frame = ()
    ipu: int = 0
    is_graph_output: bool = False
    expanded: bool = False
    sites: tuple[CallSite, ...] = ()

    @property
    def hover(self) -> str:
        """Details for the hover box, as plotly markup with the names escaped (made when drawn: most
        tensors of a large graph never are). ``label`` is plain text."""
        if self.kind == "op":
            return _op_hover(self.item, self.sites)
        return _tensor_hover(self.item, self.category)


@dataclass(slots=True)
class PictureBox:
    """An expanded call body: its label and the keys of the nodes drawn inside it."""

    frame: Frame
    label: str
    members: list[str] = field(default_factory=list)


@dataclass(slots=True)
class DataflowPicture:
    graph: Graph
    detail: str
    nodes: dict[str, PictureNode] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # (tail, head, kind)
    boxes: list[PictureBox] = field(default_factory=list)

    @property
    def op_count(self) -> int:
        return sum(1 for node in self.nodes.values() if node.kind == "op")

    def find(self, text: str) -> list[str]:
        """Keys of the nodes whose op name, op type or tensor name contains ``text`` (any case)."""
        needle = text.strip().lower()
        if not needle:
            return []
        found = []
        for key, node in self.nodes.items():
            names = (node.item.name, node.item.type) if node.kind == "op" else (node.item.name,)
            if any(needle in name.lower() for name in names):
                found.append(key)
        return found

    def keys_of(self, item: Union[Op, Tensor]) -> list[str]:
        """Every node drawing ``item`` (an op or tensor of an expanded body may be drawn twice)."""
        return [key for key, node in self.nodes.items() if node.item is item]


def node_key(frame: Frame, item: Union[Op, Tensor]) -> str:
    prefix = "".join(f"{op.name}#{branch}/" for op, branch in frame)
    return prefix + (op_node_id(item) if isinstance(item, Op) else tensor_node_id(item))


def dataflow_picture(graph: Graph, expanded: Iterable[Frame] = (), detail: str = "auto") -> DataflowPicture:
    """The picture of ``graph``; ``expanded`` holds the call paths (tuples of call ops) to draw inline;
    ``detail`` is "full", "ops" or "auto" (full up to ``FULL_DETAIL_NODES`` ops and tensors, beyond
    which tensor labels would crowd each other)."""
    if detail not in ("auto", "full", "ops"):
        raise ValueError(f"detail must be 'auto', 'full' or 'ops', got {detail!r}")
    opened = {tuple(path) for path in expanded}
    builder = _Builder(opened)
    builder.graph(graph, ())
    level = detail if detail != "auto" else ("full" if len(builder.nodes) <= FULL_DETAIL_NODES else "ops")
    picture = DataflowPicture(graph, level, builder.nodes, builder.edges, builder.boxes)
    if level == "ops":
        _contract_tensors(picture)
    return picture


class _Builder:
    def __init__(self, opened: set[tuple[Op, ...]]):
        self.opened = opened
        self.nodes: dict[str, PictureNode] = {}
        self.edges: list[tuple[str, str, str]] = []
        self.boxes: list[PictureBox] = []
        self.sites: dict[Graph, dict[Op, list[CallSite]]] = {}

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
            box = PictureBox(inner, _site_label(site), [])
            self.boxes.append(box)
            box.members = self.graph(site.callee, inner)
            for _, callee_input in site.inputs:
                self.edges.append((key, node_key(inner, callee_input), "enter"))
            for callee_output, parent in site.outputs:
                self.edges.append((node_key(inner, callee_output), node_key(frame, parent), "exit"))


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


def _op_hover(op: Op, sites: list[CallSite]) -> str:
    lines = [f"<b>{text(op.type)}</b> {text(op.name)}",
             f"IPU {op.ipu}" + (f", {text(op.tile_set)} tiles" if op.tile_set != "compute" else "")]
    for label, tensors in (("in", op.inputs), ("out", op.outputs)):
        for index, tensor in enumerate(tensors):
            written = " (written in place)" if label == "in" and index in op.modified else ""
            lines.append(f"{label}[{index}] {text(tensor.name)}: {text(tensor.spec)}{written}")
    for name, value in op.attrs.items():
        if name not in ("graph_inputs", "then_inputs", "else_inputs", "spec") and value is not None:
            shown = getattr(value, "label", None) or getattr(value, "name", None) or repr(value)
            lines.append(f"{text(name)} = {text(str(shown)[:60])}")
    for site in sites:
        lines.append(f"calls {text(site.callee.label)} ({count_of(len(site.callee.ops), 'op')})")
    return "<br>".join(lines)


def _tensor_hover(tensor: Tensor, category: str) -> str:
    kind = {"input": "graph input"}.get(category, category)
    lines = [f"<b>{text(tensor.name)}</b>", f"{text(tensor.spec)}  ({format_bytes(tensor.nbytes)})",
             f"{kind}, IPU {tensor.ipu}"]
    if tensor.producer is not None:
        lines.append(f"made by {text(tensor.producer.name)}")
    if tensor.consumers:
        names = ", ".join(text(op.name) for op in tensor.consumers[:5])
        more = f" +{len(tensor.consumers) - 5} more" if len(tensor.consumers) > 5 else ""
        lines.append(f"used by {names}{more}")
    return "<br>".join(lines)


def _contract_tensors(picture: DataflowPicture) -> None:
    """Drop the tensors the "ops" level hides, joining the nodes on either side of them."""
    hidden = {key for key, node in picture.nodes.items() if node.kind == "tensor" and _hidden(node)}
    successors: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for tail, head, kind in picture.edges:
        successors[tail].append((head, kind))
    edges: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for tail in picture.nodes:
        if tail in hidden:
            continue
        stack = list(successors[tail])
        visited: set[str] = set()
        while stack:
            head, kind = stack.pop()
            if head in hidden:
                if head not in visited:
                    visited.add(head)
                    stack.extend((h, kind if kind != "data" else k) for h, k in successors[head])
            elif (tail, head) not in seen:
                seen.add((tail, head))
                edges.append((tail, head, kind))
    picture.edges = edges
    for key in hidden:
        del picture.nodes[key]
    for box in picture.boxes:
        box.members = [key for key in box.members if key not in hidden]


def _hidden(node: PictureNode) -> bool:
    if node.frame:
        return True
    return node.category in ("intermediate", "constant", "variable") and not node.is_graph_output
