"""A session's view of the other instances of its job: collectives and weights across processes.

Replicas keep their global index. A collective whose groups all lie within this instance stays a
rendezvous of threads. One whose groups span instances gathers every local replica's value, and one
thread (the instance's first replica) exchanges them with the other instances in one MPI call; each
member then takes its group's values in global replica order and reduces them with the op's own
reducer, exactly as one instance holding every replica would, so results agree bit for bit.
"""
from __future__ import annotations

from typing import Any, Hashable, Optional, Sequence

import numpy as np

from .mpi import Channel, world
from .settings import PopdistSettings


class Instances:
    """Opened by each Session of a job of several instances (every instance opens it, in step)."""

    def __init__(self, settings: PopdistSettings):
        self.settings = settings
        self.channel: Channel = world(settings).channel()

    def communicator(self, local) -> "SpanningCommunicator":
        """What the replica threads of one run call for collectives, around their local ``Communicator``."""
        return SpanningCommunicator(local, self.channel, self.settings)

    def run_ended(self, error: Optional[BaseException]) -> None:
        """Every instance learns how the run went everywhere; raises if it failed elsewhere."""
        self.channel.run_ended(error)

    def all_device_values(self, local: dict[int, dict], variables: Sequence) -> dict[int, dict]:
        """Every global replica's device values of ``variables``, from every instance, in one exchange."""
        replicas = self.settings.local_replicas
        arrays = [np.ascontiguousarray(local[r][v]) for r in replicas for v in variables]
        packed = np.concatenate([a.reshape(-1).view(np.uint8) for a in arrays]) if arrays \
            else np.zeros(0, np.uint8)
        everyone = self.channel.allgather(packed, f"weights_to_host of {len(variables)} variables: "
                                                  f"{packed.nbytes} bytes")
        result: dict[int, dict] = {}
        for instance, row in enumerate(everyone):
            start = 0
            for index in range(len(replicas)):
                values = result.setdefault(instance * len(replicas) + index, {})
                for variable, like in zip(variables, arrays[index * len(variables):]):
                    values[variable] = row[start: start + like.nbytes].view(like.dtype).reshape(like.shape)
                    start += like.nbytes
        return result


class SpanningCommunicator:
    """Passes collectives within the instance to the thread ``Communicator``; exchanges the others."""

    def __init__(self, local, channel: Channel, settings: PopdistSettings):
        self._local = local
        self._channel = channel
        self._replicas = list(settings.local_replicas)
        self._first, self._last = self._replicas[0], self._replicas[-1]

    def exchange(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any) -> list:
        if self._first <= min(members) and max(members) <= self._last:
            return self._local.exchange(key, label, replica, members, value)
        op, _, occurrence = key
        values = self._local.exchange(("instances", op, occurrence), label, replica, self._replicas, value)
        everyone = None
        if replica == self._first:
            stacked = np.stack(values)
            description = (f"{label} occurrence {occurrence}: {stacked.dtype}{list(stacked.shape[1:])}")
            everyone = self._channel.allgather(stacked, description)
            everyone = everyone.reshape(-1, *stacked.shape[1:])
        everyone = self._local.exchange(("instances result", op, occurrence), label, replica, self._replicas,
                                        everyone)[0]
        return [everyone[m] for m in members]
