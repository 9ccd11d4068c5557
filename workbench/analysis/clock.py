"""One clock walker for the static schedule and for the timeline of a run: the rules of simulated time,
written once, with hooks that each walk overrides (torch.fx ``Interpreter``'s shape).

The walker keeps one clock per IPU. An op starts when every IPU it occupies is free (both ends of an
``ipu_copy``, every IPU of an ``all_reduce`` over IPUs) and after the ops an ``in_sequence`` block
puts before it, then holds those IPUs for its cost-model cycles. A call site spends its overhead on
its IPU before each frame it opens (a repeat once per iteration), then that frame's ops follow; its
event spans its overhead and the ops it called.

Hooks: ``branch_frames`` (which frames of a call site run: the static schedule walks both branches
of a conditional, a run the one it took), ``iteration_count`` (a repeat's iterations to walk: one
drawn statically, every one in a run), ``meet`` (a generator: where a collective waits for its group,
nothing statically), ``new_event`` and ``finish_event`` (what records an op), and ``iterate`` (a
run replaces alike iterations with copies). A walk is a generator so that ``meet`` can pause it; a
walk that never meets runs with ``run_to_end``.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Generator, Mapping, Optional, Sequence

from workbench.ir import Graph, Ir, Op
from workbench.ir.device import Device
from workbench.ops.registry import op_def, op_ipus

from .cost_model import op_cost
from .flatten import FlatSchedule, Frame, Step, flattened_schedule
from .op_events import TraceEvent

#: What a walk yields at a meeting: (key, group, arrival); it is sent back the cycle it resumes at. A walk
#: of a frame returns the first start and the last end of its events (None without any); a meeting
#: returns the cycle the op starts at; a call site its span.
Walk = Generator[tuple, Optional[int], tuple[Optional[int], Optional[int]]]
Meeting = Generator[tuple, Optional[int], int]
Span = Generator[tuple, Optional[int], tuple[int, int]]


@dataclass(slots=True)
class OpTiming:
    """What the walker needs of one op, computed once: its kind and cycles, the IPUs it occupies (where
    it runs first), the ops it follows, whether an ``in_sequence`` block orders it, and for a collective
    over replicas the members of each replica's group."""

    kind: str
    cycles: int
    ipus: tuple[int, ...]
    after: tuple[Op, ...]
    in_sequence: bool
    members: Optional[Callable[[int], tuple[int, ...]]]


@dataclass(slots=True)
class LoopBody:
    """A repeat body as a walk may copy it: the IPUs its ops occupy, its ops, and whether every
    iteration runs the same ops on its own (no conditional, no collective across replicas)."""

    ipus: tuple[int, ...]
    ops: frozenset[Op]
    alike: bool


@dataclass(slots=True)
class ClockPlan:
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


def _group_members(op: Op, kind: str) -> Optional[Callable[[int], tuple[int, ...]]]:
    grouping = op.attrs.get("group") if kind == "collective" else None
    if grouping is None:
        return None
    return lambda replica: tuple(grouping.members(grouping.assignment[replica]))


def sequenced_ops(ir: Ir) -> set[Op]:
    """The ops an ``in_sequence`` block ordered: those with ops before them, and those ops."""
    ops: set[Op] = set()
    for graph in ir.graphs:
        for op in graph.ops:
            if op.after:
                ops.add(op)
                ops.update(op.after)
    return ops


def clock_plan(ir: Ir, device: Device, steps_of: Optional[Mapping[Graph, Sequence[Op]]] = None) -> ClockPlan:
    """The plan of ``ir`` on ``device``; each graph's ops run in ``steps_of[graph]`` order (by default
    the order of the flattened schedule)."""
    flat = flattened_schedule(ir)
    sequenced = sequenced_ops(ir)
    frame_steps: dict[Frame, list[Step]] = defaultdict(list)
    timings: dict[Op, OpTiming] = {}
    for step in flat.steps:
        frame_steps[step.frame].append(step)
        op = step.op
        if op not in timings:
            kind, cycles = op_cost(op, device)
            timings[op] = OpTiming(kind, cycles, op_ipus(op), op.after, op in sequenced, _group_members(op, kind))
    if steps_of is not None:
        for frame, steps in frame_steps.items():
            position = {op: i for i, op in enumerate(steps_of[frame.graph])}
            steps.sort(key=lambda step: position[step.op])
    return ClockPlan(flat, frame_steps, timings)


class ClockWalker:
    """Walks a ``ClockPlan`` for one replica (``replica`` None: every replica alike), calling the hooks."""

    def __init__(self, plan: ClockPlan, replica: Optional[int] = None):
        self.plan = plan
        self.replica = replica
        self.free: dict[int, int] = defaultdict(int)
        self.last_end: dict[Op, int] = {}

    # ----- hooks -----
    def branch_frames(self, step: Step) -> Sequence[Frame]:
        """The frames a call site runs, in order (every one it has, by default)."""
        return step.children

    def iteration_count(self, step: Step) -> int:
        """How many iterations of a repeat to walk (all of them, by default)."""
        return step.op.attrs["repeat_count"]

    def meet(self, op: Op, timing: OpTiming, start: int) -> Meeting:
        """Where an op waits for other replicas; returns the cycle it starts at (``start`` by default)."""
        return start
        yield  # a generator: a walk that meets pauses here

    def new_event(self, step: Step, timing: OpTiming, start: int, parent: Optional[int],
                  iterations: tuple[int, ...]) -> tuple[TraceEvent, int]:
        """The record of ``step`` starting at ``start``, and its index (what its callees name as parent)."""
        raise NotImplementedError

    def finish_event(self, event: TraceEvent, parent: Optional[TraceEvent]) -> None:
        """``event`` has its end (called after the ops it called)."""

    def begin_iteration(self, body: Frame, index: int, timing: OpTiming) -> None:
        """A repeat (timed by ``timing``) starts iteration ``index`` of its ``body``."""

    def end_iteration(self) -> None:
        """A repeat ends an iteration."""

    def after_iteration(self, body: Frame, index: int, count: int, timing: OpTiming, depth: int,
                        end: int) -> Optional[int]:
        """After iteration ``index`` of ``count``: the repeat's end if the walk has accounted for the
        rest of the iterations itself (then the loop stops), None to go on."""
        return None

    # ----- the rules -----
    def run(self) -> Walk:
        """Walk the main graph."""
        return (yield from self.visit(self.plan.flat.main, None, None, ()))

    def visit(self, frame: Frame, parent: Optional[int], parent_event: Optional[TraceEvent],
              iterations: tuple[int, ...]) -> Walk:
        """Walk ``frame``'s steps; returns the first start and the last end among its events."""
        first: Optional[int] = None
        last: Optional[int] = None
        free, timings, last_end = self.free, self.plan.timings, self.last_end
        for step in self.plan.frame_steps.get(frame, ()):
            op = step.op
            timing = timings[op]
            ipus = timing.ipus
            start = free[ipus[0]] if len(ipus) == 1 else max(free[ipu] for ipu in ipus)
            for before in timing.after:
                start = max(start, last_end.get(before, 0))
            if timing.members is not None:
                start = yield from self.meet(op, timing, start)
            event, index = self.new_event(step, timing, start, parent, iterations)
            if step.children:
                event.start_cycle, event.end_cycle = yield from self.call(step, timing, event, index, iterations)
                end = event.end_cycle
            else:
                end = event.end_cycle = start + timing.cycles
                for ipu in ipus:
                    free[ipu] = end
            last_end[op] = end
            self.finish_event(event, parent_event)
            first = event.start_cycle if first is None else min(first, event.start_cycle)
            last = end if last is None else max(last, end)
        return first, last

    def call(self, step: Step, timing: OpTiming, event: TraceEvent, index: int,
             iterations: tuple[int, ...]) -> Span:
        """The call site's overhead before each frame it opens, then that frame; returns its span."""
        ipu = timing.ipus[0]
        start = end = event.start_cycle
        self.free[ipu] = start
        if op_def(step.op.type).repeats:
            count = self.iteration_count(step)
            event.cycles = timing.cycles * count
            return (yield from self.iterate(step.children[0], count, timing, event, index, iterations, start))
        for frame in self.branch_frames(step):
            self.free[ipu] += timing.cycles
            end = max(end, self.free[ipu])
            first, last = yield from self.visit(frame, index, event, iterations)
            if first is not None and last is not None:
                start, end = min(start, first), max(end, last)
        return start, end

    def iterate(self, body: Frame, count: int, timing: OpTiming, event: TraceEvent, index: int,
                iterations: tuple[int, ...], start: int) -> Span:
        """A repeat's ``count`` iterations from ``start``: each its overhead on the repeat's IPU, then
        the body; returns the span of them all."""
        ipu, end = timing.ipus[0], start
        for i in range(count):
            self.begin_iteration(body, i, timing)
            self.free[ipu] += timing.cycles
            end = max(end, self.free[ipu])
            first, last = yield from self.visit(body, index, event, iterations + (i,))
            self.end_iteration()
            if first is not None and last is not None:
                start, end = min(start, first), max(end, last)
            copied_to = self.after_iteration(body, i, count, timing, len(iterations), end)
            if copied_to is not None:
                return start, copied_to
        return start, end


def run_to_end(walk: Walk) -> tuple[Optional[int], Optional[int]]:
    """Run a walk that never pauses to meet; its result."""
    try:
        walk.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("a walk without meetings paused at one")
