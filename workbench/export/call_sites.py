"""Call sites: which op calls which graph, how, and which tensors it binds on each side."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from workbench.ir import Graph, Op, Tensor


@dataclass(frozen=True, slots=True)
class CallSite:
    """One op-to-graph call. ``inputs`` pairs (parent tensor, callee input); ``outputs`` pairs
    (callee output, parent tensor)."""

    op: Op
    callee: Graph
    kind: str
    repeat_count: Optional[int]
    inputs: tuple[tuple[Tensor, Tensor], ...]
    outputs: tuple[tuple[Tensor, Tensor], ...]


def call_sites(graph: Graph) -> Iterator[CallSite]:
    """Every call site of ``graph``'s ops, in op order (then, else for a conditional)."""
    for op in graph.ops:
        if op.type == "conditional" and len(op.called_graphs) == 2:
            yield from _conditional(op)
        else:
            for callee in op.called_graphs:
                yield _single(op, callee)


def _single(op: Op, callee: Graph) -> CallSite:
    single = len(op.called_graphs) == 1
    order = op.attrs.get("graph_inputs", range(len(op.inputs)))
    inputs = _bind(op.inputs, callee, order) if single else ()
    outputs = tuple(zip(callee.outputs, op.outputs)) if single else ()
    repeat_count = op.attrs.get("repeat_count") if op.type == "repeat" else None
    return CallSite(op, callee, op.type, repeat_count, inputs, outputs)


def _conditional(op: Op) -> Iterator[CallSite]:
    then_graph, else_graph = op.called_graphs
    then_order, else_order = op.attrs["then_inputs"], op.attrs["else_inputs"]
    split = 1 + len(then_order)
    for kind, callee, parents, order in (("conditional-then", then_graph, op.inputs[1:split], then_order),
                                         ("conditional-else", else_graph, op.inputs[split:], else_order)):
        yield CallSite(op, callee, kind, None, _bind(parents, callee, order),
                       tuple(zip(callee.outputs, op.outputs)))


def _bind(parents, callee: Graph, order) -> tuple[tuple[Tensor, Tensor], ...]:
    return tuple((parent, callee.inputs[index]) for parent, index in zip(parents, order)
                 if index < len(callee.inputs))
