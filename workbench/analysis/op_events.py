"""The record of one op's execution: what run traces and the static schedule are made of."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from workbench.ir import Graph, Op


@dataclass(eq=False, slots=True)
class TraceEvent:
    """One execution of one op in one replica (None where the record stands for every replica).

    ``ipu`` is where the op runs (the source of an ``ipu_copy``); ``ipus`` every IPU it occupies.
    ``step`` is the op's index in the flattened schedule (``workbench.analysis.flattened_schedule``)
    and ``call_path`` the call-site ops above it; ``iterations`` the iteration of each enclosing
    repeat, outermost first; ``parent`` the index in ``Trace.events`` of the enclosing call site's
    event. ``cycles`` is the op's own cost: for a control op its overhead, while its span covers
    the ops it called. ``in_sequence`` marks ops ordered by a ``popxl.in_sequence()`` block.
    Seconds count from the start of the run and are None unless the run was profiled.
    """

    replica: Optional[int]
    ipu: int
    ipus: tuple[int, ...]
    op: Op
    kind: str
    step: int
    call_path: tuple[Op, ...]
    iterations: tuple[int, ...]
    parent: Optional[int]
    in_sequence: bool
    cycles: int
    start_cycle: int
    end_cycle: int = 0
    start_seconds: Optional[float] = None
    end_seconds: Optional[float] = None

    @property
    def op_type(self) -> str:
        return self.op.type

    @property
    def graph(self) -> Graph:
        return self.op.graph

    @property
    def seconds(self) -> Optional[float]:
        return None if self.start_seconds is None else self.end_seconds - self.start_seconds

    def __repr__(self) -> str:
        return (f"{type(self).__name__}[replica {self.replica} ipu {self.ipu} {self.kind} {self.op.type} {self.op.name} "
                f"cycles {self.start_cycle}-{self.end_cycle}]")
