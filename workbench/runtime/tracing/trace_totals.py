"""Running totals of a run's events, kept while its timeline is walked: what ``TraceSummary`` reports,
without keeping the events themselves."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional

from workbench.analysis.op_events import TraceEvent


def _counts() -> defaultdict:
    return defaultdict(int)


@dataclass(slots=True)
class Totals:
    """Sums and latest ends of events, per replica, per (replica, IPU) and per kind.

    ``seconds_per_kind`` gives each event its own time: its seconds, less those of the events it
    called (a child takes its seconds off its parent's kind).
    """

    ends_per_replica: defaultdict = field(default_factory=_counts)
    ends_per_ipu: defaultdict = field(default_factory=_counts)
    busy_per_ipu: defaultdict = field(default_factory=_counts)
    cycles_per_kind: defaultdict = field(default_factory=_counts)
    events_per_replica: defaultdict = field(default_factory=_counts)
    seconds_per_kind: defaultdict = field(default_factory=lambda: defaultdict(float))

    def add(self, event: TraceEvent, parent_kind: Optional[str]) -> None:
        replica, end = event.replica, event.end_cycle
        if end > self.ends_per_replica[replica]:
            self.ends_per_replica[replica] = end
        for ipu in event.ipus:
            key = (replica, ipu)
            if end > self.ends_per_ipu[key]:
                self.ends_per_ipu[key] = end
            self.busy_per_ipu[key] += event.cycles
        self.cycles_per_kind[event.kind] += event.cycles
        self.events_per_replica[replica] += 1
        if event.start_seconds is not None:
            self.seconds_per_kind[event.kind] += event.seconds
            if parent_kind is not None:
                self.seconds_per_kind[parent_kind] -= event.seconds

    def add_copies(self, other: "Totals", count: int, period: int) -> None:
        """Add ``count`` copies of ``other``'s events, the j-th later by ``j * period`` cycles."""
        shift = count * period
        for mine, theirs in ((self.ends_per_replica, other.ends_per_replica),
                             (self.ends_per_ipu, other.ends_per_ipu)):
            for key, end in theirs.items():
                mine[key] = max(mine[key], end + shift)
        for mine, theirs in ((self.busy_per_ipu, other.busy_per_ipu),
                             (self.cycles_per_kind, other.cycles_per_kind),
                             (self.events_per_replica, other.events_per_replica)):
            for key, value in theirs.items():
                mine[key] += count * value
