"""How a call site binds the graphs it calls: the one place that reads a call, repeat or conditional's
input order.

A call or repeat feeds its inputs to one graph; a conditional's input 0 is the condition, then come the
then branch's inputs and the else branch's. Each input feeds the graph input its ``order`` entry names.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from workbench.ir import Graph, Op, Tensor

BRANCHES = ("then", "else")


@dataclass(frozen=True, slots=True)
class CallBinding:
    """One called graph of a call site. ``kind``: 'call', 'repeat', 'then' or 'else'. Op inputs
    ``first .. first + len(order) - 1`` feed graph inputs ``order`` in turn."""

    op: "Op"
    kind: str
    graph: "Graph"
    first: int
    order: tuple[int, ...]

    @property
    def label(self) -> str:
        """The kind as the call tree and the JSON export name it ('conditional-then' for a branch)."""
        return f"conditional-{self.kind}" if self.kind in BRANCHES else self.kind

    @property
    def parents(self) -> tuple["Tensor", ...]:
        """The op inputs this graph receives, in op-input order."""
        return self.op.inputs[self.first: self.first + len(self.order)]

    @property
    def positions(self) -> range:
        """The op-input indices of ``parents``."""
        return range(self.first, self.first + len(self.order))

    def pairs(self) -> Iterator[tuple["Tensor", "Tensor"]]:
        """``(parent tensor, graph input)`` for every bound input (an index beyond the graph's inputs,
        which ``verify`` refuses, is left out)."""
        inputs = self.graph.inputs
        return ((parent, inputs[index]) for parent, index in zip(self.parents, self.order)
                if index < len(inputs))

    def parent_of(self, graph_input: "Tensor") -> Optional["Tensor"]:
        """The parent tensor bound to ``graph_input``, or None when the call site leaves it unbound."""
        index = self.graph.inputs.index(graph_input)
        return self.op.inputs[self.first + self.order.index(index)] if index in self.order else None

    def op_input_index(self, graph_input_index: int) -> int:
        """The op-input index that feeds graph input ``graph_input_index`` (IndexError if none)."""
        if graph_input_index not in self.order:
            raise IndexError(f"graph input {graph_input_index} of {self.graph.label!r} is not connected at "
                             f"this {self.label} call site")
        return self.first + self.order.index(graph_input_index)


def call_bindings(op: "Op") -> tuple[CallBinding, ...]:
    """The bindings of the graphs ``op`` calls, in ``op.called_graphs`` order; none for other ops."""
    if op.type == "conditional":
        then_order, else_order = tuple(op.attrs["then_inputs"]), tuple(op.attrs["else_inputs"])
        return (CallBinding(op, "then", op.called_graphs[0], 1, then_order),
                CallBinding(op, "else", op.called_graphs[1], 1 + len(then_order), else_order))
    if op.type in ("call", "repeat"):
        return (CallBinding(op, op.type, op.called_graphs[0], 0, tuple(op.attrs["graph_inputs"])),)
    return ()


def call_binding(op: "Op", graph_or_kind) -> CallBinding:
    """The binding of ``op`` for a called graph, or for a kind ('then', 'else', 'call', 'repeat')."""
    for binding in call_bindings(op):
        if binding.graph is graph_or_kind or binding.kind == graph_or_kind:
            return binding
    raise ValueError(f"op {op.name} ({op.type}) does not call {graph_or_kind!r}")
