"""PopART's Inplace pattern (``ir._pb_ir.applyInplacePattern(graph)``): ops with in-place variants
(``OpDef.inplace_variants``, such as Mul's MulLhsInplace and MulRhsInplace) become the first variant that
is safe, the latest op first, as PopART orders equal priorities.

A variant overwrites one input with the op's result. It is safe, and then taken, when:
- the result has that input's shape and dtype (no broadcasting into it);
- the memory is nobody's to keep: not a variable or constant, not (an alias of) a graph output, not a
  graph input that a call site passes by reference or that a repeat reads again on every iteration (a
  call copies a by-value input that its graph writes, so the caller's tensor stays as it was);
- no other input of the op shares that memory, and no op would read two aliases of it while writing one;
- every other reader of the memory can run before the op: each becomes an explicit predecessor
  (``Op.after``, PopART's topological constraints), which must close no cycle, and, as in PopART, none
  of them may produce a graph output; a reader that writes the memory itself blocks the variant.
Runs give the same numbers with or without the pattern.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Optional

from workbench.analysis.aliasing import declared_root, memory_root
from workbench.analysis.schedule import dependencies, schedule
from workbench.ir import Constant, Graph, Op, Tensor, Variable
from workbench.ops.call_binding import call_bindings
from workbench.ops.registry import REGISTRY, op_def
from workbench.transforms.graph_edits import call_sites


def apply_inplace_pattern(graph: Graph) -> list[Op]:
    """Turn the ops of ``graph`` into in-place variants where safe; returns the ops changed, in the order
    the pattern changed them."""
    graph.ir._check_buildable()
    changed: list[Op] = []
    order = _Order(graph)
    for op in reversed(graph.ops):
        definition = REGISTRY.get(op.type)
        if definition is None or not definition.inplace_variants or op.modified or op.aliases:
            continue
        for variant in definition.inplace_variants:
            before = _readers_to_order(op, variant, order)
            if before is not None:
                _make_in_place(op, variant, before)
                order.add(before, op)
                changed.append(op)
                break
    return changed


class _Order:
    """Which ops of a graph must run before which: through tensors, ``Op.after`` and the readers-before-
    writers rule of in-place ops (the graph's schedule constraints), and the constraints the pattern adds
    (which are all those its in-place ops bring: their readers come first).

    Each op keeps a position in a topological order, kept valid as constraints are added (Pearce and
    Kelly's dynamic topological sort), so a search for a path looks only between the two positions."""

    def __init__(self, graph: Graph):
        ops = graph.ops
        self._followers: dict[Op, set[Op]] = defaultdict(set)
        self._leaders: dict[Op, set[Op]] = defaultdict(set)
        for second, firsts in dependencies(graph).items():
            for first in firsts:
                self._followers[ops[first]].add(ops[second])
                self._leaders[ops[second]].add(ops[first])
        self._position = {op: i for i, op in enumerate(schedule(graph))}
        self._graph = graph
        self._sites: Optional[list[Op]] = None

    def reaches(self, start: Op, goal: Op) -> bool:
        """Whether ``goal`` must follow ``start``."""
        position = self._position
        limit = position[goal]
        if position[start] >= limit:
            return False
        seen, frontier = {start}, [start]
        while frontier:
            for nxt in self._followers.get(frontier.pop(), ()):
                if nxt is goal:
                    return True
                if nxt not in seen and position[nxt] < limit:
                    seen.add(nxt)
                    frontier.append(nxt)
        return False

    def add(self, firsts: Iterable[Op], second: Op) -> None:
        """Make ``second`` follow each of ``firsts`` (none of which follows it)."""
        for first in firsts:
            self._followers[first].add(second)
            self._leaders[second].add(first)
            low, high = self._position[second], self._position[first]
            if low < high:  # renumber the ops between: those before ``first`` now come before ``second``'s
                later = self._search(second, self._followers, lambda op: self._position[op] <= high)
                earlier = self._search(first, self._leaders, lambda op: self._position[op] >= low)
                position = self._position.__getitem__
                moved = sorted(earlier, key=position) + sorted(later, key=position)
                for op, place in zip(moved, sorted(map(position, moved))):
                    self._position[op] = place

    @staticmethod
    def _search(start: Op, edges: dict[Op, set[Op]], within) -> set[Op]:
        """``start`` and the ops reached from it along ``edges`` through ops ``within`` accepts."""
        seen, frontier = {start}, [start]
        while frontier:
            for nxt in edges.get(frontier.pop(), ()):
                if nxt not in seen and within(nxt):
                    seen.add(nxt)
                    frontier.append(nxt)
        return seen

    def call_sites(self) -> list[Op]:
        """The ops that call the graph (found once: the pattern adds none)."""
        if self._sites is None:
            self._sites = call_sites(self._graph)
        return self._sites


def _readers_to_order(op: Op, variant: str, order: _Order) -> Optional[tuple[Op, ...]]:
    """The readers that must run before ``op`` once it is ``variant``, or None where ``variant`` is unsafe."""
    definition = op_def(variant)
    (index,) = definition.modifies
    target, result = op.inputs[index], op.outputs[0]
    if (target.shape, target.dtype) != (result.shape, result.dtype):
        return None
    try:
        definition.infer([t.spec for t in op.inputs], op.attrs)
    except (TypeError, ValueError):
        return None
    graph, root = op.graph, declared_root(target)
    group = _alias_group(root)
    if _kept(root, order) or any(graph.is_output(t) for t in group):
        return None
    if any(memory_root(other) is memory_root(target) for j, other in enumerate(op.inputs) if j != index):
        return None
    before: list[Op] = []
    for reader in _consumers(group):
        if reader is op or order.reaches(reader, op):
            continue
        if order.reaches(op, reader) or any(declared_root(reader.inputs[k]) is root for k in reader.modified):
            return None
        before.append(reader)
    if any(graph.is_output(t) for reader in before for t in reader.outputs):
        return None
    if _writes_two_aliases(op, set(group) | set(_alias_group(result))):
        return None
    return tuple(before)


def _alias_group(root: Tensor) -> list[Tensor]:
    """``root`` and every tensor that is its memory through in-place ops."""
    group, frontier = [root], [root]
    while frontier:
        tensor = frontier.pop()
        for consumer in tensor.consumers:
            for out_index, in_index in consumer.aliases.items():
                if consumer.inputs[in_index] is tensor and consumer.outputs[out_index] not in group:
                    group.append(consumer.outputs[out_index])
                    frontier.append(consumer.outputs[out_index])
    return group


def _consumers(tensors: Iterable[Tensor]) -> list[Op]:
    return list(dict.fromkeys(consumer for tensor in tensors for consumer in tensor.consumers))


def _kept(root: Tensor, order: _Order) -> bool:
    """Whether the memory of ``root`` must keep its value: a variable, a constant, or a graph input that a
    caller passes by reference or that a repeat passes unchanged to every iteration."""
    if isinstance(root, (Variable, Constant)):
        return True
    graph = root.graph
    if not graph.is_input(root):
        return False
    if graph.is_by_ref_input(root):
        return True
    graph_index = graph.inputs.index(root)
    for site in order.call_sites():
        for binding in call_bindings(site):
            if binding.graph is not graph or graph_index not in binding.order:
                continue
            position = binding.op_input_index(graph_index)
            carried = op_def(site.type).repeats and position - binding.first < len(site.outputs)
            if position in site.modified or (op_def(site.type).repeats and not carried):
                return True
    return False


def _writes_two_aliases(op: Op, memory: set[Tensor]) -> bool:
    """Whether some other op reads two tensors of ``memory`` (one memory once ``op`` is in place) and writes
    one of them: the order of its reads and writes would decide its result."""
    for consumer in _consumers(memory):
        if consumer is op:
            continue
        shared = [k for k, t in enumerate(consumer.inputs) if t in memory]
        if len(shared) > 1 and any(k in consumer.modified for k in shared):
            return True
    return False


def _make_in_place(op: Op, variant: str, before: tuple[Op, ...]) -> None:
    definition = op_def(variant)
    op.type = variant
    op.modified = definition.modifies
    op.aliases = dict(definition.aliases)
    op.after = tuple(dict.fromkeys(op.after + before))
    op.graph.ir.events.emit("op_changed", op)
