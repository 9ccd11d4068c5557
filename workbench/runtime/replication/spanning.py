"""Collectives of replicas spread over several processes: the MPI instances of a job
(``job/instances.py``) or the worker processes of one session (``processes.py``).

Replicas keep their global index. A collective whose groups all lie within this process stays a
rendezvous of the local replicas. One whose groups span processes gathers every local replica's
value, and the last local replica to arrive exchanges them with the other processes at once, through
a ``GatherChannel``; each group's values are then reduced in global replica order with the op's own
reducer, exactly as one process holding every replica would, so results agree bit for bit.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, Sequence

import numpy as np

from workbench.ops.registry import op_def

from .buckets import BUCKET_BYTES, SharedResults, bucketable
from .rendezvous import MeetingKey, Rendezvous

Group = tuple[int, ...]


class GatherChannel(Protocol):
    """How the processes exchange a collective's values."""

    def gather(self, values: list[np.ndarray], description: str) -> np.ndarray:
        """Every process's ``values`` (this process's replicas', in order), for every global replica
        in order, stacked on a leading axis; every process says the same ``description``, or all
        raise ``CollectiveMismatchError``. May be a view, valid until the exchange after next."""
        ...


class Layout(Protocol):
    """Which process holds which replicas (``PopdistSettings`` is one)."""

    @property
    def local_replicas(self) -> Sequence[int]: ...

    def instance_of(self, replica: int) -> int: ...


# How the values of one collective are reduced once gathered: ``(values, description, every group of
# the op, the groups of this process's replicas, combine)`` to a result per group (at least those
# here). By default each process reduces the groups of its own replicas; a channel may share the work
# out (``process_channel.py``).
CombineGroups = Callable[[list, str, list, list, Callable[[list], Any]], dict]


class SpanningCommunicator:
    """Passes collectives within the process to the local communicator; exchanges the others."""

    def __init__(self, local: Rendezvous, channel: GatherChannel, layout: Layout,
                 combine_groups: Optional[CombineGroups] = None):
        self._local = local
        self._channel = channel
        self._settings = layout
        self._replicas = list(layout.local_replicas)
        self._spanning: dict = {}  # op: whether any of its groups spans processes
        self._said: dict = {}  # op: what each process says it exchanges, but the occurrence
        self._groups: dict = {}  # op: its groups everywhere, and those of this process's replicas
        self._combine_groups: CombineGroups = combine_groups or self._gather_then_combine
        self.bucket_results = SharedResults()  # what this process's replicas share of each bucket

    def around(self, local: Rendezvous) -> "SpanningCommunicator":
        """This communicator, now around ``local`` (a run's own), keeping what it learnt of the ops."""
        self._local = local
        return self

    def exchange(self, key: MeetingKey, label: str, replica: int, members: Sequence[int], value: Any) -> list:
        op, _, occurrence = key
        if not self._spans(op, members):
            return self._local.exchange(key, label, replica, members, value)

        def gathered(values: list) -> np.ndarray:
            # A copy: the members read the values later, when the shared window may be written again.
            return self._channel.gather(values, self._describe(values, label, occurrence, op)).copy()

        # One meeting of all the local replicas (an op's groups span processes for every replica or none).
        everyone = self._local.combine(MeetingKey(op, tuple(self._replicas), occurrence), label, replica,
                                       self._replicas, value, gathered)
        return [everyone[m] for m in members]

    def staging_row(self, op, replica: int, members: Sequence[int], shape: tuple, dtype) -> Optional[np.ndarray]:
        """Where ``replica`` may write its value of ``op``'s next exchange, so that the exchange copies
        it no more: a row of the channel's shared memory, or None (the op stays within the process, or
        the channel has no such rows)."""
        row = getattr(self._channel, "row", None)
        if row is None or not self._spans(op, members):
            return None
        return row(self._replicas.index(replica), len(self._replicas), shape, dtype)

    def reduced_row(self, op, members: Sequence[int], shape: tuple, dtype) -> Optional[np.ndarray]:
        """Where ``op``'s next exchange leaves the reduced values of the group ``members``, in the
        channel's shared memory, or None (the op stays within the process, or the channel keeps no
        such rows for values of this size)."""
        row = getattr(self._channel, "reduced_row", None)
        if row is None or not self._spans(op, members):
            return None
        everywhere = all_groups(op, members)
        return row(everywhere.index(tuple(members)), len(everywhere), shape, dtype)

    def combine(self, key: MeetingKey, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        """``combine`` of every member's value (in global replica order), computed once for each
        group: within the process by the group's last member to arrive; across processes by the
        process's last replica to arrive, for every group of its replicas, from the values exchanged,
        so that every process computes the same bits."""
        op, _, occurrence = key
        if not self._spans(op, members):
            return self._local.combine(key, label, replica, members, value, combine)

        def gathered_and_combined(values: list) -> dict:
            groups = self._groups.get(op)
            if groups is None:
                here = sorted({tuple(self._members(op, r, members)) for r in self._replicas})
                groups = self._groups[op] = (all_groups(op, members), here)
            everywhere, here = groups
            return self._combine_groups(values, self._describe(values, label, occurrence, op), everywhere, here,
                                        combine)

        # One rendezvous of the local replicas: the last to arrive exchanges and combines for all.
        results = self._local.combine(MeetingKey(op, tuple(self._replicas), occurrence), label, replica,
                                      self._replicas, value, gathered_and_combined)
        return results[tuple(members)]

    def _gather_then_combine(self, values: list, description: str, everywhere: list[Group], here: list[Group],
                             combine: Callable[[list], Any]) -> dict:
        everyone = self._channel.gather(values, description)
        return {group: combine([everyone[m] for m in group]) for group in here}

    def _describe(self, values: list, label: str, occurrence: int, op) -> str:
        tail = self._said.get(op)
        if tail is None:  # all but the occurrence is the same at every occurrence of the op
            tail = self._said[op] = describe(values, label, 0, op)[len(f"{label} occurrence 0"):]
        return f"{label} occurrence {occurrence}{tail}"

    def _members(self, op, replica: int, members: Sequence[int]) -> list[int]:
        """The members of ``replica``'s group of ``op`` (``members`` without a grouping: everyone)."""
        grouping = op.attrs.get("group")
        return list(members) if grouping is None else grouping.members(grouping.assignment[replica])

    def _spans(self, op, members: Sequence[int]) -> bool:
        spans = self._spanning.get(op)
        if spans is None:
            spans = self._spanning[op] = spans_instances(op, members, self._settings)
        return spans


def all_groups(op, members: Sequence[int]) -> list[Group]:
    """Every group of ``op``'s replicas (``members`` without a grouping: everyone), in group order."""
    grouping = op.attrs.get("group")
    if grouping is None:
        return [tuple(members)]
    return [tuple(grouping.members(g)) for g in range(grouping.num_groups)]


def spans_instances(op, members: Sequence[int], layout: Layout) -> bool:
    """Whether ``op`` exchanges across processes: decided for the op, not for one group, so that every
    local replica takes the same path even where only some groups span processes."""
    instance = layout.instance_of
    return any(instance(min(g)) != instance(max(g)) for g in all_groups(op, members))


def describe(values: list, label: str, occurrence: int, op) -> str:
    """What each process says it exchanges, down to the reduction and the groups of ``op``: all must
    say the same."""
    first = values[0]
    kind = [f"{op.attrs['op']}"] if "op" in op.attrs else []
    grouping = op.attrs.get("group")
    kind += [f"groups {list(grouping.assignment)}"] if grouping is not None else []
    return f"{label} occurrence {occurrence}: {first.dtype}{list(first.shape)}" + "".join(f", {part}" for part in kind)


def largest_collective_value(ir) -> int:
    """Bytes of the largest value one replica gives to a collective of ``ir``: a single op's, or a
    bucket's of all-reduces exchanged together (at most all the bucketable ones of a graph)."""
    single = max((op.inputs[0].nbytes for graph in ir.graphs for op in graph.ops
                  if op_def(op.type).meets_replicas), default=0)
    buckets = max((min(BUCKET_BYTES, sum(op.inputs[0].nbytes for op in graph.ops if bucketable(op)))
                   for graph in ir.graphs), default=0)
    return max(single, buckets)
