"""The flattened schedule: the whole program as one list of steps, the x-axis of every liveness chart.

Start from the main graph's schedule (``schedule.schedule``). Each call site (``call``, ``repeat``,
``conditional``) is a step of its own, immediately followed by the steps of the called graph's
schedule, expanded the same way, recursively:

- ``call``: the callee's steps, once per call site (a graph called twice appears twice);
- ``repeat``: the body's steps once, each marked with the repeat count (``Step.repeats`` lists the
  counts of all enclosing loops, outermost first, so nested loops run ``Step.repeat_count`` times);
- ``conditional``: the then-branch's steps, then the else-branch's steps, each marked with the
  conditional op and which branch it belongs to (``Step.branches``); at run time only one of the two
  runs, but liveness charts show both.

Every expansion of a graph is a ``Frame``; steps point at the frame they run in. ``Step.end`` is the
last step of an op's execution: the op's own index for ordinary ops, the last step of the callee(s)
for call sites. Step indices are the positions in this list, starting at 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Iterator, Optional

from workbench.ir import Graph, Ir, Op
from workbench.ops.call_binding import BRANCHES, call_bindings

from .schedule import schedule


@dataclass(eq=False, slots=True)
class Frame:
    """One expansion of a graph: the main graph, or the callee of one call site.

    ``kind`` is 'main', 'call', 'repeat', 'then' or 'else'; ``first``/``last`` bound its steps
    (``last < first`` for a graph without ops); ``call_step`` is the index of the call site's step.
    """

    graph: Graph
    kind: str
    parent: Optional["Frame"] = None
    call_site: Optional[Op] = None
    call_step: Optional[int] = None
    repeat_count: int = 1
    depth: int = 0
    call_path: tuple[Op, ...] = ()
    repeats: tuple[int, ...] = ()
    branches: tuple[tuple[Op, str], ...] = ()
    first: int = 0
    last: int = -1


@dataclass(eq=False, slots=True)
class Step:
    """One op of the flattened schedule, in the frame (graph expansion) it runs in."""

    index: int
    op: Op
    frame: Frame
    end: int = 0
    children: tuple[Frame, ...] = ()

    @property
    def graph(self) -> Graph:
        return self.frame.graph

    @property
    def depth(self) -> int:
        """0 in the main graph, one more per enclosing call site."""
        return self.frame.depth

    @property
    def call_path(self) -> tuple[Op, ...]:
        """The call-site ops from the main graph down to this step's graph."""
        return self.frame.call_path

    @property
    def repeats(self) -> tuple[int, ...]:
        """Repeat counts of the enclosing repeat bodies, outermost first."""
        return self.frame.repeats

    @property
    def repeat_count(self) -> int:
        """How many times this step runs per run of the main graph (branches counted as taken)."""
        return prod(self.frame.repeats)

    @property
    def in_repeat(self) -> bool:
        return bool(self.frame.repeats)

    @property
    def branches(self) -> tuple[tuple[Op, str], ...]:
        """Enclosing conditional ops, outermost first, with 'then' or 'else'."""
        return self.frame.branches

    @property
    def in_branch(self) -> bool:
        return bool(self.frame.branches)

    @property
    def is_call_site(self) -> bool:
        return bool(self.children)

    def __repr__(self) -> str:
        return f"Step[{self.index} {self.op.type} {self.op.name} in {self.graph.label} depth={self.depth}]"


@dataclass(slots=True)
class FlatSchedule:
    """The steps of the flattened schedule and the frames they run in (the main frame first)."""

    ir: Ir
    steps: list[Step] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __getitem__(self, index: int) -> Step:
        return self.steps[index]

    @property
    def main(self) -> Frame:
        return self.frames[0]

    def frames_of(self, graph: Graph) -> list[Frame]:
        """Every expansion of ``graph``, in schedule order."""
        return [frame for frame in self.frames if frame.graph is graph]


def callees(op: Op) -> list[tuple[str, Graph]]:
    """The frames a call site opens, as (kind, graph): one for call and repeat, two for conditional."""
    return [(binding.kind, binding.graph) for binding in call_bindings(op)]


def flattened_schedule(ir: Ir) -> FlatSchedule:
    """The main graph's schedule with every call site expanded inline (see the module docstring)."""
    flat = FlatSchedule(ir)
    schedules: dict[Graph, list[Op]] = {}

    def expand(frame: Frame) -> None:
        flat.frames.append(frame)
        frame.first = len(flat.steps)
        if frame.graph not in schedules:
            schedules[frame.graph] = schedule(frame.graph)
        for op in schedules[frame.graph]:
            index = len(flat.steps)
            step = Step(index, op, frame, index)
            flat.steps.append(step)
            if not op.called_graphs:
                continue
            children = []
            for kind, graph in callees(op):
                if any(f.graph is graph for f in _ancestry(frame)):
                    raise ValueError(f"graph {graph.label!r} calls itself through {frame.graph.label!r}; "
                                     "graphs cannot call each other in a cycle")
                child = _child_frame(frame, op, step.index, kind, graph)
                expand(child)
                children.append(child)
            step.children = tuple(children)
            step.end = len(flat.steps) - 1
        frame.last = len(flat.steps) - 1

    expand(Frame(ir.main_graph, "main"))
    return flat


def _ancestry(frame: Optional[Frame]) -> Iterator[Frame]:
    while frame is not None:
        yield frame
        frame = frame.parent


def _child_frame(parent: Frame, op: Op, call_step: int, kind: str, graph: Graph) -> Frame:
    count = op.attrs["repeat_count"] if kind == "repeat" else 1
    repeats = parent.repeats + ((count,) if kind == "repeat" else ())
    branches = parent.branches + (((op, kind),) if kind in BRANCHES else ())
    return Frame(graph, kind, parent, op, call_step, count, parent.depth + 1, parent.call_path + (op,),
                 repeats, branches)
