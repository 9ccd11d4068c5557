"""Run traces: each op's start and end per replica and IPU, in simulated cycles and real seconds.

Recording costs a run almost nothing: it keeps which branch each conditional took and, only when the
session profiles, the clock before and after each op (read by a second, instrumented copy of the
generated code, so an unprofiled run pays nothing). The events are computed from that record the
first time the trace is read (``timeline.py``), with the cost model's cycles for each op, and kept in
the compact form of ``trace_store.py``.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from time import perf_counter
from typing import Callable, Iterator, Optional

from workbench.analysis.op_events import TraceEvent
from workbench.ir import Op

from .trace_store import ReplicaEvents, expand
from .trace_totals import Totals


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


class Trace:
    """The events of one run, replica by replica, each replica's in execution order.

    A trace is kept compact: repeat iterations that only shift the one before are stored once
    (``trace_store``), and a run with more events than the session's ``trace_event_limit`` keeps only
    its summary (``has_events`` is then False). Iterating, ``of`` and ``len`` read the compact form;
    ``events`` expands every event into a list, kept once made.
    """

    def __init__(self, replicas: list[ReplicaEvents], totals: Totals, clock_hz: float, profiled: bool,
                 seconds: Optional[float] = None):
        self.replicas = len(replicas)
        self.clock_hz = clock_hz
        self.profiled = profiled
        self.seconds = seconds
        self._replicas = replicas if all(r.stored is not None for r in replicas) else None
        self._totals = totals
        self._events: Optional[list[TraceEvent]] = None

    @property
    def has_events(self) -> bool:
        """Whether the trace kept its events, not only its summary."""
        return self._replicas is not None

    @property
    def stored_events(self) -> int:
        """How many events the compact form keeps (0 for a summary only)."""
        return sum(len(r.stored) for r in self._replicas) if self._replicas is not None else 0

    @property
    def events(self) -> list[TraceEvent]:
        """Every event, replica by replica; expanded from the compact form the first time it is read."""
        if self._events is None:
            self._events = list(self)
        return self._events

    def __len__(self) -> int:
        return sum(self._totals.events_per_replica.values())

    def __iter__(self) -> Iterator[TraceEvent]:
        if self._events is not None:
            return iter(self._events)
        return (event for replica in range(self.replicas) for event in self._replica_events(replica))

    def _replica_events(self, replica: int) -> Iterator[TraceEvent]:
        if self._replicas is None:
            raise ValueError(f"this trace kept only its summary: the run had {len(self):,} events, more than "
                             "the session's trace_event_limit; raise session.trace_event_limit to keep them")
        events = self._replicas[replica]
        return expand(events.stored, events.runs)

    def of(self, replica: Optional[int] = None, ipu: Optional[int] = None,
           kind: Optional[str] = None, op: Optional[Op] = None) -> list[TraceEvent]:
        """The events matching every given filter (``ipu`` matches any IPU an event occupies)."""
        events = self if replica is None or self._events is not None else self._replica_events(replica)
        return [e for e in events if (replica is None or e.replica == replica)
                and (ipu is None or ipu in e.ipus) and (kind is None or e.kind == kind)
                and (op is None or e.op is op)]

    def summary(self) -> TraceSummary:
        totals = self._totals
        per_replica = dict(totals.ends_per_replica)
        return TraceSummary(max(per_replica.values(), default=0), per_replica, dict(totals.ends_per_ipu),
                            dict(totals.busy_per_ipu), dict(totals.cycles_per_kind), self.clock_hz,
                            self.seconds, dict(totals.seconds_per_kind) if self.profiled else None)


# ----- recording -----
def record_branch(kernel: Callable, op: Op, log: list) -> Callable:
    """A conditional's kernel that first logs ``(op, taken)``, True for the then-branch."""
    append = log.append

    def run(cond, *args):
        append((op, bool(cond.reshape(-1)[0])))
        return kernel(cond, *args)
    return run


@dataclass(frozen=True, slots=True)
class BranchLog:
    """One replica's branch log, compact: for each conditional run, the index of its op in ``ops`` and
    whether it took the then-branch (5 bytes each, where the log's tuples take about 70)."""

    ops: tuple[Op, ...]
    which: array
    taken: bytes

    @classmethod
    def of(cls, log: list[tuple[Op, bool]]) -> "BranchLog":
        if not log:
            return _NO_BRANCHES
        index: dict[Op, int] = {}
        which = array("I", (index.setdefault(op, len(index)) for op, _ in log))
        return cls(tuple(index), which, bytes(taken for _, taken in log))

    def __iter__(self) -> Iterator[tuple[Op, bool]]:
        """``(op, taken)`` in the order the conditionals ran."""
        ops = self.ops
        return ((ops[which], bool(taken)) for which, taken in zip(self.which, self.taken))


_NO_BRANCHES = BranchLog((), array("I"), b"")


@dataclass(slots=True)
class RunRecord:
    """What one run leaves for its trace: per replica the branch log and (profiled) the clock log."""

    branches: list[BranchLog]
    timestamps: Optional[list[array]]
    started: float
    seconds: float
    event_limit: int


class TraceRecorder:
    """Keeps the record of a session's latest run; ``build`` turns it into a ``Trace`` when first read."""

    def __init__(self, programs: list, build: Callable[[RunRecord], Trace], event_limit: int):
        self.programs = programs
        self.event_limit = event_limit
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
        """After a run that completed: keep its logs compactly, and let the replicas' own go."""
        seconds = perf_counter() - self._started
        profiled = self.programs[0].profiling
        self.record = RunRecord([BranchLog.of(p.branches) for p in self.programs],
                                [array("d", p.timestamps) for p in self.programs] if profiled else None,
                                self._started, seconds, self.event_limit)
        for program in self.programs:
            program.branches.clear()
            program.timestamps.clear()

    @property
    def trace(self) -> Optional[Trace]:
        if self._trace is None and self.record is not None:
            self._trace, self.record = self._build(self.record), None  # the trace holds all it needs
        return self._trace
