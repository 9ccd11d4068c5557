"""The schedule as a timeline: one row per replica and IPU, one bar per op execution, coloured by the
cost model's kind, with ``in_sequence`` regions behind, and the selected and next ops outlined.

Events are a run's ``TraceEvent``s or the static schedule's ``ScheduledOp``s (``replica`` None):
anything with their fields. An op occupying several IPUs (an ``ipu_copy``, an ``all_reduce`` over
IPUs) has a bar on each of their rows; a call site's bar spans the ops it called. A timeline of more than
``BINNED_ABOVE`` bars is drawn in time bins (``schedule_bins``).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Optional, Sequence

import plotly.graph_objects as go

from workbench.analysis.cost_model import KINDS
from workbench.ir import Op

from .legend import LEGEND_ROW, legend_rows
from .schedule_bins import BINNED_ABOVE, bin_width, binned_bars, binned_hover, scope_groups, scope_spans
from ..style import (CURRENT_COLOR, HIGHLIGHT, IN_SEQUENCE_COLOR, SCHEDULE_COLORS, SCHEDULE_LABELS, TEMPLATE,
                     TITLE_UNDER_TOOLBAR as TITLE_TOP, base_layout, group_color, text, text_array)

SCOPE_FONT = 8  # pixels: the smallest a group's name is written on its strip
NARROW_PLOT = 480  # pixels of plot in the narrowest output (630 px less the margins): the legend's rows for it
TITLE_LINE = 22  # pixels per line of the title

Row = tuple[Optional[int], int]  # (replica or None for every replica, IPU)
SEQUENCE_COLOR = "rgba(127, 127, 127, 0.14)"
SEQUENCE_OUTLINE = IN_SEQUENCE_COLOR


class Bar(NamedTuple):
    """One drawn bar: the index of its event, the row it sits on and its span in the shown unit (a tuple:
    a long trace makes tens of thousands)."""

    event: int
    row: Row
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class SequenceSpan:
    """An ``in_sequence`` region on one row: from its first op's start to its last op's end, in one
    execution of the graph holding it (one call, one iteration)."""

    region: int
    row: Row
    start: float
    end: float
    ops: int


def row_label(row: Row) -> str:
    replica, ipu = row
    return f"IPU {ipu}" if replica is None else f"replica {replica}, IPU {ipu}"


def has_seconds(events: Sequence[Any]) -> bool:
    return bool(events) and all(event.start_seconds is not None for event in events)


def span(event: Any, unit: str) -> tuple[float, float]:
    if unit == "seconds":
        return event.start_seconds, event.end_seconds
    return event.start_cycle, event.end_cycle


def schedule_rows(events: Sequence[Any]) -> list[Row]:
    """Every (replica, IPU) with an event, replica by replica."""
    rows = {(event.replica, ipu) for event in events for ipu in event.ipus}
    return sorted(rows, key=lambda row: (-1 if row[0] is None else row[0], row[1]))


def schedule_bars(events: Sequence[Any], unit: str = "cycles") -> list[Bar]:
    """A bar per event and IPU it occupies, in event order."""
    bars = []
    for index, event in enumerate(events):
        start, end = span(event, unit)
        bars.extend(Bar(index, (event.replica, ipu), start, end) for ipu in event.ipus)
    return bars


def sequence_spans(events: Sequence[Any], regions: Mapping[Op, int], unit: str = "cycles") -> list[SequenceSpan]:
    """The extent of each ``in_sequence`` region (``analysis.static_schedule.sequence_regions``) on
    each row, per execution of its graph."""
    found: dict[tuple, list] = defaultdict(list)
    for event in events:
        region = regions.get(event.op) if event.in_sequence else None
        if region is None:
            continue
        start, end = span(event, unit)
        for ipu in event.ipus:
            found[(region, (event.replica, ipu), event.call_path, event.iterations, event.parent)].append((start, end))
    return [SequenceSpan(key[0], key[1], min(s for s, _ in spans), max(e for _, e in spans), len(spans))
            for key, spans in found.items()]


def event_hover(event: Any, unit: str, regions: Optional[Mapping[Op, int]] = None) -> str:
    """What a bar's hover box says, names escaped (the hover box reads markup)."""
    op = event.op
    lines = [f"<b>{text(op.type)} {text(op.name)}</b>",
             f"graph {text(op.graph.label)}" + (
                 " via " + " → ".join(text(site.name) for site in event.call_path) if event.call_path else "")]
    own = f"{event.cycles:,} cycles" if event.kind != "control" else f"{event.cycles:,} cycles of its own"
    if unit == "seconds":
        lines.append(f"{SCHEDULE_LABELS[event.kind]}: {_seconds(event.end_seconds - event.start_seconds)} "
                     f"({_seconds(event.start_seconds)} to {_seconds(event.end_seconds)}), {own}")
    else:
        lines.append(f"{SCHEDULE_LABELS[event.kind]}: {own}, cycles {event.start_cycle:,} to {event.end_cycle:,}")
    where = "every replica" if event.replica is None else f"replica {event.replica}"
    ipus = ", ".join(map(str, event.ipus))
    lines.append(f"{where}, IPU{'s' if len(event.ipus) > 1 else ''} {ipus}")
    repeats = getattr(event, "repeats", ())
    if repeats:
        lines.append("one iteration drawn of " + " × ".join(map(str, repeats)))
    elif event.iterations:
        lines.append("iteration " + ", ".join(map(str, event.iterations)))
    for site, branch in getattr(event, "branches", ()):
        lines.append(f"{branch}-branch of {text(site.name)}")
    if event.in_sequence:
        region = None if regions is None else regions.get(op)
        lines.append("in_sequence" + ("" if region is None else f" region {region}"))
    lines.append(f"step {event.step} of the flattened schedule")
    return "<br>".join(lines)


def schedule_figure(events: Sequence[Any], *, unit: str = "cycles", clock_hz: float = 1.33e9,
                    regions: Optional[Mapping[Op, int]] = None, selected: Sequence[int] = (),
                    current: Sequence[int] = (), breakpoints: Sequence[int] = (), title: Optional[str] = None,
                    static_label: str = "Static schedule (no run yet)", groups: Optional[dict] = None) -> go.Figure:
    """The timeline of ``events`` in ``unit`` ('cycles' or 'seconds'; seconds need every event's).
    ``selected`` and ``current`` are indices into ``events``: the selected op's executions get a red
    outline, the op a stepped run stands before a black one; ``breakpoints`` get a red dot where
    they start. Bars carry their event's index as
    ``customdata``. A strip under each row names the outer groups of name scopes as they ran (``groups``:
    ``schedule_bins.scope_groups`` of the graphs that ran, made here when not given; runs of bare ops only in
    a binned timeline)."""
    if unit not in ("cycles", "seconds"):
        raise ValueError(f"unit must be 'cycles' or 'seconds', got {unit!r}")
    if unit == "seconds" and not has_seconds(events):
        raise ValueError("the schedule has no seconds: only a run with session.profile = True measures them")
    rows = schedule_rows(events)
    bars = schedule_bars(events, unit)
    figure = go.Figure(layout=dict(template=TEMPLATE))
    if regions:
        _add_sequence_spans(figure, sequence_spans(events, regions, unit))
    hovers: dict[int, str] = {}

    def hover(index: int) -> str:
        if index not in hovers:
            hovers[index] = event_hover(events[index], unit, regions)
        return hovers[index]

    binned = len(bars) > BINNED_ABOVE
    width = bin_width(bars) if binned else 0.0
    by_kind: dict[str, list[Bar]] = defaultdict(list)
    for bar in bars:
        by_kind[events[bar.event].kind].append(bar)
    for kind in ("control",) + tuple(k for k in KINDS if k != "control"):
        drawn = by_kind.get(kind)
        if not drawn:
            continue
        control = kind == "control"
        if binned:
            _add_binned(figure, events, drawn, kind, width, unit)
            continue
        figure.add_trace(go.Bar(
            orientation="h", y=text_array(row_label(bar.row) for bar in drawn),
            base=[bar.start for bar in drawn], x=[bar.end - bar.start for bar in drawn],
            name=SCHEDULE_LABELS[kind], marker=dict(color=SCHEDULE_COLORS[kind], line=dict(width=0)),
            opacity=0.45 if control else 1.0, width=0.8 if control else 0.5,
            customdata=[bar.event for bar in drawn], hovertext=text_array(hover(bar.event) for bar in drawn),
            hoverinfo="text", meta=dict(kind=kind)))
    _add_pipeline_stages(figure, events, bars, width)
    if groups is None:
        groups = scope_groups(dict.fromkeys(event.op.graph for event in events), op_runs=binned)
    _add_scope_spans(figure, events, bars, unit, groups)
    _add_outlines(figure, events, bars, selected, "selected op", HIGHLIGHT, hover)
    _add_outlines(figure, events, bars, current, "next op", CURRENT_COLOR, hover)
    _add_breakpoints(figure, bars, breakpoints)
    labels = [row_label(row) for row in rows]
    total = max((bar.end for bar in bars), default=0)
    title = title or _default_title(events, unit, clock_hz, total, static_label)
    if binned:
        title += (f"<br><sup>{len(bars):,} bars gathered by kind into spans of {_amount(width, unit)}: "
                  f"hover a bar for its ops</sup>")
    # The title pinned to the top and the legend's rows (in the narrowest output; the marks of a stepped run
    # counted whether shown or not, so a step keeps the height) between it and the plot: centred in the margin,
    # the title ran into a legend that wrapped.
    entries = dict.fromkeys([t.name for t in figure.data if t.name and t.showlegend is not False]
                            + ["selected op", "next op"])
    top = TITLE_TOP + TITLE_LINE * (title.count("<br>") + 1) + LEGEND_ROW * legend_rows(list(entries), NARROW_PLOT) + 14
    height = max(340, 170 + 46 * len(rows)) + max(0, top - 100)
    figure.update_layout(**base_layout(
        barmode="overlay", height=height, hovermode="closest",
        title=dict(text=title, x=0.01, yref="container", yanchor="top", y=1 - TITLE_TOP / height),
        xaxis=dict(title_text="simulated cycles" if unit == "cycles" else "seconds (measured)",
                   rangemode="tozero", tickformat="~s", ticksuffix="" if unit == "cycles" else "s"),
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(labels)), type="category"),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0, xanchor="left"),
        uniformtext=dict(minsize=SCOPE_FONT, mode="hide"),  # a group's name where it fits on its strip
        margin=dict(l=130, r=20, t=top, b=50)))
    return figure


def _add_binned(figure: go.Figure, events: Sequence[Any], bars: list[Bar], kind: str, width: float,
                unit: str) -> None:
    """One bar per row and bin for the bars of ``kind``; each carries its first event's index."""
    drawn = binned_bars(bars, lambda bar: kind, width)
    control = kind == "control"
    figure.add_trace(go.Bar(
        orientation="h", y=text_array(row_label(b.row) for b in drawn), base=[b.start for b in drawn],
        x=[b.end - b.start for b in drawn], name=SCHEDULE_LABELS[kind],
        marker=dict(color=SCHEDULE_COLORS[kind], line=dict(width=0)), opacity=0.45 if control else 1.0,
        width=0.8 if control else 0.5, customdata=[b.events[0] for b in drawn],
        hovertext=text_array(binned_hover(b, events, SCHEDULE_LABELS[kind], unit, row_label(b.row)) for b in drawn),
        hoverinfo="text", meta=dict(kind=kind, binned=True)))


def _add_scope_spans(figure: go.Figure, events: Sequence[Any], bars: list[Bar], unit: str, groups: dict) -> None:
    """A strip under each row's bars per run of an outer group of its graph (the Model tab's first boxes, within
    each IPU: a transformer's layers in its forward and its gradient graph), in alternating greys, saying which
    group ran when: named on the strip where the name fits at ``SCOPE_FONT`` pixels or more (plotly hides the
    others' names), in the hover always."""
    spans = scope_spans(events, bars, groups)
    if not spans:
        return
    figure.add_trace(go.Bar(
        orientation="h", y=text_array(row_label(s.row) for s in spans), base=[s.start for s in spans],
        x=[s.end - s.start for s in spans], width=0.2, offset=-0.47, name="groups (name scopes)",
        marker=dict(color=["#8C8C8C" if s.order % 2 else "#CFCFCF" for s in spans], line=dict(width=0)),
        text=text_array(text(s.label) for s in spans), textposition="inside", insidetextanchor="middle",
        textangle=0, textfont=dict(size=10, color=["white" if s.order % 2 else "#262626" for s in spans]),
        hovertext=text_array(f"<b>{text(s.label)}</b>: {s.count:,} op executions, "
                             f"{_amount(s.start, unit)} to {_amount(s.end, unit)}<br>of graph {text(s.graph)}"
                             for s in spans),
        hoverinfo="text", meta=dict(kind="groups")))


def _amount(value: float, unit: str) -> str:
    return _seconds(value) if unit == "seconds" else f"{value:,.0f} cycles"


def _add_sequence_spans(figure: go.Figure, spans: list[SequenceSpan]) -> None:
    if not spans:
        return
    figure.add_trace(go.Bar(
        orientation="h", y=text_array(row_label(s.row) for s in spans), base=[s.start for s in spans],
        x=[s.end - s.start for s in spans], name="in_sequence", width=0.95,
        marker=dict(color=SEQUENCE_COLOR, line=dict(color=SEQUENCE_OUTLINE, width=1)),
        hovertext=text_array(f"in_sequence region {s.region}: {s.ops} op executions in order" for s in spans),
        hoverinfo="text", meta=dict(kind="in_sequence")))


def _add_outlines(figure: go.Figure, events: Sequence[Any], bars: list[Bar], indices: Sequence[int],
                  name: str, color: str, hover) -> None:
    """Always two traces, empty where nothing is marked: a step that moves the mark changes those two
    traces only, and crosses the comm as a patch."""
    wanted = set(indices)
    marked = [bar for bar in bars if bar.event in wanted]
    rows = text_array(row_label(bar.row) for bar in marked)
    figure.add_trace(go.Bar(
        orientation="h", y=rows, base=[bar.start for bar in marked], x=[bar.end - bar.start for bar in marked],
        name=name, width=0.7, showlegend=bool(marked), marker=dict(color="rgba(0, 0, 0, 0)", line=dict(color=color, width=2.5)),
        customdata=[bar.event for bar in marked], hovertext=text_array(hover(bar.event) for bar in marked),
        hoverinfo="text", meta=dict(kind=name)))
    # A marker at each start: a view (0 cycles) has no bar to outline.
    figure.add_trace(go.Scatter(
        x=[bar.start for bar in marked], y=rows, mode="markers", name=name, showlegend=False,
        marker=dict(symbol="triangle-right", size=11, color=color), hoverinfo="skip",
        meta=dict(kind=name + " marker")))


def _add_pipeline_stages(figure: go.Figure, events: Sequence[Any], bars: list[Bar], width: float = 0.0) -> None:
    """A thin strip above each bar of an op with a pipeline stage (PopART's ``pipelineStage``),
    coloured by stage, so the stages show as bands along the timeline (where there are several); with
    a bin ``width``, one strip per row, stage and bin."""
    stages: dict[int, list[Bar]] = defaultdict(list)
    for bar in bars:
        stage = events[bar.event].op.meta.get("pipeline_stage")
        if stage is not None:
            stages[stage].append(bar)
    if len(stages) < 2:
        return
    for stage in sorted(stages):
        marked = stages[stage]
        if width:
            marked = [Bar(b.events[0], b.row, b.start, b.end) for b in binned_bars(marked, lambda bar: stage, width)]
        figure.add_trace(go.Bar(
            orientation="h", y=text_array(row_label(bar.row) for bar in marked), base=[bar.start for bar in marked],
            x=[bar.end - bar.start for bar in marked], width=0.12, offset=0.27, name=f"pipeline stage {stage}",
            marker=dict(color=group_color(stage), line=dict(width=0)), hoverinfo="text",
            hovertext=f"pipeline stage {stage}", meta=dict(kind="pipeline stage", stage=stage)))


def _add_breakpoints(figure: go.Figure, bars: list[Bar], indices: Sequence[int]) -> None:
    wanted = set(indices)
    marked = [bar for bar in bars if bar.event in wanted]
    if marked:
        figure.add_trace(go.Scatter(
            x=[bar.start for bar in marked], y=text_array(row_label(bar.row) for bar in marked), mode="markers",
            name="breakpoints", marker=dict(symbol="circle", size=8, color=HIGHLIGHT),
            customdata=[bar.event for bar in marked], hoverinfo="skip", meta=dict(kind="breakpoints")))


def _default_title(events: Sequence[Any], unit: str, clock_hz: float, total: float, static_label: str) -> str:
    static = bool(events) and events[0].replica is None
    what = static_label if static else "Schedule of the last run"
    if unit == "seconds":
        return f"{what}: {_seconds(total)} measured"
    return f"{what}: {int(total):,} simulated cycles ({_seconds(total / clock_hz)} at {clock_hz / 1e9:.3g} GHz)"


def _seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"
