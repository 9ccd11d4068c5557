"""A session's view of the other instances of its job: collectives and weights across processes.

Replicas keep their global index. A collective whose groups all lie within this instance stays a
rendezvous of the local replicas. One whose groups span instances gathers every local replica's
value, and the last local replica to arrive exchanges them with the other instances at once (through
shared memory on one machine, ``mpi_window.py``) and reduces each group's values, in global replica
order, with the op's own reducer, exactly as one instance holding every replica would, so results
agree bit for bit.
"""
from __future__ import annotations

import hashlib
import warnings
from array import array
from typing import Any, Callable, Optional, Sequence

import numpy as np

from workbench.ir.popdist_settings import PopdistSettings
from workbench.ops.registry import op_def

from ..replication.rendezvous import MeetingKey, Rendezvous
from ..tracing.trace import BranchLog, RunRecord
from .mpi import Channel, world


class InstancesDiverged(RuntimeWarning):
    """Instances whose replicas hold different values of a variable they should share."""


class Instances:
    """Opened by each Session of a job of several instances (every instance opens it, in step);
    ``wait_seconds``: how long it waits for the others (None: ``wait_limit()``)."""

    def __init__(self, settings: PopdistSettings, ir, wait_seconds: Optional[float] = None):
        self.settings = settings
        self.channel: Channel = world(settings, wait_seconds).channel("a session", wait_seconds)
        self.channel.open_window(len(settings.local_replicas) * largest_collective_value(ir))
        # Conditionals by a number every instance gives them alike: the branch logs cross as numbers.
        self._conditionals = [op for graph in ir.graphs for op in graph.ops if op_def(op.type).branches]

    def communicator(self, local) -> "SpanningCommunicator":
        """What the replicas of one run call for collectives, around their local communicator."""
        return SpanningCommunicator(local, self.channel, self.settings)

    def run_ended(self, error: Optional[BaseException]) -> None:
        """Every instance learns how the run went everywhere; raises if it failed elsewhere."""
        self.channel.run_ended(error)

    def all_device_values(self, local: dict[int, dict], variables: Sequence) -> dict[int, dict]:
        """Every global replica's device values of ``variables``, from every instance, in one exchange."""
        replicas = self.settings.local_replicas
        everyone = self.channel.allgather_arrays([local[r][v] for r in replicas for v in variables],
                                                 f"weights_to_host of {len(variables)} variables")
        count = len(variables)
        return {instance * len(replicas) + index: dict(zip(variables, arrays[index * count:(index + 1) * count]))
                for instance, arrays in enumerate(everyone) for index in range(len(replicas))}

    def warn_if_diverged(self, host: dict) -> None:
        """Compare a digest of this instance's host copies of the variables with every other
        instance's and warn, naming the instances and variables, where they differ: replicas on
        different instances that should agree (a constant or a reduction that differs between
        instances) have drifted apart."""
        digests = np.array([np.frombuffer(hashlib.blake2b(np.ascontiguousarray(value).tobytes(), digest_size=8)
                                          .digest(), np.uint8) for value in host.values()], np.uint8)
        everyone = self.channel.allgather(digests.reshape(len(host), 8), f"digests of {len(host)} variables")
        names = [variable.name for variable in host]
        differing = {instance: [name for name, same in zip(names, (row == everyone[0]).all(axis=1)) if not same]
                     for instance, row in enumerate(everyone[1:], start=1)}
        differing = {instance: found for instance, found in differing.items() if found}
        if differing:
            said = "; ".join(f"instance {i}: {', '.join(found[:5])}{' ...' if len(found) > 5 else ''}"
                             for i, found in differing.items())
            warnings.warn(InstancesDiverged(f"weights_to_host on instance {self.channel.instance}: these "
                                            f"instances hold other values than instance 0 for variables "
                                            f"that their replicas share ({said})"), stacklevel=4)

    def whole_record(self, record: RunRecord) -> RunRecord:
        """The record of a run on every global replica, from each instance's record of its own.

        Branch logs travel as (conditional number, taken) and clock readings as seconds since the
        run started, so the trace of the whole job replays on any instance."""
        number = {op: index for index, op in enumerate(self._conditionals)}
        profiled = record.timestamps is not None
        parts = [np.array([(number[op], taken) for op, taken in branches], np.float64).reshape(-1)
                 for branches in record.branches]
        if profiled:
            parts += [np.array(stamps, np.float64) - record.started for stamps in record.timestamps]
        sizes = np.array([len(part) for part in parts], np.int64)
        all_sizes = self.channel.allgather(sizes, f"trace record sizes of {len(parts)} logs")
        width = int(all_sizes.sum(axis=1).max())
        packed = np.zeros(width, np.float64)
        if parts:
            packed[: sizes.sum()] = np.concatenate(parts)
        everyone = self.channel.allgather(packed, f"trace record of {width} numbers")
        local = len(record.branches)
        branches, timestamps = [], []
        for row, counts in zip(everyone, all_sizes):
            logs = np.split(row, np.cumsum(counts))[: len(counts)]
            branches += [BranchLog.of([(self._conditionals[int(i)], bool(t)) for i, t in log.reshape(-1, 2)])
                         for log in logs[:local]]
            timestamps += [array("d", log + record.started) for log in logs[local:]]
        return RunRecord(branches, timestamps if profiled else None, record.started, record.seconds,
                         record.event_limit)


class SpanningCommunicator:
    """Passes collectives within the instance to the local communicator; exchanges the others."""

    def __init__(self, local: Rendezvous, channel: Channel, settings: PopdistSettings):
        self._local = local
        self._channel = channel
        self._settings = settings
        self._replicas = list(settings.local_replicas)
        self._spanning: dict = {}  # op: whether any of its groups spans instances

    def exchange(self, key: MeetingKey, label: str, replica: int, members: Sequence[int], value: Any) -> list:
        op, _, occurrence = key
        if not self._spans(op, members):
            return self._local.exchange(key, label, replica, members, value)

        def gathered(values: list) -> np.ndarray:
            # A copy: the members read the values later, when the shared window may be written again.
            return gather_replicas(self._channel, values, label, occurrence, op).copy()

        # One meeting of all the local replicas (an op's groups span instances for every replica or none).
        everyone = self._local.combine(MeetingKey(op, tuple(self._replicas), occurrence), label, replica,
                                       self._replicas, value, gathered)
        return [everyone[m] for m in members]

    def combine(self, key: MeetingKey, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        """``combine`` of every member's value (in global replica order), computed once for each
        group: within the instance by the group's last member to arrive; across instances by the
        instance's last replica to arrive, for every group of its replicas, from the values exchanged,
        so that every instance computes the same bits."""
        op, _, occurrence = key
        if not self._spans(op, members):
            return self._local.combine(key, label, replica, members, value, combine)

        def gathered_and_combined(values: list) -> dict:
            everyone = gather_replicas(self._channel, values, label, occurrence, op)
            groups = {tuple(self._members(op, r, members)) for r in self._replicas}
            return {group: combine([everyone[m] for m in group]) for group in groups}

        # One rendezvous of the local replicas: the last to arrive exchanges and combines for all.
        results = self._local.combine(MeetingKey(op, tuple(self._replicas), occurrence), label, replica,
                                      self._replicas, value, gathered_and_combined)
        return results[tuple(members)]

    def _members(self, op, replica: int, members: Sequence[int]) -> list[int]:
        """The members of ``replica``'s group of ``op`` (``members`` without a grouping: everyone)."""
        grouping = op.attrs.get("group")
        return list(members) if grouping is None else grouping.members(grouping.assignment[replica])

    def _spans(self, op, members: Sequence[int]) -> bool:
        spans = self._spanning.get(op)
        if spans is None:
            spans = self._spanning[op] = spans_instances(op, members, self._settings)
        return spans


def spans_instances(op, members: Sequence[int], settings: PopdistSettings) -> bool:
    """Whether ``op`` exchanges across instances: decided for the op, not for one group, so that every
    local replica takes the same path even where only some groups span instances."""
    grouping = op.attrs.get("group")
    groups = [grouping.members(g) for g in range(grouping.num_groups)] if grouping is not None else [members]
    instance = settings.instance_of
    return any(instance(min(g)) != instance(max(g)) for g in groups)


def gather_replicas(channel: Channel, values: list, label: str, occurrence: int, op) -> np.ndarray:
    """Every global replica's value of a collective, from this instance's replicas' ``values`` (in
    local order), in one exchange; each instance says what it exchanges (down to the reduction and the
    groups of ``op``), and all must say the same. The result may be a view of the shared window: read
    it before the exchange after next."""
    first = values[0]
    kind = [f"{op.attrs['op']}"] if "op" in op.attrs else []
    grouping = op.attrs.get("group")
    kind += [f"groups {list(grouping.assignment)}"] if grouping is not None else []
    return channel.gather(values, f"{label} occurrence {occurrence}: {first.dtype}{list(first.shape)}"
                                  + "".join(f", {part}" for part in kind))


def largest_collective_value(ir) -> int:
    """Bytes of the largest value one replica gives to a collective of ``ir``."""
    return max((op.inputs[0].nbytes for graph in ir.graphs for op in graph.ops if op_def(op.type).meets_replicas),
               default=0)
