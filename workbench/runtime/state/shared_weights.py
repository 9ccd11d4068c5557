"""Weights every replica holds alike, kept once: the usual data-parallel training step updates each
replica's copy of a weight with the same all-reduced gradient, so the copies never differ.

A variable qualifies when all of this instance's replicas start with one value (one replica group,
not sharded, on chip) and every write to it is an update that leaves the copies equal: a main-graph
op writing the variable in place from values that are the same on every replica (constants, other
such variables, results of an all-reduce over all replicas). Its replicas then share one array, and
each update runs once per run, in whichever replica reaches it first: the others take its result
(and, when it wrote a new array for the variable, make that theirs too).

That is exact only if no replica could see the update too early or too late. Replicas pass a
collective together, so between two main-graph steps that meet other replicas (collectives, or calls
of graphs with collectives) each replica runs the steps in between on its own, in any order. An
update that no earlier step between the meeting steps around it touches, and no later one there
writes again, is therefore seen by every replica exactly when it would have made its own.
"""
from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from typing import Any, Callable, Optional

from workbench.analysis.aliasing import declared_root
from workbench.ir import Constant, Graph, Ir, Op, Tensor, Variable
from workbench.ops.registry import op_def

from ..replication.communicator import ReplicaAborted


def shared_weights(ir: Ir, steps: list[Op], copy_of: Optional[dict[int, int]] = None) -> SharedUpdates:
    """The weights all local replicas can share, and the main-graph ``steps`` that update them;
    ``copy_of``: which copy of them each replica holds (one for all by default)."""
    if len(ir.local_replicas) < 2:
        return SharedUpdates(set(), {})
    touching: dict[Tensor, list[int]] = {}  # the steps that read or write a tensor's memory
    modified: dict[Tensor, list[Op]] = {}  # the steps that write it
    for position, op in enumerate(steps):
        for root in dict.fromkeys(declared_root(t) for t in op.inputs):
            touching.setdefault(root, []).append(position)
        for index in op.modified:
            modified.setdefault(declared_root(op.inputs[index]), []).append(op)
    meets = _meeting_ops(ir)
    meetings = [position for position, op in enumerate(steps) if op in meets]
    shared = {v for v in touching if isinstance(v, Variable) and _same_everywhere_at_start(ir, v)}
    while True:  # drop the variables with an update that may differ, until none is left to drop
        uniform = _Uniform(shared, modified)
        kept = {v for v in shared if all(_is_shared_update(steps, p, v, uniform, touching[v], meetings)
                                         for p in touching[v] if _writes(steps[p], v))}
        if kept == shared:
            break
        shared = kept
    return SharedUpdates(shared, {steps[p]: v for v in shared for p in touching[v] if _writes(steps[p], v)}, copy_of)


class SharedUpdates:
    """The shared ``variables`` (read-only ones too); runs each of their ``updates`` once per run and
    ``copy``, in the first replica of the copy to reach it. ``copy_of`` maps a replica to the copy of
    the shared weights it holds: one for all (absent replicas hold copy 0), or one per worker process
    (``replication/processes.py``), each updated by its own replicas alike."""

    def __init__(self, variables: set[Variable], updates: dict[Op, Variable],
                 copy_of: Optional[dict[int, int]] = None):
        self.variables = variables
        self.updates = updates
        self.copy_of = copy_of or {}
        # What the replica that ran each update of each copy this run got (None until it is whole).
        self._results: dict[tuple[Op, int], Any] = {}
        self._locks = {op: threading.Lock() for op in updates}

    @property
    def copies(self) -> int:
        """How many copies of each shared weight there are."""
        return max(self.copy_of.values(), default=0) + 1

    def begin(self) -> None:
        """A run starts: no replica has reached an update yet."""
        self._results.clear()

    def once(self, op: Op, kernel: Callable, adopt: Optional[Callable] = None, replica: int = 0) -> Callable:
        """``kernel`` of ``op``, run by the first of the replicas holding ``replica``'s copy that
        reaches it; the later ones get its result once it is whole (replicas in threads wait for
        it). When the update writes a new array for the variable (a swap, ``snapshot.py``),
        ``adopt(old, new)`` makes it theirs too."""
        lock, results = self._locks[op], self._results
        key = (op, self.copy_of.get(replica, 0))

        def run(variable, *others):
            with lock:
                if key in results:
                    result = results[key]
                    if result is None:
                        raise ReplicaAborted(f"{op.name} ({op.type}) failed in the replica that ran it for all")
                    return result if adopt is None else adopt(variable, result)
                results[key] = None  # until it is whole
                result = results[key] = kernel(variable, *others)
                return result
        return run


def _same_everywhere_at_start(ir: Ir, variable: Variable) -> bool:
    """One value for all replicas, which the host cannot set per replica either."""
    return (variable.replica_grouping.num_groups == 1 and variable.retrieval_mode == "one_per_group"
            and variable.shard_count == 1 and variable.remote_buffer is None
            and not ir.main_graph.is_output(variable))


def _writes(op: Op, variable: Variable) -> bool:
    return any(declared_root(op.inputs[i]) is variable for i in op.modified)


def _is_shared_update(steps: list[Op], position: int, variable: Variable, uniform: _Uniform,
                      touches: list[int], meetings: list[int]) -> bool:
    """Whether step ``position`` updates ``variable`` alike on every replica, where no replica can
    tell whether it ran the update itself."""
    op = steps[position]
    if not op_def(op.type).pure_update or op.inputs[0] is not variable:
        return False
    if not all(uniform(t) for t in op.inputs[1:]):
        return False
    index = bisect_left(meetings, position)
    before = meetings[index - 1] if index else -1
    index = bisect_right(meetings, position)
    after = meetings[index] if index < len(meetings) else len(steps)
    for p in touches:
        # No step between may touch the variable before the update, nor a call that meets other
        # replicas just before it (a replica resumes such a call after the collective inside). Steps
        # after it may read the update (each replica would have made its own by then), not write it.
        if before < p < position or (p == before and steps[p].called_graphs):
            return False
        if position < p < after and _writes(steps[p], variable):
            return False
    return True


class _Uniform:
    """Whether a tensor holds the same value on every replica: one of the ``shared`` variables, or a
    constant or the result of an all-reduce over all replicas that no step writes in place."""

    def __init__(self, shared: set, modified: dict[Tensor, list[Op]]):
        self._shared, self._modified = shared, modified

    def __call__(self, tensor: Tensor) -> bool:
        root = declared_root(tensor)
        if root in self._shared:
            return True
        op = tensor.producer
        if any(writer is not op for writer in self._modified.get(root, ())):
            return False
        if isinstance(tensor, Constant):
            return True
        if op is None:
            return False
        uniform = op_def(op.type).uniform_result
        return uniform is not None and uniform(op)


def _meeting_ops(ir: Ir) -> set[Op]:
    """The ops that meet other replicas: collectives, and calls of graphs with such ops."""
    meets: dict[Graph, bool] = {}

    def graph_meets(graph: Graph) -> bool:
        if graph not in meets:
            meets[graph] = False  # a graph calling itself adds nothing
            meets[graph] = any(op_meets(op) for op in graph.ops)
        return meets[graph]

    def op_meets(op: Op) -> bool:
        return op_def(op.type).meets_replicas or any(graph_meets(g) for g in op.called_graphs)
    return {op for graph in ir.graphs for op in graph.ops if op_meets(op)}
