"""Run traces: each op's start and end per replica and IPU, in simulated cycles and real seconds.

Recording costs a run almost nothing: it keeps which branch each conditional took and, only when the
session profiles, the clock before and after each op (read by a second, instrumented copy of the
generated code, so an unprofiled run pays nothing). The events are computed from that record the
first time the trace is read (``timeline.py``), with the cost model's cycles for each op.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from time import perf_counter
from typing import Callable, Optional

from workbench.analysis.op_events import TraceEvent
from workbench.ir import Op


@dataclass(slots=True)
class TraceSummary:
    """Totals of one run.

    ``cycles`` is when the last op of any replica ends; ``cycles_per_replica`` and
    ``cycles_per_ipu`` (keyed by ``(replica, ipu)``) when the last op there ends, and
    ``busy_cycles_per_ipu`` the own cycles of the ops occupying each IPU. ``cycles_per_kind`` sums
    the own cycles of every event of each kind over all replicas; ``seconds_per_kind`` does the same
    for measured time (a control op counting only the time outside the ops it called) and, like
    ``seconds`` (the whole run), is None unless the run was profiled.
    """

    cycles: int
    cycles_per_replica: dict[int, int]
    cycles_per_ipu: dict[tuple[int, int], int]
    busy_cycles_per_ipu: dict[tuple[int, int], int]
    cycles_per_kind: dict[str, int]
    clock_hz: float
    seconds: Optional[float] = None
    seconds_per_kind: Optional[dict[str, float]] = None

    @property
    def simulated_seconds(self) -> float:
        """``cycles`` at the device's clock."""
        return self.cycles / self.clock_hz


@dataclass(slots=True)
class Trace:
    """The events of one run, replica by replica, each replica's in execution order."""

    events: list[TraceEvent]
    replicas: int
    clock_hz: float
    profiled: bool
    seconds: Optional[float] = None

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self):
        return iter(self.events)

    def of(self, replica: Optional[int] = None, ipu: Optional[int] = None,
           kind: Optional[str] = None, op: Optional[Op] = None) -> list[TraceEvent]:
        """The events matching every given filter (``ipu`` matches any IPU an event occupies)."""
        return [e for e in self.events if (replica is None or e.replica == replica)
                and (ipu is None or ipu in e.ipus) and (kind is None or e.kind == kind)
                and (op is None or e.op is op)]

    def summary(self) -> TraceSummary:
        per_replica: dict[int, int] = defaultdict(int)
        per_ipu: dict[tuple[int, int], int] = defaultdict(int)
        busy: dict[tuple[int, int], int] = defaultdict(int)
        per_kind: dict[str, int] = defaultdict(int)
        for event in self.events:
            per_replica[event.replica] = max(per_replica[event.replica], event.end_cycle)
            per_kind[event.kind] += event.cycles
            for ipu in event.ipus:
                key = (event.replica, ipu)
                per_ipu[key] = max(per_ipu[key], event.end_cycle)
                busy[key] += event.cycles
        return TraceSummary(max(per_replica.values(), default=0), dict(per_replica), dict(per_ipu),
                            dict(busy), dict(per_kind), self.clock_hz, self.seconds,
                            self._seconds_per_kind() if self.profiled else None)

    def _seconds_per_kind(self) -> dict[str, float]:
        own = [event.seconds for event in self.events]
        for event in self.events:
            if event.parent is not None:
                own[event.parent] -= event.seconds
        per_kind: dict[str, float] = defaultdict(float)
        for event, seconds in zip(self.events, own):
            per_kind[event.kind] += seconds
        return dict(per_kind)


# ----- recording -----
def record_branch(kernel: Callable, op: Op, log: list) -> Callable:
    """A conditional's kernel that first logs ``(op, taken)``, True for the then-branch."""
    append = log.append

    def run(cond, *args):
        append((op, bool(cond.reshape(-1)[0])))
        return kernel(cond, *args)
    return run


@dataclass(slots=True)
class RunRecord:
    """What one run leaves for its trace: per replica the branch log and (profiled) the clock log."""

    branches: list[tuple]
    timestamps: Optional[list[tuple]]
    started: float
    seconds: float


class TraceRecorder:
    """Keeps the record of a session's latest run; ``build`` turns it into a ``Trace`` when first read."""

    def __init__(self, programs: list, build: Callable[[RunRecord], Trace]):
        self.programs = programs
        self.record: Optional[RunRecord] = None
        self._build = build
        self._trace: Optional[Trace] = None
        self._started = 0.0

    def start(self, profiled: bool) -> None:
        """Before a run: forget the previous run and tell every replica whether to profile."""
        self.record, self._trace = None, None
        for program in self.programs:
            program.set_profiling(profiled)
        self._started = perf_counter()

    def finish(self) -> None:
        """After a run that completed."""
        seconds = perf_counter() - self._started
        profiled = self.programs[0].profiling
        self.record = RunRecord([tuple(p.branches) for p in self.programs],
                                [tuple(p.timestamps) for p in self.programs] if profiled else None,
                                self._started, seconds)

    @property
    def trace(self) -> Optional[Trace]:
        if self._trace is None and self.record is not None:
            self._trace = self._build(self.record)
        return self._trace
