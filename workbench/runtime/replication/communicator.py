"""Rendezvous between replica threads for collectives, with failures that never hang.

Each collective execution is identified by (op, group, occurrence): the k-th time a replica runs a
collective op meets the k-th time the other members of its group run it. A replica that fails, or
finishes without reaching a collective its group waits on, or a state where every running replica
waits on a different collective, makes the waiting replicas raise instead of blocking forever.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Optional, Sequence

from workbench.ir.popdist_settings import WAIT_VARIABLE

from .rendezvous import (CollectiveMismatchError, MeetingBook, ReplicaAborted, Waiting, deadlock_error,
                         gone_error)

__all__ = ["POLL_SECONDS", "WAIT_LIMIT", "WAIT_VARIABLE", "CollectiveMismatchError", "Communicator",
           "ReplicaAborted", "wait_limit"]

#: A last resort: no collective waits longer than this (seconds) even if no rule above caught it.
WAIT_LIMIT = 120.0
LOCAL_MARGIN = 5.0
#: How often (seconds) whoever waits for the replicas of a run calls back the run's progress display.
POLL_SECONDS = 0.05


def wait_limit(chosen: Optional[float] = None) -> float:
    """The seconds an instance waits for the others (a replica at a collective, a moment more):
    ``chosen`` (``RunOptions.instance_wait_seconds``) when given, else ``WAIT_VARIABLE`` when set
    (poprun's ``--instance-wait-seconds`` sets it), else WAIT_LIMIT."""
    if chosen is not None:
        return chosen
    text = os.environ.get(WAIT_VARIABLE)
    if text is None:
        return WAIT_LIMIT
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0:
        raise ValueError(f"{WAIT_VARIABLE}={text!r} must be a positive number of seconds")
    return seconds


@dataclass(frozen=True, slots=True)
class _Failed:
    """What the other members get when combining their values raised."""

    error: BaseException


class Communicator:
    """Shared by the replica threads of one run; ``replicas`` are their (global) indices."""

    def __init__(self, replicas: Sequence[int], wait_seconds: Optional[float] = None):
        self._replicas = set(replicas)
        self._wait_seconds = wait_seconds
        self._condition = threading.Condition()
        self._book = MeetingBook()
        self._finished: set[int] = set()
        self._failed: int | None = None
        self._deadlock: str | None = None
        self._aborted = False

    def exchange(self, key: Hashable, label: str, replica: int, members: Sequence[int],
                 value: Any) -> list:
        """Give ``value`` and return the values of all ``members`` (in member order)."""
        with self._condition:
            meeting = self._book.give(key, replica, members, value)
            self._condition.notify_all()
            self._wait_for(lambda: len(meeting.values) == len(members), key, label, replica, members)
            values = [meeting.values[m] for m in members]
            self._book.leave(key, meeting)
            return values

    def combine(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        """Give ``value`` and return ``combine`` of all members' values (in member order), computed
        once, by the member that arrives last, while the others wait: so no member writes its value
        meanwhile, and every member gets the same result object."""
        with self._condition:
            meeting = self._book.give(key, replica, members, value)
            last = len(meeting.values) == len(members)
            if not last:  # one wait, for the result: the last member to arrive computes it
                self._wait_for(lambda: meeting.done, key, label, replica, members)
        if last:
            try:
                result = combine([meeting.values[m] for m in members])
            except BaseException as error:
                with self._condition:
                    meeting.result, meeting.done = _Failed(error), True
                    self._condition.notify_all()
                raise
            with self._condition:
                meeting.result, meeting.done = result, True
                self._condition.notify_all()
        with self._condition:
            result = meeting.result
            self._book.leave(key, meeting)
        if isinstance(result, _Failed):
            raise ReplicaAborted(f"replica {replica} stopped at {label}: combining the values failed "
                                 f"({type(result.error).__name__}: {result.error})")
        return result

    def _wait_for(self, done: Callable[[], bool], key: Hashable, label: str, replica: int,
                  members: Sequence[int]) -> None:
        """Wait (holding the condition) until ``done()``; raise if the run was stopped, a replica
        failed, the replicas are deadlocked or the wait limit passed."""
        # A moment past the instances' own limit, so that a wait across instances names who is missing first.
        limit = wait_limit(self._wait_seconds) + LOCAL_MARGIN
        deadline = time.monotonic() + limit
        while not done():
            self._check_can_wait(key, label, replica, members)
            if time.monotonic() > deadline:
                arrived = self._book.meetings[key].values
                raise CollectiveMismatchError(f"replica {replica} waited {limit:g} s at {label} "
                                              f"for replicas {[m for m in members if m not in arrived]}")
            self._book.waiting[replica] = Waiting(key, label, members)
            self._condition.wait(timeout=1.0)
            self._book.waiting.pop(replica, None)

    def _check_can_wait(self, key: Hashable, label: str, replica: int, members: Sequence[int]) -> None:
        if self._aborted:
            raise ReplicaAborted(f"replica {replica} stopped at {label}: the run was interrupted")
        if self._failed is not None:
            raise ReplicaAborted(f"replica {replica} stopped at {label}: replica {self._failed} failed")
        if self._deadlock is not None:
            raise CollectiveMismatchError(self._deadlock)
        gone = self._book.gone(key, members, self._finished)
        if gone:
            raise gone_error(replica, label, gone)
        running = self._replicas - self._finished - {replica}
        if self._book.all_stuck(running):
            where = self._book.where(running)
            self._deadlock = str(deadlock_error(f"replica {replica} at {label}" + (f"; {where}" if where else "")))
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
