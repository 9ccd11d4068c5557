"""The order ops of a graph execute in.

Constraints: data dependences; ``in_sequence`` order; and in-place hazards: an op that reads a tensor
runs before an op that overwrites that tensor's memory, unless the reader already depends on the
writer. Among ready ops the earliest created goes first, so the schedule follows the program text
where it can, which keeps it deterministic and close to what the author meant.
"""
from __future__ import annotations

import heapq
from collections import defaultdict

from workbench.ir import Graph, Op

from .aliasing import declared_root


class ScheduleError(ValueError):
    """The constraints on a graph's ops form a cycle."""


def _reaches(successors: dict[int, set[int]], start: int, goal: int) -> bool:
    stack, seen = [start], {start}
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        for nxt in successors[node]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def _alias_group(tensor) -> list:
    """``tensor``'s memory root and every tensor declared to alias it."""
    root = declared_root(tensor)
    group, frontier = [root], [root]
    while frontier:
        current = frontier.pop()
        for consumer in current.consumers:
            for out_index, in_index in consumer.aliases.items():
                if consumer.inputs[in_index] is current:
                    group.append(consumer.outputs[out_index])
                    frontier.append(consumer.outputs[out_index])
    return group


def dependencies(graph: Graph) -> dict[int, set[int]]:
    """For each op index, the indices of the ops it must follow."""
    ops = graph.ops
    index = {op: i for i, op in enumerate(ops)}
    before: dict[int, set[int]] = defaultdict(set)
    after: dict[int, set[int]] = defaultdict(set)

    def constrain(first: int, second: int) -> None:
        before[second].add(first)
        after[first].add(second)

    for i, op in enumerate(ops):
        for tensor in op.inputs:
            if tensor.producer is not None and tensor.producer in index:
                constrain(index[tensor.producer], i)
        for previous in op.after:
            if previous in index:
                constrain(index[previous], i)
    for i, op in enumerate(ops):
        if not op.modified:
            continue
        for position in op.modified:
            for tensor in _alias_group(op.inputs[position]):
                for reader in tensor.consumers:
                    j = index.get(reader)
                    if j is None or j == i or j in before[i]:
                        continue
                    writes_too = any(declared_root(reader.inputs[k]) is declared_root(tensor)
                                     for k in reader.modified)
                    first, second = (j, i) if not writes_too or j < i else (i, j)
                    if not _reaches(after, second, first):
                        constrain(first, second)
    return before


def creation_order_holds(ops: tuple[Op, ...]) -> bool:
    """Whether the order ops were created in meets every constraint: each op's producers and
    ``in_sequence`` predecessors in the graph come before it, and no op reads memory that an op created
    before it wrote in place (unless it writes there too: then it follows the writer anyway), so that
    no hazard asks for a reader to run first. Then the earliest-created-first order is the creation
    order itself, found without a heap."""
    position = {op: i for i, op in enumerate(ops)}
    for i, op in enumerate(ops):
        if op.modified and _read_after_writing(op, i, position):
            return False
        for tensor in op.inputs:
            producer = tensor.producer
            if producer is not None and position.get(producer, -1) >= i:
                return False
        for previous in op.after:
            if position.get(previous, -1) >= i:
                return False
    return True


def _read_after_writing(writer: Op, index: int, position: dict[Op, int]) -> bool:
    """Whether an op created after ``writer`` (at ``index``) reads memory it writes in place without
    writing there itself: the hazard that may put that reader before the writer."""
    for written in writer.modified:
        for tensor in _alias_group(writer.inputs[written]):
            root = declared_root(tensor)
            for reader in tensor.consumers:
                if position.get(reader, -1) > index and not any(
                        declared_root(reader.inputs[k]) is root for k in reader.modified):
                    return True
    return False


def schedule(graph: Graph) -> list[Op]:
    """The execution order of ``graph``'s ops."""
    ops = graph.ops
    return list(ops) if creation_order_holds(ops) else ordered_by_constraints(graph)


def ordered_by_constraints(graph: Graph) -> list[Op]:
    """``graph``'s ops in dependency order, the earliest created first among those ready (what
    ``schedule`` gives in every case, computed the long way)."""
    ops = graph.ops
    before = dependencies(graph)
    waiting = {i: len(before[i]) for i in range(len(ops))}
    followers: dict[int, list[int]] = defaultdict(list)
    for i, firsts in before.items():
        for first in firsts:
            followers[first].append(i)
    ready = [i for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order: list[Op] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(ops[i])
        for nxt in followers[i]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, nxt)
    if len(order) != len(ops):
        stuck = [ops[i] for i, n in waiting.items() if n > 0]
        raise ScheduleError(f"graph {graph.label!r} cannot be scheduled: the ordering constraints of "
                            f"these ops form a cycle: {', '.join(op.name for op in stuck[:5])}")
    return order
