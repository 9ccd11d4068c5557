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

import threading
from time import perf_counter
from typing import Any, Callable, Hashable, Optional, Sequence

from greenlet import greenlet

from .communicator import POLL_SECONDS
from .rendezvous import CollectiveMismatchError, MeetingBook, ReplicaAborted, Waiting, deadlock_error, gone_error


class TurnTakingCommunicator:
    """The collectives of replicas taking turns (``take_turns``); ``replicas`` are their global
    indices, in the order of the callables given to ``take_turns``."""

    def __init__(self, replicas: Sequence[int]):
        self._replicas = list(replicas)
        self._book = MeetingBook()
        self._finished: set[int] = set()
        self._moves = 0  # values given and replicas finished: what lets a waiting replica go on
        self._stop: Optional[BaseException] = None
        self._scheduler: Optional[greenlet] = None

    def exchange(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any) -> list:
        """Give ``value``; every member's value (in member order) once all have given theirs, in a list
        of this member's own."""
        return list(self.combine(key, label, replica, members, value, tuple))

    def combine(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        """Give ``value``; ``combine`` of every member's value (in member order), computed once by the
        last member to arrive. Every member gets the same result object."""
        if self._stop is not None:
            raise self._stopped(replica)
        meeting = self._book.give(key, replica, members, value)
        self._moves += 1
        values = meeting.values
        if len(values) == len(members):
            meeting.result = combine([values[m] for m in members])
            meeting.done = True
        while not meeting.done:
            self._wait(key, label, replica, members)
        self._book.leave(key, meeting)
        return meeting.result

    def take_turns(self, works: Sequence[Callable[[], None]],
                   poll: Optional[Callable[[], None]] = None) -> None:
        """Run ``works`` (one per replica) to the end, taking turns. The first error of a replica
        (or an interrupt) stops every other replica at its collective, then is raised here."""
        self._scheduler = greenlet.getcurrent()
        turns = _idle_turns(len(works), self._scheduler)
        pending = list(range(len(turns)))
        next_poll = perf_counter() + POLL_SECONDS
        try:
            for index, work in enumerate(works):  # each runs until its first wait
                self._went_on(turns, pending, index, turns[index].switch(work))
            while pending:
                moves = self._moves
                for index in list(pending):
                    self._went_on(turns, pending, index, turns[index].switch())
                if pending and moves == self._moves:
                    raise self._deadlock()
                if poll is not None and perf_counter() > next_poll:
                    poll()
                    next_poll = perf_counter() + POLL_SECONDS
        except BaseException as error:
            self._stop_all([turn for turn, replica in zip(turns, self._replicas) if replica in self._book.waiting],
                           error)
            raise
        finally:  # those not suspended in a work serve the next run
            _IDLE.turns.extend(turn for turn, replica in zip(turns, self._replicas)
                               if not turn.dead and replica not in self._book.waiting)

    def _went_on(self, turns: list[greenlet], pending: list[int], index: int, outcome: Any) -> None:
        """Replica ``index`` handed the thread back: waiting, or ``_FINISHED`` with its work."""
        if outcome is _FINISHED:
            pending.remove(index)
            self._finished.add(self._replicas[index])
            self._moves += 1

    def _wait(self, key: Hashable, label: str, replica: int, members: Sequence[int]) -> None:
        """Hand the thread to the next replica; raise if the run stops meanwhile."""
        gone = self._finished and self._book.gone(key, members, self._finished)
        if gone:
            raise gone_error(replica, label, gone)
        waiting = self._book.waiting
        waiting[replica] = Waiting(key, label, members)
        self._scheduler.switch()
        del waiting[replica]
        if self._stop is not None:
            raise self._stopped(replica, label)

    def _deadlock(self) -> CollectiveMismatchError:
        return deadlock_error(self._book.where())

    def _stopped(self, replica: int, label: str = "") -> BaseException:
        stop = self._stop
        if isinstance(stop, CollectiveMismatchError):
            return CollectiveMismatchError(str(stop))
        at = f" at {label}" if label else ""
        if isinstance(stop, KeyboardInterrupt):
            return ReplicaAborted(f"replica {replica} stopped{at}: the run was interrupted")
        return ReplicaAborted(f"replica {replica} stopped{at}: another replica failed "
                              f"({type(stop).__name__}: {stop})")

    def _stop_all(self, waiting: list[greenlet], error: BaseException) -> None:
        """Every replica suspended at a collective raises there and ends (its frames unwind here)."""
        self._stop = error
        for turn in waiting:
            if not turn.dead:
                try:
                    turn.switch()
                except (ReplicaAborted, CollectiveMismatchError):
                    pass


#: What a turn hands back to the scheduler when its work is done (a waiting one hands back nothing).
_FINISHED = object()

# Turns kept between runs, per thread (a greenlet lives in the thread that made it): starting a new
# greenlet costs about ten times a switch, and a run of four replicas would start four.
_IDLE = threading.local()


def _idle_turns(count: int, scheduler: greenlet) -> list[greenlet]:
    """``count`` greenlets under ``scheduler`` that each run a work when switched to with it, then
    hand back ``_FINISHED`` and wait for the next (taken from the idle ones, else new)."""
    idle = _IDLE.__dict__.setdefault("turns", [])
    while len(idle) < count:
        idle.append(greenlet(_serve))
    taken = idle[-count:]
    del idle[-count:]
    for turn in taken:
        turn.parent = scheduler
    return taken


def _serve(work: Callable[[], None]) -> None:
    while True:
        work()
        del work  # an idle turn keeps nothing of the run it served alive
        work = greenlet.getcurrent().parent.switch(_FINISHED)
