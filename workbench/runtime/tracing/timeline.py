"""The timeline of a run: its record replayed over the flattened schedule with the cost model.

Each replica keeps one clock per IPU. An op starts when every IPU it occupies is free (both ends of
an ``ipu_copy``, every IPU of an ``all_reduce`` over IPUs) and after the ops an ``in_sequence`` block
puts before it, then holds those IPUs for its cycles. A collective over replicas starts on every
member of its group at the latest of their arrivals, so it ends at the same cycle on all of them.
A call site spends its overhead on its IPU (a repeat once per iteration), then the called graph's
ops follow; its event spans them. Only the branch a conditional took appears, and every iteration of
a repeat (iterations that only shift the one before are recorded as its copies, ``trace_store.py``).
"""
from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Optional

from workbench.analysis.cost_model import op_cycles, op_kind
from workbench.analysis.flatten import FlatSchedule, Frame, Step, flattened_schedule
from workbench.analysis.static_schedule import op_ipus
from workbench.ir import Graph, Ir, Op
from workbench.ir.device import Device
from workbench.ops.registry import op_def

from .trace import RunRecord, Trace, TraceEvent
from .trace_store import EventBudget, IterationMark, ReplicaEvents
from .trace_totals import Totals


@dataclass(slots=True)
class OpTiming:
    """What the timeline needs of one op, computed once per session."""

    kind: str
    cycles: int
    ipus: tuple[int, ...]
    after: tuple[Op, ...]
    in_sequence: bool
    members: Optional[Callable[[int], tuple[int, ...]]]


@dataclass(slots=True)
class LoopBody:
    """What the timeline needs to know of a repeat body to replace its iterations by shifted copies:
    the IPUs its ops occupy, its ops, and whether every iteration runs the same ops on its own (no
    conditional, no collective across replicas)."""

    ipus: tuple[int, ...]
    ops: frozenset[Op]
    alike: bool


@dataclass(slots=True)
class TimelinePlan:
    """The flattened schedule with each frame's own steps in execution order, and every op's timing."""

    flat: FlatSchedule
    frame_steps: dict[Frame, list[Step]]
    timings: dict[Op, OpTiming]
    bodies: dict[Frame, LoopBody] = field(default_factory=dict)

    def body(self, frame: Frame) -> LoopBody:
        """The facts of the repeat body ``frame`` (its steps are those from ``first`` to ``last``)."""
        if frame not in self.bodies:
            steps = self.flat.steps[frame.first:frame.last + 1]
            ops = frozenset(step.op for step in steps)
            self.bodies[frame] = LoopBody(
                tuple(sorted({ipu for op in ops for ipu in self.timings[op].ipus})), ops,
                not any(op_def(op.type).branches or self.timings[op].members is not None for op in ops))
        return self.bodies[frame]


def _group_members(op: Op) -> Optional[Callable[[int], tuple[int, ...]]]:
    grouping = op.attrs.get("group")
    if op_kind(op) != "collective" or grouping is None:
        return None
    return lambda replica: tuple(grouping.members(grouping.assignment[replica]))


def make_plan(ir: Ir, steps_of: dict[Graph, list[Op]], device: Device) -> TimelinePlan:
    """The plan of ``ir`` whose graphs run their ops in ``steps_of[graph]`` order."""
    flat = flattened_schedule(ir)
    frame_steps: dict[Frame, list[Step]] = defaultdict(list)
    for step in flat.steps:
        frame_steps[step.frame].append(step)
    for frame, steps in frame_steps.items():
        position = {op: i for i, op in enumerate(steps_of[frame.graph])}
        steps.sort(key=lambda step: position[step.op])
    followed = {before for graph in ir.graphs for op in graph._ops for before in op.after}
    timings = {}
    for step in flat.steps:
        op = step.op
        if op not in timings:
            timings[op] = OpTiming(op_kind(op), op_cycles(op, device), op_ipus(op), op.after,
                                   bool(op.after) or op in followed, _group_members(op))
    return TimelinePlan(flat, frame_steps, timings)


class Timeline:
    """Builds the traces of one session's runs; the plan is made the first time a trace is read."""

    def __init__(self, ir: Ir, steps_of: dict[Graph, list[Op]], device: Device):
        self._ir = ir
        self._steps_of = steps_of
        self._device = device
        self._plan: Optional[TimelinePlan] = None

    def __call__(self, record: RunRecord) -> Trace:
        if self._plan is None:
            self._plan = make_plan(self._ir, self._steps_of, self._device)
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


def _meet_at_collectives(walkers: list[Generator]) -> None:
    """Advance every replica's walk; a walk pauses at each collective until its whole group arrives,
    then all members resume at the latest arrival."""
    waiting: dict[Any, dict[int, int]] = {}
    ready = deque((replica, None) for replica in range(len(walkers)))
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


class _ReplicaWalk:
    """One replica's walk through the run, handing its events in execution order to ``events``."""

    def __init__(self, plan: TimelinePlan, replica: int, record: RunRecord, events: ReplicaEvents):
        self.plan = plan
        self.replica = replica
        self.events = events
        self.free: dict[int, int] = defaultdict(int)
        self.last_end: dict[Op, int] = {}
        self.occurrences: dict[Op, int] = defaultdict(int)
        self.branches = iter(record.branches[replica])
        stamps = record.timestamps[replica] if record.timestamps is not None else None
        self.stamp = iter(stamps).__next__ if stamps is not None else None
        self.started = record.started

    def run(self) -> Generator:
        yield from self.visit(self.plan.flat.main, None, None, ())

    def visit(self, frame: Frame, parent: Optional[int], parent_kind: Optional[str],
              iterations: tuple[int, ...]) -> Generator:
        """Walk ``frame``'s steps; returns the first start and last end among its events."""
        first, last = None, None
        free, timings = self.free, self.plan.timings
        for step in self.plan.frame_steps.get(frame, ()):
            op, timing = step.op, timings[step.op]
            start = max(free[ipu] for ipu in timing.ipus)
            for before in timing.after:
                start = max(start, self.last_end.get(before, 0))
            if timing.members is not None:
                group = timing.members(self.replica)
                if len(group) > 1:
                    key = (op, self.occurrences[op], group)
                    self.occurrences[op] += 1
                    start = yield key, group, start
            event = TraceEvent(self.replica, timing.ipus[0], timing.ipus, op, timing.kind, step.index,
                               frame.call_path, iterations, parent, timing.in_sequence, timing.cycles, start)
            index = self.events.add(event)
            if self.stamp is not None:
                event.start_seconds = self.stamp() - self.started
            if step.children:
                event.start_cycle, event.end_cycle = yield from self.call(step, timing, event, index, iterations)
            else:
                event.end_cycle = start + timing.cycles
                for ipu in timing.ipus:
                    free[ipu] = event.end_cycle
            self.last_end[op] = event.end_cycle
            if self.stamp is not None:
                event.end_seconds = self.stamp() - self.started
            self.events.finish(event, parent_kind)
            first = event.start_cycle if first is None else min(first, event.start_cycle)
            last = event.end_cycle if last is None else max(last, event.end_cycle)
        return first, last

    def call(self, step: Step, timing: OpTiming, event: TraceEvent, index: int,
             iterations: tuple[int, ...]) -> Generator:
        """The call site's overhead, then the frame(s) it runs; returns the span of it all."""
        op, ipu = step.op, timing.ipus[0]
        start = end = event.start_cycle
        self.free[ipu] = start
        definition = op_def(op.type)
        if definition.repeats:
            count = op.attrs["repeat_count"]
            event.cycles = timing.cycles * count
            return (yield from self.iterate(step.children[0], count, timing, index, event.kind, iterations, start))
        if definition.branches:
            logged, taken = next(self.branches)
            if logged is not op:
                raise RuntimeError(f"the run's branch log has {logged.name} where {op.name} ran")
            frame = step.children[0 if taken else 1]
        else:
            frame = step.children[0]
        self.free[ipu] += timing.cycles
        end = max(end, self.free[ipu])
        first, last = yield from self.visit(frame, index, event.kind, iterations)
        if first is not None:
            start, end = min(start, first), max(end, last)
        return start, end

    def iterate(self, body: Frame, count: int, timing: OpTiming, index: int, kind: str,
                iterations: tuple[int, ...], start: int) -> Generator:
        """A repeat's iterations from ``start``: each its overhead on the repeat's IPU, then the body.
        Once an iteration moves every clock the body touches on by the same cycles as the one before,
        the rest are recorded as copies of it (never in a profiled run, whose seconds all differ)."""
        ipu, end = timing.ipus[0], start
        facts = self.plan.body(body)
        clocks = tuple(dict.fromkeys((ipu, *facts.ipus)))  # the repeat's own IPU first
        alike = facts.alike and self.stamp is None
        previous: Optional[list[int]] = None
        for i in range(count):
            mark = self.events.begin_iteration()
            self.free[ipu] += timing.cycles
            end = max(end, self.free[ipu])
            first, last = yield from self.visit(body, index, kind, iterations + (i,))
            self.events.end_iteration()
            if first is not None:
                start, end = min(start, first), max(end, last)
            if not alike:
                continue
            now = [self.free[clock] for clock in clocks]
            if previous is not None and len({a - b for a, b in zip(now, previous)}) == 1 and i + 1 < count:
                end = self._copy_iterations(mark, facts, clocks, count - i - 1, now[0] - previous[0],
                                            len(iterations), end)
                break
            previous = now
        return start, end

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
