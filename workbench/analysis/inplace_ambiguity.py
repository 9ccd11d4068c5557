"""In-place ambiguity: an op writes memory in place that another op of the same graph uses, and
nothing orders the two, so the result depends on the schedule chosen.

Two ops are ordered when one reaches the other through the tensors that connect them or the
explicit ordering of ``in_sequence`` (``Op.after``). An op that only makes an alias (a view) uses
nothing itself: the ops that consume the alias do.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from workbench.ir import Graph, Op, Tensor

from .aliasing import declared_root


@dataclass(frozen=True, slots=True)
class InplaceAmbiguity:
    """``modifier`` writes ``modified`` (the memory's root tensor) in place; ``user`` uses
    ``used``, which shares that memory; neither op is ordered before the other."""

    graph: Graph
    modifier: Op
    modified: Tensor
    user: Op
    used: Tensor

    def message(self) -> str:
        return (f"Inplacing ambiguity detected. The tensor {self.modified.id} is modified by "
                f"'{self.modifier.type}' ({self.modifier.id}), and the tensor '{self.used.id}', which "
                f"shares its memory, is used by '{self.user.type}' ({self.user.id}) in graph "
                f"'{self.graph.name or 'main'}'. Nothing orders these two ops, so the result depends on the "
                "schedule. Use the out-of-place version of one of them, or order them (popxl.in_sequence(), "
                "or make one consume a result of the other). To run the ops in the order they were made, set "
                "ir._pb_ir.getSessionOptions().enableInplaceAmbiguityChecking = False.")


def _ancestors(ops: tuple[Op, ...]) -> dict[Op, int]:
    """Each op's ancestors as a bit set (bit i: ``ops[i]``), through tensors and ``after``."""
    bit = {op: 1 << i for i, op in enumerate(ops)}
    result: dict[Op, int] = {}

    def predecessors(op: Op) -> Iterable[Op]:
        for tensor in op.inputs:
            if tensor.producer is not None and tensor.producer in bit:
                yield tensor.producer
        for before in op.after:
            if before in bit:
                yield before

    for start in ops:
        if start in result:
            continue
        stack = [start]
        while stack:  # iterative depth-first walk: long graphs would overflow recursion
            op = stack[-1]
            pending = [p for p in predecessors(op) if p not in result]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if op not in result:
                mask = 0
                for p in predecessors(op):
                    mask |= result[p] | bit[p]
                result[op] = mask
    return result


def _uses_memory(op: Op) -> bool:
    """Whether ``op`` reads or writes the memory of its inputs (a pure alias-maker does not)."""
    return bool(op.modified) or not op.aliases


def find_inplace_ambiguity(graph: Graph) -> Optional[InplaceAmbiguity]:
    """The first in-place ambiguity of ``graph`` in op order, or None."""
    ops = graph.ops
    modifiers = [op for op in ops if op.modified]
    if not modifiers:
        return None
    users_of: dict[Tensor, list[tuple[Op, Tensor]]] = {}
    for op in ops:
        if _uses_memory(op):
            for tensor in dict.fromkeys(op.inputs):
                users_of.setdefault(declared_root(tensor), []).append((op, tensor))
    ancestors = _ancestors(ops)
    bit = {op: 1 << i for i, op in enumerate(ops)}
    for modifier in modifiers:
        for root in dict.fromkeys(declared_root(modifier.inputs[i]) for i in modifier.modified):
            for user, used in users_of.get(root, ()):
                if user is modifier:
                    continue
                if not (ancestors[user] & bit[modifier]) and not (ancestors[modifier] & bit[user]):
                    return InplaceAmbiguity(graph, modifier, root, user, used)
    return None


def find_inplace_ambiguities(graphs: Iterable[Graph]) -> Optional[InplaceAmbiguity]:
    """The first in-place ambiguity in any of ``graphs``, or None."""
    for graph in graphs:
        found = find_inplace_ambiguity(graph)
        if found is not None:
            return found
    return None
