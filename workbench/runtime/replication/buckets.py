"""All-reduces exchanged together: one meeting of the replicas for several gradients.

A training step all-reduces each gradient and applies it at once, so the replicas meet once per
gradient. The schedule of a replicated graph moves each all-reduce up to the one before it where
nothing in between touches its input (``gathered_all_reduces``); consecutive all-reduces alike in
reduction, group and dtype then form a bucket (``bucket_runs``). Where replicas meet across
processes or instances (``worth_bucketing``), a plain run exchanges a bucket's values side by
side, flat, at its last member, and reduces them with the op's own reducer: element by element in
replica order, so every element has the same bits as alone. Earlier members hand back views of the
bucket's result, which the last member fills before any other step runs; the replicas of a process
share that result unless something writes it. Stepped and profiled runs keep one exchange per op.
"""
from __future__ import annotations

import threading
from typing import Callable, Optional, Sequence

import numpy as np

from workbench.analysis.aliasing import memory_root
from workbench.ir import Op
from workbench.ops.registry import op_def

from .rendezvous import MeetingKey

BUCKETED_TYPE = "replicated_all_reduce"
BUCKET_BYTES = 4 << 20  # at most this much of one replica's values in one bucket


def worth_bucketing(replicas: int, processes: int, instances: int, most_replicas: int) -> bool:
    """Whether an instance's ``replicas``, spread over ``processes``, exchange in buckets with the
    other processes or ``instances``: a bucket costs each replica a copy of its values into it and each
    process one copy out (its replicas share the result where nothing writes it), worth it where a
    process holds ``most_replicas`` at most (``RunOptions.bucket_replicas``; 8 measured on 2 cores)."""
    return (processes > 1 or instances > 1) and -(-replicas // processes) <= most_replicas


def bucketable(op: Op) -> bool:
    """An out-of-place all-reduce that reduces (not 'local') a tensor of at least two elements
    (NumPy reduces a stack of single elements in another order)."""
    return (op.type == BUCKETED_TYPE and op.attrs["op"] != "local" and op.inputs[0].nelms >= 2
            and op.inputs[0].nbytes <= BUCKET_BYTES)


def _kind(op: Op) -> tuple:
    grouping = op.attrs["group"]
    return op.attrs["op"], tuple(grouping.assignment), op.outputs[0].dtype


def _stops_moving(op: Op) -> bool:
    """Whether no collective may move across ``op``: it calls graphs or meets the replicas itself."""
    return bool(op.called_graphs) or op_def(op.type).meets_replicas


def _touches(op: Op, root) -> bool:
    """Whether ``op`` makes or writes the memory ``root``."""
    written = [*op.outputs, *op.modified_tensors()]
    return any(memory_root(t) is root for t in written)


def gathered_all_reduces(steps: Sequence[Op]) -> list[Op]:
    """``steps`` with each bucketable all-reduce moved up to just after the bucketable all-reduce
    before it, when no step in between makes or writes its input, calls a graph or meets replicas."""
    ordered: list[Op] = []
    last: Optional[int] = None  # where the last bucketable all-reduce is in ``ordered``
    for op in steps:
        if bucketable(op) and last is not None:
            root = memory_root(op.inputs[0])
            if not any(_touches(step, root) for step in ordered[last + 1:]):
                last += 1
                ordered.insert(last, op)
                continue
        ordered.append(op)
        if bucketable(op):
            last = len(ordered) - 1
        elif _stops_moving(op):
            last = None
    return ordered


def bucket_runs(steps: Sequence[Op], excluded: Callable[[Op], bool]) -> list[range]:
    """The runs (step indices) of two or more consecutive bucketable all-reduces alike in kind,
    of at most ``BUCKET_BYTES`` together, none ``excluded``."""
    runs: list[range] = []
    current: list[int] = []  # the bucket being formed
    size = 0

    def close() -> None:
        if len(current) >= 2:
            runs.append(range(current[0], current[-1] + 1))
    for index, op in enumerate(steps):
        fits = bucketable(op) and not excluded(op)
        nbytes = op.inputs[0].nbytes if fits else 0
        if fits and current and _kind(op) == _kind(steps[current[0]]) and size + nbytes <= BUCKET_BYTES:
            current.append(index)
            size += nbytes
            continue
        close()
        current, size = ([index], nbytes) if fits else ([], 0)
    close()
    return runs


# Reduces values stacked on a leading axis (a view, not copied) into ``out``.
StackedReduce = Callable[[np.ndarray, np.ndarray], None]
_STACKED_TYPES = (np.float32, np.float64)


def stacked_reducer(op: Op) -> Optional[StackedReduce]:
    """For a float 'add' or 'mean' all-reduce: its reduction of values already stacked on axis 0 (a
    view of the exchanged rows), written straight into ``out``: NumPy's sum (mean) over the stack,
    which is what the op's own reducer computes, without stacking the values again. None for others."""
    if op.attrs["op"] not in ("add", "mean") or op.outputs[0].dtype.as_numpy() not in _STACKED_TYPES:
        return None
    mean = op.attrs["op"] == "mean"

    def reduce(stacked: np.ndarray, out: np.ndarray) -> None:
        np.add.reduce(stacked, axis=0, out=out)
        if mean:
            np.true_divide(out, len(stacked), out=out)
    return reduce


class BucketReducer:
    """The reducer of a bucket's all-reduces: the bucket copies the reduced values into its own
    result at once, so an exchange may hand back a view of its shared memory (no copy of its own).
    ``into``, where the op has one (``stacked_reducer``), reduces stacked values without a copy."""

    __slots__ = ("reduce", "into")

    def __init__(self, reduce: Callable[[list], np.ndarray], into: Optional[StackedReduce] = None):
        self.reduce = reduce
        self.into = into

    def __call__(self, values: list) -> np.ndarray:
        return self.reduce(values)


class SharedResults:
    """A process's bucket results, one per bucket, group and occurrence, shared by the replicas of
    the process in that group (``SpanningCommunicator.bucket_results``): the first to ask makes it,
    the first back from the exchange fills it, the others use it as it is."""

    __slots__ = ("_latest", "_lock")

    def __init__(self):
        self._latest: dict = {}  # (last op, group): [occurrence, result, what filled it]
        self._lock = threading.Lock()

    def slot(self, key: tuple, occurrence: int, template: np.ndarray) -> list:
        """The result of ``key``'s bucket at ``occurrence`` (every local replica of a group reaches an
        occurrence before any leaves it, so one is kept a bucket)."""
        with self._lock:
            slot = self._latest.get(key)
            if slot is None or slot[0] != occurrence:
                slot = self._latest[key] = [occurrence, np.empty_like(template), None]
            return slot


def read_before_next_meeting(steps: Sequence[Op], run: range) -> bool:
    """Whether every step that reads the outputs of the bucket ``steps[run]`` comes before the next
    step after it that may meet other replicas (a collective, or a call), none is an output of the
    graph, and none is written: then the outputs may stay in the exchange's shared memory, which the
    exchange after next writes again."""
    ops = [steps[i] for i in run]
    if not _shareable(ops):
        return False
    roots = {memory_root(op.outputs[0]) for op in ops}
    later = steps[run[-1] + 1:]
    meeting = next((i for i, step in enumerate(later) if _stops_moving(step)), len(later))
    return not any(memory_root(t) in roots for step in later[meeting:] for t in step.inputs)


def _shareable(ops: Sequence[Op]) -> bool:
    """Whether the replicas of a process may share the bucket's outputs: none is written in place
    or is an output of its graph."""
    graph = ops[0].outputs[0].graph
    roots = {memory_root(op.outputs[0]) for op in ops}
    written = any(memory_root(t) in roots for step in graph.ops for t in step.modified_tensors())
    return not written and not any(op.outputs[0] in graph.outputs for op in ops)


class Bucket:
    """One replica's side of a bucket: ``member(i)`` is what the all-reduce ``ops[i]`` calls in
    place of its own exchange (``ReplicaProgram.combine``). Where the communicator keeps
    ``bucket_results`` and nothing writes the outputs, the replicas of a process share one result
    (one copy out of the exchange a process, not one a replica)."""

    def __init__(self, ops: Sequence[Op], replica: int, members: Sequence[int],
                 communicator: Callable[[], object], occurrences: dict, in_exchange: bool = False):
        self.ops = tuple(ops)
        self.replica = replica
        self.members = list(members)
        self.group = tuple(members)
        self._communicator = communicator
        self._occurrences = occurrences
        sizes = [op.inputs[0].nelms for op in ops]
        self._bounds = [(sum(sizes[:i]), sum(sizes[:i + 1])) for i in range(len(sizes))]
        self._shapes = [tuple(op.outputs[0].shape) for op in ops]
        dtype = ops[0].outputs[0].dtype.as_numpy()
        self._sending = np.empty(sum(sizes), dtype)
        self._staged = self._sending  # where this run's values go: ``_sending`` or an exchange's row
        self._result: Optional[np.ndarray] = None
        self._slot: Optional[list] = None  # the shared result's slot (``SharedResults.slot``)
        self._shareable = _shareable(ops)
        self._in_exchange = in_exchange  # whether the results may stay where the exchange reduces them
        last = ops[-1]
        self._label = f"{last.name} ({last.type}, with {len(ops) - 1} earlier all-reduces)"

    def member(self, index: int, combine: Callable[[list], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
        start, stop = self._bounds[index]
        shape = self._shapes[index]
        if index == 0:
            key, op, occurrences = (self.ops[-1], self.group), self.ops[-1], self._occurrences

            def first(value):
                communicator = self._communicator()
                sending = self._staging(communicator)
                sending[start:stop] = value.reshape(-1)
                shared = getattr(communicator, "bucket_results", None) if self._shareable else None
                reduced = self._reduced_row(communicator)
                if reduced is not None:
                    self._slot, self._result = None, reduced
                elif shared is None:
                    self._slot, self._result = None, np.empty_like(self._sending)
                else:
                    self._slot = shared.slot(key, occurrences.get(op, 0), self._sending)
                    self._result = self._slot[1]
                return self._result[start:stop].reshape(shape)
            return first
        if index < len(self.ops) - 1:
            def middle(value):
                self._staged[start:stop] = value.reshape(-1)
                return self._result[start:stop].reshape(shape)
            return middle
        op, occurrences = self.ops[-1], self._occurrences
        combine = BucketReducer(combine, stacked_reducer(op))

        def last(value):
            sending = self._staged
            sending[start:stop] = value.reshape(-1)
            occurrence = occurrences.get(op, 0)
            occurrences[op] = occurrence + 1
            reduced = self._communicator().combine(MeetingKey(op, self.group, occurrence), self._label,
                                                   self.replica, self.members, sending, combine)
            result, slot = self._result, self._slot
            if _same_memory(result, reduced):
                pass  # reduced where the members' outputs already look
            elif slot is None:
                np.copyto(result, reduced)
            elif slot[2] is not reduced:  # the first of the process's replicas back copies for all
                np.copyto(result, reduced)
                slot[2] = reduced
            return result[start:stop].reshape(shape)
        return last

    def _reduced_row(self, communicator) -> Optional[np.ndarray]:
        """Where the exchange will leave this replica's group's reduced values, when the bucket's
        outputs may be read there (``read_before_next_meeting``) and the communicator says (else None)."""
        if not self._in_exchange:
            return None
        row = getattr(communicator, "reduced_row", None)
        return None if row is None else row(self.ops[-1], self.members, self._sending.shape, self._sending.dtype)

    def _staging(self, communicator) -> np.ndarray:
        """Where this replica gathers the bucket's values for the exchange: straight in the row of
        the exchange's shared memory where the communicator offers one (no copy into it later),
        else the bucket's own array."""
        row = getattr(communicator, "staging_row", None)
        staged = None if row is None else row(self.ops[-1], self.replica, self.members, self._sending.shape,
                                               self._sending.dtype)
        self._staged = self._sending if staged is None else staged
        return self._staged


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` are the same elements of the same memory."""
    return (a.shape == b.shape and a.dtype == b.dtype
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])
