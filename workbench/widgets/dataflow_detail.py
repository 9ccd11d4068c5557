"""What a graph picture draws of its tensors: at the "ops" level of detail the hidden tensors are contracted into
the edges between ops, and an expanded body is entered at its top and left at its bottom; in a grouped picture,
a graph input read only inside an opened group is drawn in that group's frame; a gradient is labelled by what it
is the gradient of."""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from workbench.analysis.gradient_names import GRADIENT_PREFIX, gradient_short_name, gradient_sources
from workbench.ir import Op, Tensor

if TYPE_CHECKING:
    from .dataflow import DataflowPicture, PictureNode

SOURCES = ("input", "variable", "constant")  # the tensor categories a graph starts from


def adopt_sources(picture: DataflowPicture) -> None:
    """Makes each graph input, variable or constant (not a graph output) whose readers are all inside an opened
    group's frame a member of that frame and of those round it: drawn beside what reads it, not above the
    frames (a backward graph reads dozens of activations saved by its forward pass)."""
    if not picture.boxes:
        return
    readers: dict[str, set[str]] = defaultdict(set)
    for tail, head, _ in picture.edges:
        readers[tail].add(head)
    members = [set(box.members) for box in picture.boxes]
    for key, node in picture.nodes.items():
        if node.kind != "tensor" or node.category not in SOURCES or node.is_graph_output or not readers.get(key):
            continue
        for box, held in zip(picture.boxes, members):
            if key not in held and readers[key] <= held:
                box.members.append(key)


def contract_tensors(picture: DataflowPicture) -> None:
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


def bundle_call_edges(picture: DataflowPicture) -> None:
    """At the "ops" level an expanded body is entered at its top and left at its bottom: the call's edges go
    to the body's ops that read nothing made in the body, and come back from those whose results nothing
    in the body reads (from its last op where none does); variables and constants passed in enter by no
    edge, as they are drawn by none outside a body. Joined through the body's hidden inputs and outputs,
    each weight a transformer layer reads would otherwise pull a dashed edge from the call to its layer,
    and each activation saved for the backward pass one back out, across the whole body."""
    fed, feeds = set(), set()  # nodes with a data edge from, and to, a node of their own frame
    for tail, head, kind in picture.edges:
        if kind == "data" and picture.nodes[tail].frame and picture.nodes[tail].frame == picture.nodes[head].frame:
            fed.add(head)
            feeds.add(tail)
    exits: dict[str, list[str]] = defaultdict(list)  # the head in the parent -> the body's nodes it gets
    kept: list[tuple[str, str, str]] = []
    for tail, head, kind in picture.edges:
        if kind == "enter" and head in fed:
            continue
        if kind == "exit":
            exits[head].append(tail)
            continue
        kept.append((tail, head, kind))
    order = {key: index for index, key in enumerate(picture.nodes)}
    for head, tails in exits.items():
        last = [tail for tail in tails if tail not in feeds] or [max(tails, key=order.__getitem__)]
        kept.extend((tail, head, "exit") for tail in last)
    picture.edges = kept


def name_gradients(picture: DataflowPicture) -> None:
    """Labels a gradient by what it is the gradient of, '∂ W0' rather than 'Gradient___ws_0' (and each node's
    hover says both names): found for the graphs drawn only, and only where one of them holds a gradient."""
    graphs = {node.item.graph for node in picture.nodes.values() if isinstance(node.item, (Op, Tensor))}
    if not any(GRADIENT_PREFIX in tensor.name for graph in graphs for tensor in graph.device_tensors):
        return
    sources = gradient_sources(picture.graph.ir, graphs)
    for node in picture.nodes.values():
        node.gradients = sources
        if isinstance(node.item, Tensor):
            node.label = gradient_short_name(node.item, sources)


def _hidden(node: PictureNode) -> bool:
    """Whether the "ops" level leaves ``node`` out: a tensor of an expanded body, or an intermediate, variable or
    constant that is no graph output."""
    if node.frame:
        return True
    return node.category in ("intermediate", "constant", "variable") and not node.is_graph_output
