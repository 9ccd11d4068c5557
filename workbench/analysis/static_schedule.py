"""The static schedule: the flattened schedule laid out in simulated cycles, per IPU, before any run.

Each op starts when every IPU it occupies is free and after the ops an ``in_sequence`` block puts
before it, then holds those IPUs for its cost-model cycles, as a run's timeline does. Without a run
there is no branch log and no iteration count to replay, so every replica is drawn as one: a repeat
body appears once (one iteration, ``repeats`` says how many run), and a conditional's then-branch
is followed by its else-branch, as the flattened schedule lists them. A call site's event spans its
own overhead and the ops it calls.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Optional

from workbench.ir import Ir, Op
from workbench.ir.device import Device
from workbench.ops.registry import op_ipus

from .cost_model import op_cycles, op_kind
from .flatten import Frame, Step, flattened_schedule
from .op_events import TraceEvent


def sequenced_ops(ir: Ir) -> set[Op]:
    """The ops an ``in_sequence`` block ordered: those with ops before them, and those ops."""
    ops = {before for graph in ir.graphs for op in graph._ops for before in op.after}
    ops.update(op for graph in ir.graphs for op in graph._ops if op.after)
    return ops


def sequence_regions(ir: Ir) -> dict[Op, int]:
    """Each sequenced op's region: ops chained by ``in_sequence`` order share a number (from 0, in
    the order the graphs and their ops were created)."""
    parent: dict[Op, Op] = {}

    def root(op: Op) -> Op:
        while parent.setdefault(op, op) is not op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    for graph in ir.graphs:
        for op in graph._ops:
            for before in op.after:
                parent[root(op)] = root(before)
    numbers: dict[Op, int] = {}
    regions: dict[Op, int] = {}
    for graph in ir.graphs:
        for op in graph._ops:
            if op in parent:
                regions[op] = numbers.setdefault(root(op), len(numbers))
    return regions


@dataclass(eq=False, slots=True, repr=False)
class ScheduledOp(TraceEvent):
    """One op of the static schedule: a ``TraceEvent`` whose ``replica`` is None (every replica runs
    this schedule). ``repeats`` are the counts of the enclosing repeats, of which one iteration is
    drawn; ``branches`` the enclosing conditionals with 'then' or 'else'."""

    repeats: tuple[int, ...] = ()
    branches: tuple[tuple[Op, str], ...] = ()


@dataclass(slots=True)
class StaticSchedule:
    """The ops of the flattened schedule, in execution order, with their simulated cycles."""

    events: list[ScheduledOp]
    clock_hz: float

    @property
    def cycles(self) -> int:
        """When the last op ends."""
        return max((event.end_cycle for event in self.events), default=0)

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self):
        return iter(self.events)


def static_schedule(ir: Ir, device: Device) -> StaticSchedule:
    """Lay out ``flattened_schedule(ir)`` with ``cost_model`` cycles on ``device`` (see the module)."""
    flat = flattened_schedule(ir)
    own_steps: dict[Frame, list[Step]] = defaultdict(list)
    for step in flat.steps:
        own_steps[step.frame].append(step)
    sequenced = sequenced_ops(ir)
    events: list[ScheduledOp] = []
    free: dict[int, int] = defaultdict(int)
    last_end: dict[Op, int] = {}

    def visit(frame: Frame, parent: Optional[int], iterations: tuple[int, ...]) -> tuple[Optional[int], Optional[int]]:
        first, last = None, None
        for step in own_steps.get(frame, ()):
            op = step.op
            ipus, cycles = op_ipus(op), op_cycles(op, device)
            start = max(free[ipu] for ipu in ipus)
            for before in op.after:
                start = max(start, last_end.get(before, 0))
            event = ScheduledOp(None, ipus[0], ipus, op, op_kind(op), step.index, frame.call_path, iterations,
                                parent, op in sequenced, cycles, start, repeats=frame.repeats,
                                branches=frame.branches)
            events.append(event)
            if step.children:
                event.end_cycle = call(step, event, len(events) - 1, iterations)
            else:
                event.end_cycle = start + cycles
                for ipu in ipus:
                    free[ipu] = event.end_cycle
            last_end[op] = event.end_cycle
            first = event.start_cycle if first is None else min(first, event.start_cycle)
            last = event.end_cycle if last is None else max(last, event.end_cycle)
        return first, last

    def call(step: Step, event: ScheduledOp, index: int, iterations: tuple[int, ...]) -> int:
        """The call site's overhead before each frame it opens, then that frame; returns the end."""
        ipu, end = event.ipu, event.start_cycle
        free[ipu] = event.start_cycle
        for child in step.children:
            free[ipu] += event.cycles
            end = max(end, free[ipu])
            _, last = visit(child, index, iterations + ((0,) if child.kind == "repeat" else ()))
            if last is not None:
                end = max(end, last)
        return end

    visit(flat.main, None, ())
    return StaticSchedule(events, device.clock_hz)
