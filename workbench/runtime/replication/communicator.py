"""Rendezvous between replica threads for collectives, with failures that never hang.

Each collective execution is identified by (op, group, occurrence): the k-th time a replica runs a
collective op meets the k-th time the other members of its group run it. A replica that fails, or
finishes without reaching a collective its group waits on, or a state where every running replica
waits on a different collective, makes the waiting replicas raise instead of blocking forever.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

#: A last resort: no collective waits longer than this (seconds) even if no rule above caught it.
WAIT_LIMIT = 120.0
#: How often (seconds) whoever waits for the replicas of a run calls back the run's progress display.
POLL_SECONDS = 0.05


class CollectiveMismatchError(RuntimeError):
    """Replicas did not all reach the same collective."""


class ReplicaAborted(RuntimeError):
    """This replica stopped because another replica failed."""


@dataclass(frozen=True, slots=True)
class _Failed:
    """What the other members get when combining their values raised."""

    error: BaseException


class Communicator:
    """Shared by the replica threads of one run; ``replicas`` are their (global) indices."""

    def __init__(self, replicas: Sequence[int]):
        self._replicas = set(replicas)
        self._condition = threading.Condition()
        self._slots: dict[Hashable, dict[int, Any]] = {}
        self._results: dict[Hashable, Any] = {}
        self._taken: dict[Hashable, int] = {}
        self._waiting: dict[int, tuple[Hashable, str, int]] = {}
        self._finished: set[int] = set()
        self._failed: int | None = None
        self._deadlock: str | None = None
        self._aborted = False

    def exchange(self, key: Hashable, label: str, replica: int, members: Sequence[int],
                 value: Any) -> list:
        """Give ``value`` and return the values of all ``members`` (in member order)."""
        with self._condition:
            slot = self._give(key, label, replica, members, value)
            values = [slot[m] for m in members]
            self._take(key, len(members))
            return values

    def combine(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        """Give ``value`` and return ``combine`` of all members' values (in member order), computed
        once, by the member that arrives last, while the others wait: so no member writes its value
        meanwhile, and every member gets the same result object."""
        with self._condition:
            slot = self._slots.setdefault(key, {})
            slot[replica] = value
            last = len(slot) == len(members)
            if last:
                self._results[key] = None
            else:  # one wait, for the result: the last member to arrive computes it
                self._wait_for(lambda: self._results.get(key) is not None, key, label, replica, members, slot)
        if last:
            try:
                result = combine([slot[m] for m in members])
            except BaseException as error:
                with self._condition:
                    self._results[key] = _Failed(error)
                    self._condition.notify_all()
                raise
            with self._condition:
                self._results[key] = result
                self._condition.notify_all()
        with self._condition:
            result = self._results[key]
            if self._take(key, len(members)):
                del self._results[key]
        if isinstance(result, _Failed):
            raise ReplicaAborted(f"replica {replica} stopped at {label}: combining the values failed "
                                 f"({type(result.error).__name__}: {result.error})")
        return result

    def _give(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any) -> dict:
        """Put ``value`` in the slot of ``key`` and wait (holding the condition) until it is full."""
        slot = self._slots.setdefault(key, {})
        slot[replica] = value
        self._condition.notify_all()
        self._wait_for(lambda: len(slot) == len(members), key, label, replica, members, slot)
        return slot

    def _wait_for(self, done: Callable[[], bool], key: Hashable, label: str, replica: int,
                  members: Sequence[int], slot: dict) -> None:
        """Wait (holding the condition) until ``done()``; raise if the run was stopped, a replica
        failed, the replicas are deadlocked or the wait limit passed."""
        deadline = time.monotonic() + WAIT_LIMIT
        while not done():
            self._check_can_wait(label, replica, members, slot)
            if time.monotonic() > deadline:
                raise CollectiveMismatchError(f"replica {replica} waited {WAIT_LIMIT:.0f} s at {label} "
                                              f"for replicas {[m for m in members if m not in slot]}")
            self._waiting[replica] = (key, label, len(members))
            self._condition.wait(timeout=1.0)
            self._waiting.pop(replica, None)

    def _take(self, key: Hashable, members: int) -> bool:
        """One member is done with the slot of ``key``; True when it was the last."""
        self._taken[key] = self._taken.get(key, 0) + 1
        if self._taken[key] == members:
            del self._slots[key], self._taken[key]
            return True
        return False

    def _check_can_wait(self, label, replica, members, slot) -> None:
        if self._aborted:
            raise ReplicaAborted(f"replica {replica} stopped at {label}: the run was interrupted")
        if self._failed is not None:
            raise ReplicaAborted(f"replica {replica} stopped at {label}: replica {self._failed} failed")
        if self._deadlock is not None:
            raise CollectiveMismatchError(self._deadlock)
        gone = [m for m in members if m not in slot and m in self._finished]
        if gone:
            raise CollectiveMismatchError(
                f"replica {replica} waits at {label} for replica(s) {gone}, which finished the run "
                "without reaching it: every replica of a group must run the same collectives")
        running = self._replicas - self._finished - {replica}
        stuck = {r: self._waiting[r] for r in running if r in self._waiting
                 and len(self._slots.get(self._waiting[r][0], ())) < self._waiting[r][2]}
        if len(stuck) == len(running):
            where = "; ".join(f"replica {r} at {lbl}" for r, (_, lbl, _) in sorted(stuck.items()))
            self._deadlock = (f"the replicas reached different collectives and wait on each other: "
                              f"replica {replica} at {label}" + (f"; {where}" if where else ""))
            self._condition.notify_all()
            raise CollectiveMismatchError(self._deadlock)

    def finished(self, replica: int) -> None:
        with self._condition:
            self._finished.add(replica)
            self._condition.notify_all()

    def abort(self) -> None:
        """Stop the run: every replica waiting in a collective, or arriving at one, raises."""
        with self._condition:
            self._aborted = True
            self._condition.notify_all()

    def failed(self, replica: int) -> None:
        with self._condition:
            if self._failed is None:
                self._failed = replica
            self._finished.add(replica)
            self._condition.notify_all()
