"""Where replicas meet for a collective: the ``Rendezvous`` contract and the ``MeetingKey`` that names one
meeting.

The k-th time a replica runs a collective op of its group meets the k-th time the other members run
it: ``MeetingKey(op, group, occurrence)``. Four ways of waiting implement the contract: replica threads
(``communicator.Communicator``), replicas taking turns in one thread (``turns.TurnTakingCommunicator``),
the stepper's replica threads (``stepper_threads.ReplicaThreads``) and, around either of the first two,
instances of a job of several (``instances.SpanningCommunicator``). Each raises
``CollectiveMismatchError`` when the replicas cannot all meet, and ``ReplicaAborted`` when the run
was given up, rather than waiting for ever.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Protocol, Sequence

from workbench.ir import Op

from .communicator import ReplicaAborted


class MeetingKey(NamedTuple):
    """One execution of a collective: ``op`` run for the ``occurrence``-th time (from 0) in this run by
    the replicas of ``group`` (their global indices)."""

    op: Op
    group: tuple[int, ...]
    occurrence: int


class Rendezvous(Protocol):
    """What a replica calls at a collective. ``label`` names the op in errors; ``members`` are the
    group's replicas in the order results list them; ``replica`` is the caller."""

    def exchange(self, key: MeetingKey, label: str, replica: int, members: Sequence[int], value: Any) -> list:
        """Give ``value``; get every member's value, in member order, once all have given theirs."""
        ...

    def combine(self, key: MeetingKey, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        """Give ``value``; get ``combine`` of every member's value (member order), computed once."""
        ...


class _Alone:
    """The rendezvous of a replica outside a run with others (one replica, or a weights fragment):
    a collective of several members cannot meet there."""

    def exchange(self, key: MeetingKey, label: str, replica: int, members: Sequence[int], value: Any) -> list:
        raise ReplicaAborted(f"replica {replica} reached {label} outside a run of its group {list(members)}")

    def combine(self, key: MeetingKey, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        raise ReplicaAborted(f"replica {replica} reached {label} outside a run of its group {list(members)}")


NO_RENDEZVOUS: Rendezvous = _Alone()
