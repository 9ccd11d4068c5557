"""The timeline of a run: its record replayed over the flattened schedule with the cost model.

The clock rules are the analysis layer's (``workbench.analysis.clock``), shared with the static
schedule. A run adds what only it knows: a collective over replicas starts on every member of its
group at the latest of their arrivals, so it ends at the same cycle on all of them; only the branch a
conditional took appears; and every iteration of a repeat does (iterations that only shift the one
before are recorded as its copies, ``trace_store.py``).
"""
from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from workbench.analysis.clock import ClockPlan, ClockWalker, LoopBody, Meeting, OpTiming, Walk, clock_plan
from workbench.analysis.flatten import Frame, Step
from workbench.ir import Graph, Ir, Op
from workbench.ir.device import Device
from workbench.ops.registry import op_def

from .trace import RunRecord, Trace, TraceEvent
from .trace_store import EventBudget, IterationMark, ReplicaEvents
from .trace_totals import Totals


class Timeline:
    """Builds the traces of one session's runs; the plan is made the first time a trace is read."""

    def __init__(self, ir: Ir, steps_of: dict[Graph, list[Op]], device: Device):
        self._ir = ir
        self._steps_of = steps_of
        self._device = device
        self._plan: Optional[ClockPlan] = None

    def __call__(self, record: RunRecord) -> Trace:
        if self._plan is None:
            self._plan = clock_plan(self._ir, self._device, self._steps_of)
        totals, budget = Totals(), EventBudget(record.event_limit)
        replicas = [ReplicaEvents(totals, budget) for _ in record.branches]
        walkers = [_ReplicaWalk(self._plan, replica, record, events).run() for replica, events in enumerate(replicas)]
        _meet_at_collectives(walkers)
        if budget.remaining >= 0:
            base = 0
            for events in replicas:
                events.offset(base)
                base = base + events.position
        return Trace(replicas, totals, self._device.clock_hz, record.timestamps is not None, record.seconds)


def _meet_at_collectives(walkers: Sequence[Walk]) -> None:
    """Advance every replica's walk; a walk pauses at each collective until its whole group arrives,
    then all members resume at the latest arrival."""
    waiting: dict[Any, dict[int, int]] = {}
    ready: deque[tuple[int, Optional[int]]] = deque((replica, None) for replica in range(len(walkers)))
    while ready:
        replica, start = ready.popleft()
        try:
            key, group, arrival = walkers[replica].send(start)
        except StopIteration:
            continue
        arrivals = waiting.setdefault(key, {})
        arrivals[replica] = arrival
        if len(arrivals) == len(group):
            del waiting[key]
            start = max(arrivals.values())
            ready.extend((member, start) for member in group)
    if waiting:
        stuck = ", ".join(f"{key[0].name} (replicas {sorted(arrivals)})" for key, arrivals in waiting.items())
        raise RuntimeError(f"the run's record does not replay: replicas wait at collectives {stuck}")


@dataclass(slots=True)
class _Loop:
    """A repeat being walked: its body's facts, the clocks it moves, whether its iterations may be
    copied, the clocks after the iteration before, and the mark of the current one."""

    facts: LoopBody
    clocks: tuple[int, ...]
    alike: bool
    previous: Optional[list[int]] = None
    mark: Optional[IterationMark] = None


class _ReplicaWalk(ClockWalker):
    """One replica's walk through the run, handing its events in execution order to ``events``."""

    def __init__(self, plan: ClockPlan, replica: int, record: RunRecord, events: ReplicaEvents):
        super().__init__(plan, replica)
        self.events = events
        self.occurrences: dict[Op, int] = defaultdict(int)
        self.branches = iter(record.branches[replica])
        stamps = record.timestamps[replica] if record.timestamps is not None else None
        self.stamp = iter(stamps).__next__ if stamps is not None else None
        self.started = record.started
        self._loops: list[_Loop] = []

    def branch_frames(self, step: Step) -> Sequence[Frame]:
        """A conditional runs the branch its log says; other call sites their one graph."""
        if not op_def(step.op.type).branches:
            return step.children
        logged, taken = next(self.branches)
        if logged is not step.op:
            raise RuntimeError(f"the run's branch log has {logged.name} where {step.op.name} ran")
        return (step.children[0 if taken else 1],)

    def meet(self, op: Op, timing: OpTiming, start: int) -> Meeting:
        assert timing.members is not None and self.replica is not None
        group = timing.members(self.replica)
        if len(group) == 1:
            return start
        key = (op, self.occurrences[op], group)
        self.occurrences[op] += 1
        resumed = yield key, group, start
        assert resumed is not None
        return resumed

    def new_event(self, step: Step, timing: OpTiming, start: int, parent: Optional[int],
                  iterations: tuple[int, ...]) -> tuple[TraceEvent, int]:
        event = TraceEvent(self.replica, timing.ipus[0], timing.ipus, step.op, timing.kind, step.index,
                           step.frame.call_path, iterations, parent, timing.in_sequence, timing.cycles, start)
        index = self.events.add(event)
        if self.stamp is not None:
            event.start_seconds = self.stamp() - self.started
        return event, index

    def finish_event(self, event: TraceEvent, parent: Optional[TraceEvent]) -> None:
        if self.stamp is not None:
            event.end_seconds = self.stamp() - self.started
        self.events.finish(event, None if parent is None else parent.kind)

    def begin_iteration(self, body: Frame, index: int, timing: OpTiming) -> None:
        if index == 0:
            facts = self.plan.body(body)
            clocks = tuple(dict.fromkeys((timing.ipus[0], *facts.ipus)))  # the repeat's own IPU first
            self._loops.append(_Loop(facts, clocks, facts.alike and self.stamp is None))
        self._loops[-1].mark = self.events.begin_iteration()

    def end_iteration(self) -> None:
        self.events.end_iteration()

    def after_iteration(self, body: Frame, index: int, count: int, timing: OpTiming, depth: int,
                        end: int) -> Optional[int]:
        """Once an iteration moves every clock the body touches on by the same cycles as the one
        before, the rest are recorded as copies of it (never in a profiled run, whose seconds all
        differ)."""
        loop = self._loops[-1]
        copied_to = None
        if loop.alike:
            now = [self.free[clock] for clock in loop.clocks]
            previous = loop.previous
            if previous is not None and len({a - b for a, b in zip(now, previous)}) == 1 and index + 1 < count:
                assert loop.mark is not None
                copied_to = self._copy_iterations(loop.mark, loop.facts, loop.clocks, count - index - 1,
                                                  now[0] - previous[0], depth, end)
            loop.previous = now
        if copied_to is not None or index + 1 == count:
            self._loops.pop()
        return copied_to

    def _copy_iterations(self, mark: IterationMark, facts: LoopBody, clocks: tuple[int, ...], count: int,
                         period: int, depth: int, end: int) -> int:
        """Record ``count`` more iterations as copies of the last, each ``period`` cycles later, and move
        the clocks past them; returns the repeat's new end."""
        self.events.repeat(mark, count, period, depth)
        shift = count * period
        for clock in clocks:
            self.free[clock] += shift
        for op in facts.ops:
            if op in self.last_end:
                self.last_end[op] += shift
        return end + shift
