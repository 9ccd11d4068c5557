"""A long schedule drawn in time bins: where a timeline would have thousands of bars (each under a pixel
wide at a notebook's width, and megabytes of hover text), the bars of each row are gathered by kind into
``BINS_PER_ROW`` spans of equal time, one bar per kind and span that says which ops it holds."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Optional, Sequence

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
    """Where the ops of one top-level group of the main graph (``grouping.group_graph``: a name scope, or a
    run of them) ran on one row: from the first start to the last end, and how many bars it holds."""

    row: Any
    label: str
    order: int  # the group's place among the top-level groups
    start: float
    end: float
    count: int = 0


def top_groups(graph: Any) -> dict:
    """The top-level group (its place and label) of each op of ``graph`` that one holds (``group_graph``)."""
    from workbench.export.grouping import group_graph

    top: dict = {}
    for order, child in enumerate(group_graph(graph).children):
        for group in child.walk():
            for op in group.ops:
                top[op] = (order, child.label)
    return top


def scope_spans(events: Sequence[Any], bars: Sequence[Any], top: Optional[dict] = None) -> list[ScopeSpan]:
    """The span of each top-level group of the main graph (``top``: ``top_groups`` of it, made here when not
    given) on each row; an op of a called graph counts for the group of the call site it runs under."""
    if not events:
        return []
    if top is None:
        top = top_groups(events[0].op.graph.ir.main_graph)
    found: dict[tuple, ScopeSpan] = {}
    for bar in bars:
        event = events[bar.event]
        where = top.get(event.call_path[0] if event.call_path else event.op)
        if where is None:
            continue
        span = found.get((bar.row, where))
        if span is None:
            span = found[(bar.row, where)] = ScopeSpan(bar.row, where[1], where[0], bar.start, bar.end)
        span.start, span.end = min(span.start, bar.start), max(span.end, bar.end)
        span.count += 1
    return list(found.values())
