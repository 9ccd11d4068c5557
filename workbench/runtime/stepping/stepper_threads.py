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

from ..replication.communicator import POLL_SECONDS
from ..replication.rendezvous import MeetingBook, ReplicaAborted, Waiting, deadlock_error, gone_error
from ..state.snapshot import uninterrupted
from .interpreter import ReplicaInterpreter

Command = Callable[[ReplicaInterpreter], None]


class ReplicaThreads:
    """Runs a command on every replica's interpreter in its own thread and waits until all stop."""

    def __init__(self, interpreters: list[ReplicaInterpreter]):
        count = len(interpreters)
        self._interpreters = interpreters
        self._condition = threading.Condition()
        self._book = MeetingBook()
        self._busy = [False] * count
        self._errors: list[Optional[BaseException]] = [None] * count
        self._aborted = False
        for interpreter in interpreters:
            interpreter.program.communicator = self
            interpreter.program.stop_requested = False

    def waiting_at(self, replica: int) -> Optional[str]:
        """The collective ``replica`` waits in, if it waits."""
        waiting = self._book.waiting.get(replica)
        return None if waiting is None else waiting.label

    # ----- the communicator the replicas' collectives call -----
    def combine(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        """As ``Communicator.combine``; each member combines for itself, from copies."""
        return combine(self.exchange(key, label, replica, members, value.copy()))

    def exchange(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any) -> list:
        with self._condition:
            book = self._book
            meeting = book.give(key, replica, members, value)
            slot = meeting.values
            if len(slot) < len(members):
                book.waiting[replica] = Waiting(key, label, members)
                self._condition.notify_all()
                while len(slot) < len(members):
                    if self._aborted:
                        book.waiting.pop(replica, None)
                        raise ReplicaAborted(f"replica {replica} stopped waiting at {label}: the stepped "
                                             "run was stopped")
                    self._condition.wait()
            else:
                # Release the waiting members in the same breath, so no command ends in between.
                for member in members:
                    book.waiting.pop(member, None)
                self._condition.notify_all()
            values = [slot[m] for m in members]
            book.leave(key, meeting)
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
                if all(not busy or replica in self._book.waiting for replica, busy in enumerate(self._busy)):
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
        book = self._book
        finished = {r for r, interpreter in enumerate(self._interpreters) if interpreter.finished}
        for replica, (key, label, members) in sorted(book.waiting.items()):
            gone = book.gone(key, members, finished)
            if gone:
                return replica, gone_error(replica, label, gone)
        unfinished = [r for r in range(len(self._interpreters)) if r not in finished]
        if book.waiting and all(r in book.waiting for r in unfinished):
            return min(book.waiting), deadlock_error(book.where())
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
