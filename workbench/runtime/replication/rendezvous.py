"""Where replicas meet for a collective: the ``Rendezvous`` contract and the ``MeetingKey`` that names one
meeting.

The k-th time a replica runs a collective op of its group meets the k-th time the other members run
it: ``MeetingKey(op, group, occurrence)``. Four ways of waiting implement the contract: replica threads
(``communicator.Communicator``), replicas taking turns in one thread (``turns.TurnTakingCommunicator``),
the stepper's replica threads (``stepper_threads.ReplicaThreads``) and, around either of the first two,
replicas spread over processes (``spanning.SpanningCommunicator``: the instances of a job, or a
session's worker processes). Each raises ``CollectiveMismatchError`` when the replicas cannot all
meet, and ``ReplicaAborted`` when the run was given up, rather than waiting for ever.

The first three keep their books alike, in a ``MeetingBook``: the values given at each meeting, the
result once known, who waits where, and the two rules that tell that replicas cannot meet (a member
finished without arriving; every running replica waits at a meeting that is not full). They differ only
in how a replica waits: on a condition, or by handing the thread to the next replica.
"""
from __future__ import annotations

from typing import Any, Callable, Collection, Hashable, Iterable, NamedTuple, Optional, Protocol, Sequence

from workbench.ir import Op


class CollectiveMismatchError(RuntimeError):
    """Replicas did not all reach the same collective."""


class ReplicaAborted(RuntimeError):
    """This replica stopped because another replica failed."""


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


class Meeting:
    """One meeting: the values given so far (by replica), the result once known (``done``), and how
    many members have yet to leave with it."""

    __slots__ = ("values", "result", "done", "staying")

    def __init__(self, members: int):
        self.values: dict[int, Any] = {}
        self.result: Any = None
        self.done = False
        self.staying = members


class Waiting(NamedTuple):
    """Where a replica waits: the meeting, its label for errors, and the members it waits for."""

    key: Hashable
    label: str
    members: Sequence[int]


class MeetingBook:
    """The bookkeeping every way of waiting shares (see the module); the caller holds whatever lock
    its way of waiting needs."""

    __slots__ = ("meetings", "waiting")

    def __init__(self) -> None:
        self.meetings: dict[Hashable, Meeting] = {}
        self.waiting: dict[int, Waiting] = {}

    def give(self, key: Hashable, replica: int, members: Sequence[int], value: Any) -> Meeting:
        """``replica`` arrives at meeting ``key`` with ``value``; the meeting (full once every member came)."""
        meeting = self.meetings.get(key)
        if meeting is None:
            meeting = self.meetings[key] = Meeting(len(members))
        meeting.values[replica] = value
        return meeting

    def leave(self, key: Hashable, meeting: Meeting) -> bool:
        """A member is done with the meeting; True when it was the last (the meeting is forgotten)."""
        meeting.staying -= 1
        if meeting.staying:
            return False
        del self.meetings[key]
        return True

    def full(self, key: Hashable, members: Sequence[int]) -> bool:
        """Whether every member of meeting ``key`` has arrived."""
        meeting = self.meetings.get(key)
        return meeting is not None and len(meeting.values) == len(members)

    def gone(self, key: Hashable, members: Sequence[int], finished: Collection[int]) -> list[int]:
        """The members of meeting ``key`` that finished the run without arriving."""
        meeting = self.meetings.get(key)
        arrived = meeting.values if meeting is not None else {}
        return [m for m in members if m not in arrived and m in finished]

    def all_stuck(self, running: Iterable[int]) -> bool:
        """Whether every one of the ``running`` replicas waits at a meeting that is not full (then none
        can go on: they reached different collectives)."""
        return all(r in self.waiting and not self.full(self.waiting[r].key, self.waiting[r].members)
                   for r in running)

    def where(self, replicas: Optional[Iterable[int]] = None) -> str:
        """Where the waiting ``replicas`` (all by default) wait, for an error message."""
        chosen = sorted(self.waiting if replicas is None else replicas)
        return "; ".join(f"replica {r} at {self.waiting[r].label}" for r in chosen)


def gone_error(replica: int, label: str, gone: Sequence[int]) -> CollectiveMismatchError:
    return CollectiveMismatchError(
        f"replica {replica} waits at {label} for replica(s) {list(gone)}, which finished the run "
        "without reaching it: every replica of a group must run the same collectives")


def deadlock_error(where: str) -> CollectiveMismatchError:
    return CollectiveMismatchError(f"the replicas reached different collectives and wait on each other: {where}")
