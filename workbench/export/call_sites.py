"""Call sites: which op calls which graph, how, and which tensors it binds on each side."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from workbench.ir import Graph, Op, Tensor
from workbench.ops.call_binding import call_bindings


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
        for binding in call_bindings(op):
            repeat_count = op.attrs.get("repeat_count") if binding.kind == "repeat" else None
            yield CallSite(op, binding.graph, binding.label, repeat_count, tuple(binding.pairs()),
                           tuple(zip(binding.graph.outputs, op.outputs)))
