"""Advancing several replicas of a stepped run together, one thread each, so their collectives meet.

``ReplicaThreads`` is also the replicas' communicator while the stepped run lasts. Unlike the
``Communicator`` of a whole run, it knows at every moment which replica is running, which waits in a
collective for the rest of its group and which has stopped, so a command returns exactly when every
replica has either done what it was asked or waits for others; a replica may stay waiting across
commands (replicas whose control flow diverged) and goes on when its group arrives.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Hashable, Optional, Sequence

from ..replication.communicator import POLL_SECONDS, CollectiveMismatchError, ReplicaAborted
from ..state.snapshot import uninterrupted
from .interpreter import ReplicaInterpreter

Command = Callable[[ReplicaInterpreter], None]


class ReplicaThreads:
    """Runs a command on every replica's interpreter in its own thread and waits until all stop."""

    def __init__(self, interpreters: list[ReplicaInterpreter]):
        count = len(interpreters)
        self._interpreters = interpreters
        self._condition = threading.Condition()
        self._slots: dict[Hashable, dict[int, Any]] = {}
        self._taken: dict[Hashable, int] = {}
        self._busy = [False] * count
        self._waiting: list[Optional[tuple[Hashable, str, Sequence[int]]]] = [None] * count
        self._errors: list[Optional[BaseException]] = [None] * count
        self._aborted = False
        for interpreter in interpreters:
            interpreter.program.communicator = self
            interpreter.program.stop_requested = False

    def waiting_at(self, replica: int) -> Optional[str]:
        """The collective ``replica`` waits in, if it waits."""
        waiting = self._waiting[replica]
        return None if waiting is None else waiting[1]

    # ----- the communicator the replicas' collectives call -----
    def combine(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        """As ``Communicator.combine``; each member combines for itself, from copies."""
        return combine(self.exchange(key, label, replica, members, value.copy()))

    def exchange(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any) -> list:
        with self._condition:
            slot = self._slots.setdefault(key, {})
            slot[replica] = value
            if len(slot) < len(members):
                self._waiting[replica] = (key, label, members)
                self._condition.notify_all()
                while len(slot) < len(members):
                    if self._aborted:
                        self._waiting[replica] = None
                        raise ReplicaAborted(f"replica {replica} stopped waiting at {label}: the stepped "
                                             "run was stopped")
                    self._condition.wait()
            else:
                # Release the waiting members in the same breath, so no command ends in between.
                for member in members:
                    self._waiting[member] = None
                self._condition.notify_all()
            values = [slot[m] for m in members]
            self._taken[key] = self._taken.get(key, 0) + 1
            if self._taken[key] == len(members):
                del self._slots[key], self._taken[key]
            return values

    # ----- commands -----
    def run(self, command: Command, poll: Optional[Callable[[], None]] = None) \
            -> Optional[tuple[int, BaseException]]:
        """Apply ``command`` once to every replica that has not finished; return the first failure
        (replica, error), after stopping every replica, or None. ``poll`` is called now and then
        while the replicas run."""
        submitted: set[int] = set()
        with self._condition:
            while True:
                if not any(self._errors):
                    for replica, interpreter in enumerate(self._interpreters):
                        if not self._busy[replica] and replica not in submitted and not interpreter.finished:
                            self._busy[replica] = True
                            submitted.add(replica)
                            # A daemon thread: one left waiting in a collective never holds up exit.
                            threading.Thread(target=self._work, args=(replica, command), daemon=True,
                                             name=f"stepper-replica-{replica}").start()
                if all(not busy or waiting is not None for busy, waiting in zip(self._busy, self._waiting)):
                    break
                self._condition.wait(POLL_SECONDS if poll is not None else None)
                if poll is not None:
                    poll()
            failure = self._failure()
        if failure is not None:
            self.abort()
        return failure

    def _work(self, replica: int, command: Command) -> None:
        error = None
        try:
            command(self._interpreters[replica])
        except BaseException as raised:  # handed to the caller of run()
            error = raised
        with self._condition:
            if error is not None:
                self._errors[replica] = error
            self._busy[replica] = False
            self._condition.notify_all()

    def _failure(self) -> Optional[tuple[int, BaseException]]:
        for replica, error in enumerate(self._errors):
            if error is not None and not isinstance(error, ReplicaAborted):
                return replica, error
        waiting = {r: w for r, w in enumerate(self._waiting) if w is not None}
        for replica, (key, label, members) in waiting.items():
            gone = [m for m in members if m not in self._slots.get(key, {})
                    and self._interpreters[m].finished]
            if gone:
                return replica, CollectiveMismatchError(
                    f"replica {replica} waits at {label} for replica(s) {gone}, which finished the run "
                    "without reaching it: every replica of a group must run the same collectives")
        unfinished = [r for r, interpreter in enumerate(self._interpreters) if not interpreter.finished]
        if waiting and all(r in waiting for r in unfinished):
            where = "; ".join(f"replica {r} at {label}" for r, (_, label, _) in sorted(waiting.items()))
            first = min(waiting)
            return first, CollectiveMismatchError(
                f"the replicas reached different collectives and wait on each other: {where}")
        return None

    def abort(self) -> None:
        """Stop every replica (those waiting in a collective raise, those running stop at their next
        op or loop iteration) and wait until they have, even through an interrupt."""
        for interpreter in self._interpreters:
            interpreter.program.stop_requested = True
        with self._condition:
            self._aborted = True
            self._condition.notify_all()
        uninterrupted([self._wait_until_idle])

    def _wait_until_idle(self) -> None:
        with self._condition:
            while any(self._busy):
                self._condition.wait()
