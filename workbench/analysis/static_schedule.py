"""The static schedule: the flattened schedule laid out in simulated cycles, per IPU, before any run.

Each op starts when every IPU it occupies is free and after the ops an ``in_sequence`` block puts
before it, then holds those IPUs for its cost-model cycles: the rules of ``clock.py``, which a run's
timeline follows too. Without a run there is no branch log and no iteration count to replay, so
every replica is drawn as one: a repeat body appears once (one iteration, ``repeats`` says how many
run), and a conditional's then-branch is followed by its else-branch, as the flattened schedule
lists them. A call site's event spans its own overhead and the ops it calls.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from workbench.ir import Ir, Op
from workbench.ir.device import Device
from workbench.ops.registry import op_ipus

from .clock import ClockPlan, ClockWalker, OpTiming, clock_plan, run_to_end, sequenced_ops
from .flatten import Step
from .op_events import TraceEvent

__all__ = ["ScheduledOp", "StaticSchedule", "op_ipus", "sequence_regions", "sequenced_ops", "static_schedule"]


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
        for op in graph.ops:
            for before in op.after:
                parent[root(op)] = root(before)
    numbers: dict[Op, int] = {}
    regions: dict[Op, int] = {}
    for graph in ir.graphs:
        for op in graph.ops:
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


class _StaticWalk(ClockWalker):
    """Every replica as one: both branches of a conditional, one iteration of a repeat, no meetings."""

    def __init__(self, plan: ClockPlan):
        super().__init__(plan)
        self.events: list[ScheduledOp] = []

    def iteration_count(self, step: Step) -> int:
        return 1

    def new_event(self, step: Step, timing: OpTiming, start: int, parent: Optional[int],
                  iterations: tuple[int, ...]) -> tuple[ScheduledOp, int]:
        frame = step.frame
        event = ScheduledOp(None, timing.ipus[0], timing.ipus, step.op, timing.kind, step.index, frame.call_path,
                            iterations, parent, timing.in_sequence, timing.cycles, start, 0, None, None,
                            frame.repeats, frame.branches)
        self.events.append(event)
        return event, len(self.events) - 1


def static_schedule(ir: Ir, device: Device) -> StaticSchedule:
    """Lay out ``flattened_schedule(ir)`` with ``cost_model`` cycles on ``device`` (see the module)."""
    walk = _StaticWalk(clock_plan(ir, device))
    run_to_end(walk.run())
    return StaticSchedule(walk.events, device.clock_hz)
