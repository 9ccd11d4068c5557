"""Memory over the flattened schedule per IPU (stacked by kind, with capacity) and code liveness
per graph (bars from load to last call, with load and call markers)."""
from __future__ import annotations

from typing import Iterable, Mapping, Optional, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from workbench.analysis.code_size import graph_code_bytes
from workbench.analysis.gradient_names import gradient_label, gradient_sources
from workbench.analysis.memory import StreamingTransfer
from workbench.analysis.tensor_liveness import TensorLiveness
from workbench.ir import Graph, Tensor

from ..style import (ALWAYS_LIVE_COLOR, CAPACITY_COLOR, CURRENT_COLOR, HIGHLIGHT, KIND_COLORS, SCHEDULE_COLORS, TEMPLATE,
                     base_layout, binary_ticks, format_bytes, text)
from .liveness_hover import (KIND_OF, changing_steps, intermediates_block, intermediates_hover,
                             kind_hover, step_description, to_edges)

KINDS = ("variables", "constants", "intermediates", "code")  # stacking order, bottom first
PANEL_GAP = 56  # pixels between panels: the upper axis, then the lower panel's title
# At most this many steps drawn per panel, more go by the peak of each span: a panel is 400 to 1,050 pixels wide
# in a notebook's output (in a 630- to 1280-pixel window), so more points could hardly be told apart by eye or by
# the pointer, and each costs its hover over the comm (a 10,003-op program sent 476 KB at one point per 5 steps)
DRAWN_STEPS = 800


def code_dwarfs_tensors(liveness: TensorLiveness) -> bool:
    """Whether code, at its largest, is more than twice the tensors at their largest on some IPU: stacked
    with them it would squash the tensors into a thin line at the bottom of the scale."""
    for ipu in liveness.ipus:
        records = liveness.steps[ipu]
        code = max((record.code for record in records), default=0)
        tensors = max((record.total - record.code for record in records), default=0)
        if code > 2 * tensors:
            return True
    return False


TITLE_TOP = 24  # pixels from the figure's top to its title's first line (plotly anchors a title's middle line)
TITLE_SPACE = 70  # pixels above the first panel: the title, and the panel's own title under it
NOTE_HEIGHT = 18  # pixels more per note under the title
PANEL_TITLE_SIZE = 13  # pixels: a panel's title font, small enough for its longest line in a 630-px output
PANEL_TITLE_LINE = 17  # pixels per line of a panel's title
PANEL_TITLE_CHARS = 60  # characters a line of a panel's title may take: at 13 px, within a 630-px output
PANEL_TITLE_LIFT = 4  # pixels between a panel's title and its top, clear of the top tick's label
THIN_SHARE = 0.1  # intermediates peaking under this share of a panel's scale get their peak in its title


def liveness_figure(liveness: TensorLiveness, capacity: Mapping[int, int], marked_steps: Iterable[int] = (),
                    current_step: Optional[int] = None, include_code: Optional[bool] = None,
                    streaming: Optional[Mapping[int, int]] = None, transfers: Sequence[StreamingTransfer] = (),
                    replicas: int = 1) -> go.Figure:
    """One memory panel per IPU (``capacity`` maps IPU to tile-memory bytes), then the code panel for the
    graphs whose code is loaded and freed (all code always live is said in one line instead).
    Step ``s`` spans x from s-0.5 to s+0.5 in both panels. ``marked_steps`` (the selection) get dotted
    lines, ``current_step`` (where a stepped run stands) a solid one. Without ``include_code`` the
    memory panels leave code out, so tensors fill the scale; None leaves it out where it would dwarf them.
    ``streaming`` (bytes of Streaming Memory per IPU) goes in each panel's title; ``transfers`` (remote
    loads and stores) are marked on their IPU's memory, where a phased program loads and stores weights; a
    star marks each panel's peak. Over DRAWN_STEPS steps, each point is the step of most memory of its span.
    With several ``replicas`` a note says the figures are each replica's."""
    streaming = streaming or {}
    dwarfed = include_code is None and code_dwarfs_tensors(liveness)
    include_code = not dwarfed if include_code is None else include_code
    kinds = KINDS if include_code else tuple(kind for kind in KINDS if kind != "code")
    ipus = liveness.ipus
    shown_code = [record for record in liveness.code.values() if record.intervals or record.load_steps]
    code_rows = [record for record in shown_code if not record.always_live or record.load_steps]
    always = [record for record in shown_code if record not in code_rows]
    rows = len(ipus) + (1 if code_rows else 0)
    stacked = {ipu: [sum(getattr(record, kind) for kind in kinds) for record in liveness.steps[ipu]] for ipu in ipus}
    titles = [_memory_title(liveness, ipu, capacity[ipu], streaming.get(ipu, 0),
                            off_scale=capacity[ipu] > 3 * max(stacked[ipu], default=0),
                            shown=None if include_code else stacked[ipu])
              for ipu in ipus]
    extra = PANEL_TITLE_LINE * (max(title.count("<br>") for title in titles) if titles else 0)
    height = int((230 + extra) * len(ipus) + 60 + (28 * max(len(code_rows), 2) + 60 if code_rows else 40))
    code_title = "Code loaded and freed per graph" + (f" ({len(always)} more always live)" if always else "")
    # A fixed gap in pixels between panels leaves room for the next panel's title above its plot.
    figure = make_subplots(rows=rows, cols=1, shared_xaxes=True,
                           vertical_spacing=(PANEL_GAP + extra) / (height - 120 - extra) if rows > 1 else 0.0,
                           row_heights=[1.0] * len(ipus) + ([max(0.35, 0.12 * len(code_rows))] if code_rows else []),
                           subplot_titles=titles + ([code_title] if code_rows else []))
    # Each panel's title starts at the panel's left edge, its parts on their own lines, so that it fits a
    # narrow output without knowing its width (centred, a long title ran off the output's left edge).
    figure.update_annotations(x=0.0, xanchor="left", align="left", yshift=PANEL_TITLE_LIFT,
                              font=dict(size=PANEL_TITLE_SIZE))
    figure.layout.template = TEMPLATE  # in place of plotly's default
    steps = np.arange(len(liveness.flat))
    sources = gradient_sources(liveness.flat.ir)  # a gradient in a hover says whose it is
    span = -(-len(steps) // DRAWN_STEPS) if len(steps) else 1
    for row, ipu in enumerate(ipus, start=1):
        records = liveness.steps[ipu]
        drawn = peak_steps(stacked[ipu], span)
        blocks = {int(s): intermediates_block(liveness, records[s], sources) for s in drawn}
        drawn = changing_steps(drawn, [(blocks[int(s)], *(getattr(records[s], kind) for kind in kinds)) for s in drawn])
        # float32 holds every step and half step exactly, in half the bytes of float64
        edges = (np.concatenate([[-0.5], drawn, [len(steps) - 0.5]]) if len(drawn) else drawn).astype(np.float32)
        for kind in kinds:
            values = np.array([getattr(records[s], kind) for s in drawn], dtype=np.int64)
            hover = (intermediates_hover(liveness, records, drawn, blocks) if kind == "intermediates"
                     else kind_hover(kind, values))
            hover_lines = hover.pop("meta", {})
            figure.add_trace(go.Scatter(
                x=edges, y=to_edges(values), name=kind, legendgroup=kind, showlegend=row == 1,
                stackgroup=f"ipu{ipu}", mode="lines", line=dict(width=0.5, shape="hvh", color=KIND_COLORS[KIND_OF[kind]]),
                customdata=to_edges(drawn), hoverlabel=dict(namelength=0), **hover, meta=dict(ipu=ipu, kind=kind, **hover_lines)),
                row=row, col=1)
        peak = max(stacked[ipu], default=0)
        _add_peak(figure, liveness, stacked[ipu], row, first=row == 1, with_code=include_code)
        _add_transfers(figure, liveness, [t for t in transfers if t.ipu == ipu], stacked[ipu], row, first=row == 1,
                       sources=sources)
        cap = capacity[ipu]
        figure.add_trace(go.Scatter(
            x=[-0.5, max(len(steps) - 0.5, 0.5)], y=[cap, cap], mode="lines", name="device capacity",
            legendgroup="capacity", showlegend=row == 1, line=dict(color=CAPACITY_COLOR, dash="dash", width=1.5),
            hovertext=f"IPU {ipu} tile memory: {format_bytes(cap)}", hoverinfo="text", meta=dict(ipu=ipu, kind="capacity")),
            row=row, col=1)
        top = cap * 1.08 if cap <= 3 * peak else max(peak, 1) * 1.25
        figure.update_yaxes(range=[0, top], title_text=f"IPU {ipu}", row=row, col=1, **binary_ticks(top))
    if code_rows:
        _add_code_panel(figure, liveness, code_rows, rows)
    notes = []
    if not len(steps):
        built = len(liveness.code) - 1
        notes.append("the main graph has no ops, so nothing runs"
                     + (f": {built} graph{'s' if built != 1 else ''} built, none called from it" if built > 0 else ""))
    if replicas > 1:
        notes.append(f"per replica: each of the {replicas} replicas has these IPUs and this memory")
    if not code_rows and always:
        notes.extend(always_live_notes([record.graph for record in always]))
    if span > 1:
        notes.append(f"each point is the step of most memory of its span of {span} steps (hover it for that step)")
    if dwarfed:
        notes.append("code left out of the memory panels: it would dwarf the tensors (tick 'code in the memory "
                     "panels' to stack it)")
    for step in marked_steps:
        figure.add_shape(type="line", x0=step, x1=step, xref="x", y0=0, y1=1, yref="paper",
                         line=dict(color=HIGHLIGHT, width=1.5, dash="dot"), name="selected step")
    if current_step is not None:
        figure.add_shape(type="line", x0=current_step, x1=current_step, xref="x", y0=0, y1=1, yref="paper",
                         line=dict(color=CURRENT_COLOR, width=2), name="stepper")
        figure.add_annotation(x=current_step, y=1, xref="x", yref="paper", text="next op", showarrow=False,
                              xanchor="left", yanchor="bottom", name="stepper")
    figure.update_xaxes(title_text="step of the flattened schedule", row=rows, col=1)
    figure.update_xaxes(range=[-0.5, max(len(steps) - 0.5, 0.5)])
    top = TITLE_SPACE + NOTE_HEIGHT * len(notes) + extra
    legend_rows = len(kinds) + 2 + len({transfer.direction for transfer in transfers})
    figure_height = max(height + NOTE_HEIGHT * len(notes), top + 50 + 30 * legend_rows)
    figure.update_layout(**base_layout(
        height=figure_height, hovermode="closest",
        legend=dict(yanchor="top", y=1.0, x=1.01, xanchor="left"),
        title=dict(text=f"Memory over {len(steps):,} schedule steps"
                   + "".join(f"<br><sup>{note}</sup>" for note in notes), x=0.01,
                   yref="container", y=1 - TITLE_TOP / figure_height, yanchor="top"),  # notes grow down
        margin=dict(l=70, r=20, t=top, b=50)))
    return figure


ALWAYS_LIVE_NAMED = 3  # graphs named with their code size in the note of a program without code loading
NOTE_CHARS = 100  # characters a note under the title may take: at its 10-px text, within a 630-px output


def always_live_notes(graphs: Sequence[Graph]) -> list[str]:
    """The note a program without code loading gets for its code: every graph's code stays live, and what
    each of the largest costs (summed over its IPUs), so that the user sees which graph is worth loading with
    ``remote_code_load``; in lines of at most NOTE_CHARS characters."""
    sizes = sorted(((sum(graph_code_bytes(graph).values()), graph.label) for graph in graphs), key=lambda s: -s[0])
    parts = [f"{label} {format_bytes(size)}" for size, label in sizes[:ALWAYS_LIVE_NAMED]]
    if len(sizes) > ALWAYS_LIVE_NAMED:
        parts.append(f"… {len(sizes) - ALWAYS_LIVE_NAMED} more")
    lines = ["all code is always live, none loaded with remote_code_load: " + parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + 2 + len(part) <= NOTE_CHARS:
            lines[-1] += f", {part}"
        else:
            lines[-1] += ","
            lines.append(part)
    return [text(line) for line in lines]


def peak_steps(totals: Sequence[int], span: int) -> np.ndarray:
    """The step of the largest of ``totals`` in each run of ``span`` steps: the steps drawn when there are
    more than a panel has pixels for, so that every peak stays in the picture while the figure (its hovers
    list live tensors per point) stays small."""
    totals = np.asarray(totals, dtype=np.int64)
    if span <= 1 or not len(totals):
        return np.arange(len(totals))
    padded = np.concatenate([totals, np.full(-len(totals) % span, -1, dtype=np.int64)]).reshape(-1, span)
    return np.arange(0, len(padded) * span, span) + padded.argmax(axis=1)


def _memory_title(liveness: TensorLiveness, ipu: int, capacity: int, streaming: int = 0,
                  off_scale: bool = False, shown: Optional[Sequence[int]] = None) -> str:
    """The peak (code included) and its share of ``capacity`` on the first line, and a warning in the
    capacity line's colour when the peak is above it (by how much); below, where code is left out of the
    panel (``shown``: the bytes drawn per step), the peak of the tensors drawn, which is what the panel's
    scale reads; the peak of the intermediates where they are a thin band under a tenth of the scale (ResNet-50's
    on its 96 MiB of weights); then the Streaming Memory and whether the capacity is off the scale (with code
    left out, the scale of the tensors alone: the peak may be above the capacity while it is off the scale).
    Lines of at most PANEL_TITLE_CHARS characters, the parts after the first joined by " · " where they fit."""
    records = liveness.steps[ipu]
    more = ([f"Streaming Memory {format_bytes(streaming)}"] if streaming else []) \
        + ([f"capacity far above{'' if shown is None else ' the tensors shown'}, off the scale"] if off_scale else [])
    warning = []
    if not records:
        first = f"IPU {ipu}: no steps"
    else:
        peak = max(records, key=lambda record: record.total)
        share = 100 * peak.total / capacity if capacity else 0.0
        first = (f"IPU {ipu}: peak {format_bytes(peak.total)}{'' if shown is None else ' with code'} at step "
                 f"{peak.step} ({share:.3g}% of {format_bytes(capacity)})")
        if capacity and peak.total > capacity:  # in the capacity line's colour, on a line of its own
            warning.append(f"<span style='color:{CAPACITY_COLOR}'>⚠ {format_bytes(peak.total - capacity)} over "
                           "its memory: the program does not fit</span>")
        drawn = max(shown) if shown is not None and len(shown) else peak.total
        busiest = max(records, key=lambda record: record.intermediates)
        if 0 < busiest.intermediates < THIN_SHARE * drawn:  # a thin band at this scale: its peak in words
            more.insert(0, f"intermediates: peak {format_bytes(busiest.intermediates)} at step {busiest.step}")
        if shown is not None and len(shown):
            top = int(np.argmax(shown))
            more.insert(0, f"tensors: peak {format_bytes(int(shown[top]))} at step {records[top].step}")
    lines = [first, *warning]
    for number, part in enumerate(more):
        if number and len(lines[-1]) + 3 + len(part) <= PANEL_TITLE_CHARS:
            lines[-1] += f" · {part}"
        else:
            lines.append(part)
    return "<br>".join(lines)


def _add_peak(figure: go.Figure, liveness: TensorLiveness, stacked: Sequence[int], row: int, first: bool,
              with_code: bool) -> None:
    """A star on the panel's largest stack of memory drawn, at its step: however many steps a point stands for,
    the peak is one of them, and a spike one step wide is found at a glance."""
    if not len(stacked):
        return
    step = int(np.argmax(stacked))
    figure.add_trace(go.Scatter(
        x=[step], y=[stacked[step]], mode="markers", name="peak", legendgroup="peak", showlegend=first,
        marker=dict(symbol="star", size=11, color="white", line=dict(width=1.5, color="#262626")),
        hovertext=[f"<b>{step_description(liveness, step)}</b><br>peak{'' if with_code else ' of the tensors'}: "
                   f"{format_bytes(stacked[step])}"],
        hoverinfo="text", customdata=[step], meta=dict(kind="peak")), row=row, col=1)


TRANSFER_LOOKS = {"load": ("loaded from Streaming Memory", "triangle-down"),
                  "store": ("stored to Streaming Memory", "triangle-up")}


def _add_transfers(figure: go.Figure, liveness: TensorLiveness, transfers: Sequence[StreamingTransfer],
                   stacked: Sequence[int], row: int, first: bool, sources: Mapping[Tensor, Tensor]) -> None:
    """A marker on top of the memory at each remote load and store of this IPU, the tensor in its hover (a
    gradient named by what it is the gradient of, as the memory's own hovers name it)."""
    for direction, (name, symbol) in TRANSFER_LOOKS.items():
        chosen = [t for t in transfers if t.direction == direction]
        if not chosen:
            continue
        figure.add_trace(go.Scatter(
            x=[t.step for t in chosen], y=[stacked[t.step] for t in chosen], mode="markers", name=name,
            legendgroup=direction, showlegend=first,
            marker=dict(symbol=symbol, size=9, color=SCHEDULE_COLORS["remote"], line=dict(width=1, color="#262626")),
            hovertext=[f"<b>{step_description(liveness, t.step)}</b><br>{name}: "
                       f"{text(gradient_label(t.tensor, sources))} ({format_bytes(t.nbytes)})" for t in chosen],
            hoverinfo="text", customdata=[t.step for t in chosen], meta=dict(kind=f"remote_{direction}")),
            row=row, col=1)


def _add_code_panel(figure: go.Figure, liveness: TensorLiveness, code_rows, row: int) -> None:
    names = [text(record.graph.label) for record in code_rows]  # tick labels read markup too
    for always, name, color in ((True, "code always live", ALWAYS_LIVE_COLOR), (False, "code loaded", KIND_COLORS["code"])):
        bars = [(record, start, end) for record in code_rows if record.always_live == always
                for start, end in record.intervals]
        if not bars:
            continue
        figure.add_trace(go.Bar(
            y=[text(r.graph.label) for r, _, _ in bars], base=[start - 0.5 for _, start, _ in bars],
            x=[end - start + 1 for _, start, end in bars], orientation="h", name=name, marker_color=color,
            hovertext=[_bar_hover(r, start, end) for r, start, end in bars], hoverinfo="text",
            width=0.6, meta=dict(kind="code")), row=row, col=1)
    for attribute, name, symbol, color in (("load_steps", "remote_code_load", "triangle-right", "#1F4E79"),
                                           ("call_steps", "call", "line-ns-open", "#262626"),
                                           ("ignored_load_steps", "load ignored (branches disagree)", "x-thin-open",
                                            "#7F7F7F")):
        points = [(text(record.graph.label), step) for record in code_rows for step in getattr(record, attribute)]
        if points:
            figure.add_trace(go.Scatter(
                x=[s for _, s in points], y=[g for g, _ in points], mode="markers", name=name,
                marker=dict(symbol=symbol, size=12, color=color, line=dict(width=2, color=color)),
                hovertext=[f"{name} of {g} at {step_description(liveness, s)}" for g, s in points],
                hoverinfo="text", meta=dict(kind=attribute)), row=row, col=1)
    figure.update_yaxes(categoryorder="array", categoryarray=list(reversed(names)), row=row, col=1)
    figure.update_layout(barmode="overlay")


def _bar_hover(record, start: int, end: int) -> str:
    sizes = ", ".join(f"IPU {ipu}: {format_bytes(n)}" for ipu, n in sorted(graph_code_bytes(record.graph).items()))
    how = "always live" if record.always_live else "loaded"
    return f"<b>{text(record.graph.label)}</b> code {how}<br>steps {start} to {end}<br>{sizes or 'no ops'}"
