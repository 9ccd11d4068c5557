"""When each graph's code is in executable (tile) memory, over the flattened schedule.

The rules of code loading (graphs reference, section 9.7):

- A graph that no ``remote_code_load`` loads is always live: one interval over the whole program.
  So is the main graph.
- A call needs the code live since the last load before it, or since the program start if none.
  A call is live from its call step to the last step of the callee; a ``conditional`` step calls both
  branch graphs and keeps both live until the end of its else-branch.
- A load means the code was not needed since the last call (or the program start). So the code of a
  loaded graph is live from each load to the end of the last call before the next load. The load
  itself writes the code, so the load step is always live: a load that no call follows gives an
  interval of that single step.
- Loads inside a called graph happen where that graph is called (nested loading); loads inside a
  repeat body happen on every iteration.
- Branches (9.7.5): when the two branches of a conditional disagree about whether the code is needed
  on entry (one loads it before any call, the other does not), the loads in them are disregarded:
  the code is taken to be live from before the branching. They are listed in
  ``ignored_load_steps``. When both branches load it, each branch's code is dead until its load.

A graph that is never called nor loaded is not part of the program: it has no intervals.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional

from workbench.ir import Graph, Ir
from workbench.ops.registry import op_def

from .flatten import FlatSchedule, Frame, Step, flattened_schedule


@dataclass(slots=True)
class GraphCodeLiveness:
    """The steps during which ``graph``'s code is live, as inclusive ``(start, end)`` intervals."""

    graph: Graph
    always_live: bool
    intervals: list[tuple[int, int]] = field(default_factory=list)
    load_steps: list[int] = field(default_factory=list)
    call_steps: list[int] = field(default_factory=list)
    ignored_load_steps: list[int] = field(default_factory=list)

    def is_live(self, step: int) -> bool:
        return any(start <= step <= end for start, end in self.intervals)


def code_liveness(ir: Ir, flat: Optional[FlatSchedule] = None) -> dict[Graph, GraphCodeLiveness]:
    """Code liveness of every graph of ``ir`` (in ``ir.graphs`` order), by the rules above."""
    flat = flattened_schedule(ir) if flat is None else flat
    loads: dict[Graph, list[int]] = {graph: [] for graph in ir.graphs}
    calls: dict[Graph, list[int]] = {graph: [] for graph in ir.graphs}
    for step in flat.steps:
        if op_def(step.op.type).loads_code:
            loads[step.op.attrs["graph"]].append(step.index)
        for callee in dict.fromkeys(child.graph for child in step.children):
            calls[callee].append(step.index)
    result = {}
    for graph in ir.graphs:
        record = GraphCodeLiveness(graph, always_live=False, load_steps=loads[graph], call_steps=calls[graph])
        if graph is ir.main_graph or (calls[graph] and not loads[graph]):
            record.always_live = True
            record.intervals = [(0, len(flat) - 1)] if len(flat) else []
        elif loads[graph]:
            analysis = _Analysis(flat, graph)
            analysis.sequence(flat.main, needed=False, ignore_loads=False)
            record.intervals = analysis.intervals()
            record.ignored_load_steps = sorted(analysis.ignored)
        result[graph] = record
    return result


class _Analysis:
    """Backward liveness of one graph's code over the frame tree of the flattened schedule."""

    def __init__(self, flat: FlatSchedule, graph: Graph):
        self.flat = flat
        self.graph = graph
        self.live = [False] * len(flat)
        self.starts: set[int] = set()
        self.ignored: set[int] = set()
        self.own_steps: dict[Frame, list[Step]] = defaultdict(list)
        for step in flat.steps:
            self.own_steps[step.frame].append(step)

    def sequence(self, frame: Frame, needed: bool, ignore_loads: bool) -> bool:
        """Mark ``frame``'s steps given whether the code is needed after it; return whether it is
        needed on entry. Steps of callees are handled with their call site."""
        for step in reversed(self.own_steps[frame]):
            needed = self.step(step, needed, ignore_loads)
        return needed

    def step(self, step: Step, needed: bool, ignore_loads: bool) -> bool:
        op = step.op
        if any(child.graph is self.graph for child in step.children):
            self.mark(step.index, step.end, True)
            return True
        definition = op_def(op.type)
        if definition.loads_code and op.attrs["graph"] is self.graph:
            if ignore_loads:
                self.ignored.add(step.index)
                self.live[step.index] = needed
                return needed
            self.live[step.index] = True
            self.starts.add(step.index)
            return False
        if definition.branches:
            needed = self.branches(step, needed, ignore_loads)
        elif definition.repeats:
            body = step.children[0]
            entry = self.sequence(body, needed, ignore_loads)
            if entry and not needed and body.repeat_count > 1:  # the next iteration needs it
                self.reset(body.first, body.last)
                entry = self.sequence(body, True, ignore_loads)
            needed = entry
        elif step.children:
            needed = self.sequence(step.children[0], needed, ignore_loads)
        self.live[step.index] = needed
        return needed

    def branches(self, step: Step, needed: bool, ignore_loads: bool) -> bool:
        then_frame, else_frame = step.children
        then_entry = self.sequence(then_frame, needed, ignore_loads)
        else_entry = self.sequence(else_frame, needed, ignore_loads)
        if then_entry != else_entry:
            self.reset(then_frame.first, else_frame.last)
            then_entry = self.sequence(then_frame, needed, True)
            else_entry = self.sequence(else_frame, needed, True)
        return then_entry or else_entry

    def mark(self, first: int, last: int, value: bool) -> None:
        for index in range(first, last + 1):
            self.live[index] = value

    def reset(self, first: int, last: int) -> None:
        self.mark(first, last, False)
        self.starts = {s for s in self.starts if not first <= s <= last}

    def intervals(self) -> list[tuple[int, int]]:
        """Runs of live steps, split where an effective load starts a new one."""
        result: list[tuple[int, int]] = []
        start = None
        for index, live in enumerate(self.live):
            if live and (start is None or index in self.starts):
                if start is not None:
                    result.append((start, index - 1))
                start = index
            elif not live and start is not None:
                result.append((start, index - 1))
                start = None
        if start is not None:
            result.append((start, len(self.live) - 1))
        return result
