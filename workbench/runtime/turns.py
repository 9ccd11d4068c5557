"""Replicas taking turns in one thread: each replica's program runs in a greenlet of its own, and a
replica that reaches a collective before the rest of its group hands the thread to the next one.

Threads cost a replicated run of small ops dearly: they contend for the interpreter lock, and each
collective wakes every replica thread. Taking turns, the replicas run one after another between
collectives (each keeping its values in the caches while it uses them), a switch costs a microsecond,
and no replica waits for a lock. The last member of a group to arrive at a collective combines the
group's values at once, while the others are suspended, so nothing writes them meanwhile. When every
unfinished replica waits and none can go on, the replicas reached different collectives: that is
known at once, and every replica raises ``CollectiveMismatchError`` instead of waiting for a
deadline.
"""
from __future__ import annotations

from time import perf_counter
from typing import Any, Callable, Hashable, Optional, Sequence

from greenlet import greenlet

from .communicator import POLL_SECONDS, CollectiveMismatchError, ReplicaAborted


class TurnTakingCommunicator:
    """The collectives of replicas taking turns (``take_turns``); ``replicas`` are their global
    indices, in the order of the callables given to ``take_turns``."""

    def __init__(self, replicas: Sequence[int]):
        self._replicas = list(replicas)
        self._slots: dict[Hashable, dict[int, Any]] = {}
        self._results: dict[Hashable, Any] = {}
        self._taken: dict[Hashable, int] = {}
        self._waiting: dict[int, str] = {}  # replica: the collective it waits at
        self._finished: set[int] = set()
        self._moves = 0  # values given and replicas finished: what lets a waiting replica go on
        self._stop: Optional[BaseException] = None
        self._scheduler: Optional[greenlet] = None

    def exchange(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any) -> list:
        """Give ``value``; every member's value (in member order) once all have given theirs."""
        slot = self._give(key, replica, value)
        while len(slot) < len(members):
            self._wait(label, replica, members, slot)
        values = [slot[m] for m in members]
        self._take(key, len(members))
        return values

    def combine(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        """Give ``value``; ``combine`` of every member's value (in member order), computed once by the
        last member to arrive. Every member gets the same result object."""
        slot = self._give(key, replica, value)
        if len(slot) == len(members):
            self._results[key] = combine([slot[m] for m in members])
        while key not in self._results:
            self._wait(label, replica, members, slot)
        result = self._results[key]
        if self._take(key, len(members)):
            del self._results[key]
        return result

    def take_turns(self, works: Sequence[Callable[[], None]],
                   poll: Optional[Callable[[], None]] = None) -> None:
        """Run ``works`` (one per replica) to the end, taking turns. The first error of a replica
        (or an interrupt) stops every other replica at its collective, then is raised here."""
        self._scheduler = greenlet.getcurrent()
        turns = [greenlet(work) for work in works]
        pending = list(range(len(turns)))
        next_poll = perf_counter() + POLL_SECONDS
        try:
            while pending:
                moves = self._moves
                for index in list(pending):
                    turns[index].switch()
                    if turns[index].dead:
                        pending.remove(index)
                        self._finished.add(self._replicas[index])
                        self._moves += 1
                if pending and moves == self._moves:
                    raise self._deadlock()
                if poll is not None and perf_counter() > next_poll:
                    poll()
                    next_poll = perf_counter() + POLL_SECONDS
        except BaseException as error:
            self._stop_all(turns, error)
            raise

    def _give(self, key: Hashable, replica: int, value: Any) -> dict:
        if self._stop is not None:
            raise self._stopped(replica)
        slot = self._slots.setdefault(key, {})
        slot[replica] = value
        self._moves += 1
        return slot

    def _wait(self, label: str, replica: int, members: Sequence[int], slot: dict) -> None:
        """Hand the thread to the next replica; raise if the run stops meanwhile."""
        gone = [m for m in members if m not in slot and m in self._finished]
        if gone:
            raise CollectiveMismatchError(
                f"replica {replica} waits at {label} for replica(s) {gone}, which finished the run "
                "without reaching it: every replica of a group must run the same collectives")
        self._waiting[replica] = label
        self._scheduler.switch()
        del self._waiting[replica]
        if self._stop is not None:
            raise self._stopped(replica, label)

    def _take(self, key: Hashable, members: int) -> bool:
        """One member is done with the slot of ``key``; True when it was the last."""
        taken = self._taken[key] = self._taken.get(key, 0) + 1
        if taken == members:
            del self._slots[key], self._taken[key]
            return True
        return False

    def _deadlock(self) -> CollectiveMismatchError:
        where = "; ".join(f"replica {r} at {label}" for r, label in sorted(self._waiting.items()))
        return CollectiveMismatchError(f"the replicas reached different collectives and wait on each "
                                       f"other: {where}")

    def _stopped(self, replica: int, label: str = "") -> BaseException:
        stop = self._stop
        if isinstance(stop, CollectiveMismatchError):
            return CollectiveMismatchError(str(stop))
        at = f" at {label}" if label else ""
        if isinstance(stop, KeyboardInterrupt):
            return ReplicaAborted(f"replica {replica} stopped{at}: the run was interrupted")
        return ReplicaAborted(f"replica {replica} stopped{at}: another replica failed "
                              f"({type(stop).__name__}: {stop})")

    def _stop_all(self, turns: list[greenlet], error: BaseException) -> None:
        """Every suspended replica raises at its collective and ends (its frames unwind here)."""
        self._stop = error
        for turn in turns:
            if turn and not turn.dead:  # started and suspended
                try:
                    turn.switch()
                except (ReplicaAborted, CollectiveMismatchError):
                    pass
