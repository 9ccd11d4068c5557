"""A long schedule drawn in time bins: where a timeline would have thousands of bars (each under a pixel
wide at a notebook's width, and megabytes of hover text), the bars of each row are gathered by kind into
``BINS_PER_ROW`` spans of equal time, one bar per kind and span that says which ops it holds. And, at any
size, the runs of the name scopes that the strip under each row names."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Sequence

from ..style import count_of, text

BINNED_ABOVE = 2000  # bars; a timeline with more is drawn in bins
BINS_PER_ROW = 240  # about four pixels each across a notebook-wide figure


@dataclass(slots=True)
class BinnedBar:
    """The bars of one row and one category (a kind, a pipeline stage) that start within one bin: its
    span from the first start to the last end, the events drawn (in order) and their own length."""

    row: Any
    category: Hashable
    start: float
    end: float
    events: list[int] = field(default_factory=list)
    busy: float = 0.0


def bin_width(bars: Sequence[Any]) -> float:
    """The length of a bin: the longest row's span over ``BINS_PER_ROW`` (every row binned alike)."""
    return max((bar.end for bar in bars), default=0.0) / BINS_PER_ROW or 1.0


def binned_bars(bars: Sequence[Any], category: Callable[[Any], Hashable], width: float) -> list[BinnedBar]:
    """``bars`` (``schedule_figure.Bar``) gathered per row, ``category(bar)`` and bin of ``width``."""
    found: dict[tuple, BinnedBar] = {}
    for bar in bars:
        kind = category(bar)
        key = (bar.row, kind, int(bar.start // width))
        binned = found.get(key)
        if binned is None:
            binned = found[key] = BinnedBar(bar.row, kind, bar.start, bar.end)
        binned.start, binned.end = min(binned.start, bar.start), max(binned.end, bar.end)
        binned.events.append(bar.event)
        binned.busy += bar.end - bar.start
    return list(found.values())


def binned_hover(binned: BinnedBar, events: Sequence[Any], kind_label: str, unit: str, where: str) -> str:
    """What a binned bar's hover says: how many executions of which op types, from which op to which, when."""
    ops = [events[index].op for index in binned.events]
    types = " · ".join(f"{count} {text(op_type)}" for op_type, count in Counter(op.type for op in ops).most_common(4))
    first, last = ops[0].name, ops[-1].name
    names = text(first) if first == last else f"{text(first)} … {text(last)}"
    if unit == "seconds":
        span = f"{binned.start:.3g} s to {binned.end:.3g} s, {binned.busy:.3g} s of its own"
    else:
        span = f"cycles {binned.start:,.0f} to {binned.end:,.0f}, {binned.busy:,.0f} of its own"
    return "<br>".join([f"<b>{text(kind_label)}: {count_of(len(ops), 'op execution')}</b>", names, types, span, where,
                        "click selects the first"])


@dataclass(slots=True)
class ScopeSpan:
    """Where the ops of one outer group of a graph (``grouping.group_graph``: a name scope, or a run of them)
    ran on one row, without another group's op between them: from the first start to the last end, and how
    many bars it holds; ``order`` is its place on its row, so that neighbours alternate."""

    row: Any
    label: str
    order: int
    start: float
    end: float
    count: int = 0
    graph: str = ""  # the label of the graph the group is of


MERGED_ABOVE = 400  # spans; where runs of groups interleave into more, each group's runs are drawn as one


def top_groups(graph: Any, key: Hashable = None, op_runs: bool = True) -> dict:
    """The outer group of each op of ``graph`` that one holds: the top-level groups of ``group_graph``, or
    within its IPUs those of each IPU, as (``key`` and its place, its label, the graph's label). Without
    ``op_runs``, runs of bare ops (a long graph of no name scopes cut in even parts) are left out: they name
    no part of the model, only where a binned timeline needs landmarks."""
    from workbench.export.grouping import group_graph

    def outer(group):
        for child in group.children:
            yield from outer(child) if child.kind == "ipu" else (child,)

    top: dict = {}
    for order, child in enumerate(outer(group_graph(graph))):
        if not op_runs and child.kind == "range" and not child.children:
            continue
        for group in child.walk():
            for op in group.ops:
                top[op] = ((key, order), child.label, graph.label)
    return top


def scope_groups(graphs: Iterable[Any], op_runs: bool = True) -> dict:
    """``top_groups`` of each of ``graphs``, in one mapping (an op is of one graph)."""
    found: dict = {}
    for graph in graphs:
        found.update(top_groups(graph, graph.id, op_runs))
    return found


def scope_spans(events: Sequence[Any], bars: Sequence[Any], top: dict) -> list[ScopeSpan]:
    """The runs of each outer group (``top``: ``scope_groups`` of the graphs that ran) on each row. An op of no group counts for the innermost group holding a call site it runs under;
    call sites themselves (their bars span what they call) count for none."""
    runs: list[ScopeSpan] = []
    merged: dict[tuple, ScopeSpan] = {}
    open_runs: dict[Any, tuple[Hashable, ScopeSpan]] = {}  # each row's run of its latest bar's group
    for bar in sorted(bars, key=lambda bar: (bar.start, bar.end)):
        event = events[bar.event]
        if event.kind == "control":
            continue
        where = top.get(event.op)
        for site in reversed(event.call_path):
            if where is not None:
                break
            where = top.get(site)
        if where is None:  # an op of no group ends its row's run
            open_runs.pop(bar.row, None)
            continue
        run = open_runs.get(bar.row)
        if run is None or run[0] != where[0]:
            run = open_runs[bar.row] = (where[0], ScopeSpan(bar.row, where[1], 0, bar.start, bar.end, graph=where[2]))
            runs.append(run[1])
        whole = merged.setdefault((bar.row, where[0]), ScopeSpan(bar.row, where[1], 0, bar.start, bar.end,
                                                                 graph=where[2]))
        for span in (run[1], whole):
            span.start, span.end = min(span.start, bar.start), max(span.end, bar.end)
            span.count += 1
    chosen = runs if len(runs) <= MERGED_ABOVE else list(merged.values())
    placed: dict[Any, int] = {}
    for span in chosen:
        span.order = placed.get(span.row, 0)
        placed[span.row] = span.order + 1
    return chosen
