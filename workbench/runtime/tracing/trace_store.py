"""A run's events in compact form: the events walked, and repeat iterations kept as runs of copies.

Once an iteration of a repeat leaves every clock it touches later by the same number of cycles as
the iteration before it did, every further iteration is that one again, shifted: the timeline stops
walking and records a ``RepeatRun`` instead. A loop of a million iterations then keeps the events of
a few; the events are expanded from this form only when they are read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from workbench.analysis.op_events import TraceEvent

from .trace_totals import Totals


@dataclass(frozen=True, slots=True)
class RepeatRun:
    """``count`` more iterations of a repeat, copies of the stored events ``[start, start + length)``
    (its last walked iteration, whose first event is number ``first`` of the replica's trace). Copy j
    is ``j * period`` cycles later, ``j`` iterations further at position ``depth`` of ``iterations``,
    and ``j * events`` events further on in the trace (``events``: one iteration's events, counting
    the copies inside it)."""

    start: int
    length: int
    first: int
    events: int
    count: int
    period: int
    depth: int


@dataclass(slots=True)
class EventBudget:
    """How many more events the trace of a run may keep, over all replicas."""

    remaining: int


@dataclass(slots=True)
class IterationMark:
    """Where one repeat iteration began, and the totals of its events alone."""

    stored: int
    position: int
    totals: Totals


class ReplicaEvents:
    """One replica's events as the timeline walks them: stored compactly within the budget (else only
    counted), and added to the run's totals."""

    def __init__(self, totals: Totals, budget: EventBudget):
        self.stored: Optional[list[TraceEvent]] = []
        self.runs: list[RepeatRun] = []
        self.position = 0
        self._totals = totals
        self._budget = budget
        self._open: list[Totals] = []

    def add(self, event: TraceEvent) -> int:
        """Keep ``event`` (its end comes later, in ``finish``); returns its index in the replica's trace."""
        index = self.position
        self.position += 1
        if self.stored is not None:
            self._budget.remaining -= 1
            if self._budget.remaining < 0:
                self.stored, self.runs = None, []
            else:
                self.stored.append(event)
        return index

    def finish(self, event: TraceEvent, parent_kind: Optional[str]) -> None:
        self._totals.add(event, parent_kind)
        for totals in self._open:
            totals.add(event, parent_kind)

    def begin_iteration(self) -> IterationMark:
        mark = IterationMark(len(self.stored) if self.stored is not None else 0, self.position, Totals())
        self._open.append(mark.totals)
        return mark

    def end_iteration(self) -> None:
        self._open.pop()  # iterations nest: the last one begun ends first

    def repeat(self, mark: IterationMark, count: int, period: int, depth: int) -> None:
        """The iteration that began at ``mark`` (and has ended) runs ``count`` more times, each
        ``period`` cycles after the one before."""
        events = self.position - mark.position
        if self.stored is not None:
            self.runs.append(RepeatRun(mark.stored, len(self.stored) - mark.stored, mark.position, events,
                                       count, period, depth))
        self.position += count * events
        for totals in (self._totals, *self._open):
            totals.add_copies(mark.totals, count, period)

    def offset(self, base: int) -> None:
        """Number this replica's events from ``base`` on (replicas follow one another in a trace)."""
        for event in self.stored:
            if event.parent is not None:
                event.parent += base
        self.runs = [RepeatRun(run.start, run.length, run.first + base, run.events, run.count, run.period,
                               run.depth) for run in self.runs]


def expand(stored: list[TraceEvent], runs: list[RepeatRun]) -> Iterator[TraceEvent]:
    """Every event of one replica in execution order: the stored ones, and the copies of the runs."""
    ending: dict[int, list[RepeatRun]] = {}
    for run in sorted(runs, key=lambda run: -run.start):  # the innermost run first where several end
        ending.setdefault(run.start + run.length, []).append(run)

    def walk(start: int, stop: int, inside: int, copies: tuple) -> Iterator[TraceEvent]:
        for index in range(start, stop):
            event = stored[index]
            yield _copy(event, copies) if copies else event
            for run in ending.get(index + 1, ()):
                if run.start > inside:  # only runs nested in what is being walked
                    for j in range(1, run.count + 1):
                        yield from walk(run.start, run.start + run.length, run.start, copies + ((run, j),))

    return walk(0, len(stored), -1, ())


def _copy(event: TraceEvent, copies: tuple) -> TraceEvent:
    shift, parent, iterations = 0, event.parent, list(event.iterations)
    for run, j in copies:
        shift += j * run.period
        iterations[run.depth] += j
        if event.parent is not None and event.parent >= run.first:
            parent += j * run.events
    return TraceEvent(event.replica, event.ipu, event.ipus, event.op, event.kind, event.step, event.call_path,
                      tuple(iterations), parent, event.in_sequence, event.cycles, event.start_cycle + shift,
                      event.end_cycle + shift)
