"""A session's view of the other instances of its job: collectives and weights across processes.

Replicas keep their global index. Collectives go through ``replication/spanning.py``: within this
instance a rendezvous of the local replicas; across instances, the last local replica to arrive
exchanges every local replica's value with the other instances at once (through shared memory on one
machine, ``mpi_window.py``), and each group's values are reduced in global replica order with the
op's own reducer, exactly as one instance holding every replica would, so results agree bit for bit.
"""
from __future__ import annotations

import hashlib
import warnings
from array import array
from typing import Optional, Sequence

import numpy as np

from workbench.ir.popdist_settings import PopdistSettings
from workbench.ops.registry import op_def

from ..replication.spanning import SpanningCommunicator, largest_collective_value
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
