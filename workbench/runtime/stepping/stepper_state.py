"""What a stepped run shows at each stop, as plain data: where each replica stands and the values alive.

Every record is a frozen dataclass holding IR objects (ops, graphs, tensors) and NumPy copies, so a
view can keep a ``Stop`` while the run goes on without seeing later writes. Records holding arrays
(``Stop``, ``LiveTensor``) compare by identity.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from workbench.ir import Graph, Op, Tensor

from .interpreter import Frame, ReplicaInterpreter


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """Stop before an op that matches every field given: its name, its type, the graph it is in.

    With only ``graph``, stop where a run of that graph begins (each call and each repeat iteration).
    """

    op: Optional[str] = None
    op_type: Optional[str] = None
    graph: Optional[Graph] = None

    def matches(self, op: Op, graph: Graph, position: int) -> bool:
        if self.graph is not None and graph is not self.graph:
            return False
        if self.op is None and self.op_type is None:
            return position == 0
        return (self.op is None or op.name == self.op) and (self.op_type is None or op.type == self.op_type)

    def stops_before(self, op: Op) -> bool:
        """Whether a stepped run stops before ``op`` wherever it runs."""
        first = self.op is None and self.op_type is None
        return self.matches(op, op.graph, op.graph.ops.index(op) if first else -1)

    def __str__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in (("op", self.op), ("op_type", self.op_type)) if v is not None]
        if self.graph is not None:
            parts.append(f"graph={self.graph.label!r}")
        return f"Breakpoint({', '.join(parts)})"


@dataclass(frozen=True, slots=True)
class Location:
    """One frame of the call stack: the op about to run (or the call site being run) in ``graph``.

    ``index`` is the op's position in the graph's schedule (``GraphCode.steps``), ``flat_index`` its
    position in ``analysis.flatten.flattened_schedule``. ``iteration`` counts repeat iterations from 0.
    """

    graph: Graph
    kind: str
    op: Op
    index: int
    flat_index: Optional[int]
    iteration: int
    repeat_count: int


@dataclass(frozen=True, slots=True)
class Position:
    """Where one replica stands: its call stack, outermost (main graph) first."""

    frames: tuple[Location, ...]

    @property
    def op(self) -> Op:
        """The op that runs next."""
        return self.frames[-1].op

    @property
    def graph(self) -> Graph:
        return self.frames[-1].graph

    @property
    def index(self) -> int:
        return self.frames[-1].index

    @property
    def flat_index(self) -> Optional[int]:
        return self.frames[-1].flat_index

    @property
    def depth(self) -> int:
        """0 in the main graph, one more per enclosing call site."""
        return len(self.frames) - 1

    @property
    def call_path(self) -> tuple[Op, ...]:
        """The call sites from the main graph down to the current graph."""
        return tuple(location.op for location in self.frames[:-1])

    @property
    def iterations(self) -> tuple[int, ...]:
        """The iteration of each enclosing repeat, outermost first."""
        return tuple(location.iteration for location in self.frames if location.kind == "repeat")


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One replica at a stop: its position (None once it has run every op), the number of actions it
    has taken, and the collective it waits in for other replicas, if any."""

    replica: int
    position: Optional[Position]
    actions: int
    waiting: Optional[str] = None

    @property
    def finished(self) -> bool:
        return self.position is None


@dataclass(frozen=True, eq=False, slots=True)
class LiveTensor:
    """A value alive at a stop: the tensor, the graph holding it and its value in each replica
    (None for a replica whose call stack does not hold it)."""

    tensor: Tensor
    graph: Graph
    depth: int
    values: tuple[Optional[np.ndarray], ...]


@dataclass(frozen=True, eq=False, slots=True)
class Stop:
    """The state of a stepped run between two commands.

    ``status`` is 'ready' (nothing run yet), 'paused', 'finished', 'failed' or 'abandoned'; ``reason``
    names the command that led here ('created', 'step', 'step_over', 'step_out', 'continue', 'run_to',
    'reset', 'abandoned', 'failed'). ``position`` and ``actions`` are replica 0's; ``breakpoint`` is the
    breakpoint replica 0 stopped at.
    """

    status: str
    reason: str
    position: Optional[Position]
    actions: int
    replicas: tuple[ReplicaState, ...]
    live: tuple[LiveTensor, ...]
    breakpoint: Optional[Breakpoint] = None

    @property
    def op(self) -> Optional[Op]:
        """The op that runs next in replica 0 (None once the run has finished)."""
        return None if self.position is None else self.position.op

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    def value(self, tensor: Tensor, replica: int = 0) -> np.ndarray:
        """The value of a live tensor in ``replica``."""
        for live in self.live:
            if live.tensor is tensor and live.values[replica] is not None:
                return live.values[replica]
        names = ", ".join(live.tensor.name for live in self.live) or "none"
        raise KeyError(f"tensor {tensor.id!r} is not alive in replica {replica} at this stop "
                       f"(live tensors: {names})")


def position_of(interpreter: ReplicaInterpreter) -> Optional[Position]:
    if interpreter.finished:
        return None
    return Position(tuple(_location(frame) for frame in interpreter.stack))


def _location(frame: Frame) -> Location:
    step = frame.flat_step
    return Location(frame.graph, frame.kind, frame.op, frame.position, None if step is None else step.index,
                    frame.iteration, frame.repeat_count)


def live_tensors(interpreters: list[ReplicaInterpreter]) -> tuple[LiveTensor, ...]:
    """Copies of every value alive in each replica's frames, outermost frame first."""
    found: dict[Tensor, tuple[Graph, int, list]] = {}
    count = len(interpreters)
    for replica, interpreter in enumerate(interpreters):
        for depth, frame in enumerate(interpreter.stack):
            for tensor, value in frame.values.items():
                entry = found.setdefault(tensor, (frame.graph, depth, [None] * count))
                entry[2][replica] = np.array(value)
    ordered = sorted(found.items(), key=lambda item: item[1][1])
    return tuple(LiveTensor(tensor, graph, depth, tuple(values)) for tensor, (graph, depth, values) in ordered)
