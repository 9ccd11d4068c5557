"""The replica-groups picture of a program of one replica: nothing groups, so it shows instead the one replica
on its IPUs and, one row per kind of use, how many collectives and variables each IPU holds, in a picture
as tall as its rows, with a line saying how to get more replicas."""
from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from workbench.analysis.replica_groups import GroupingRow, GroupingUse, fold_uses
from ..style import TEMPLATE, base_layout, count_of, group_color, text
from .replica_figure import LINE_PITCH, columns_range, row_labels

# The note under the heading: there is one replica, and how a program gets more (in lines that fit 630 px).
ONE_REPLICA_NOTES = ("one replica: each collective and variable has one group, of replica 0 alone",
                     "more replicas: popxl.Ir(replication=N), poprun --num-replicas N, or PopART's "
                     "replicatedGraphCount")
TITLE_TOP = 14  # pixels from the figure's top to the heading: it and its notes above the panel's title
REPLICA_ROW = "replica 0"
NAMES_PER_LINE = {"collective": 1, "variable": 6}  # names a line in a square's hover (a collective's is long)


def use_ipu(use: GroupingUse) -> int:
    """The IPU a collective runs on or a variable lives on."""
    return use.item.ipu


def one_replica_figure(uses: Sequence[GroupingUse], ipus: Sequence[int] = (), title: str = "1 replica") -> go.Figure:
    """The one replica as a row of squares, one per IPU of ``ipus`` (with those of ``uses``); under it a row per
    kind of use (``fold_uses``), a square at each IPU holding some, with how many; hovering one lists them."""
    rows = fold_uses(list(uses))
    columns = sorted(set(ipus) | {use_ipu(use) for use in uses} | ({0} if not ipus and not uses else set()))
    labels = row_labels(rows)
    heights = [max(28, LINE_PITCH * (label.count("<br>") + 1) + 10) for label in labels]
    figure = go.Figure()
    figure.layout.template = TEMPLATE  # in place of plotly's default
    place = {ipu: index for index, ipu in enumerate(columns)}
    figure.add_trace(go.Scatter(
        x=[place[ipu] for ipu in columns], y=[REPLICA_ROW] * len(columns), mode="markers+text", name=REPLICA_ROW,
        text=[f"IPU {ipu}" for ipu in columns], textfont=dict(color="white", size=10), showlegend=False,
        marker=dict(symbol="square", size=34, color=group_color(0)), meta=dict(panel="replica"),
        hovertext=[f"replica 0, IPU {ipu}: {_held(rows, ipu)}" for ipu in columns], hoverinfo="text"))
    cells = [(row, label, ipu, [use for use in row.uses if use_ipu(use) == ipu])
             for row, label in zip(rows, labels) for ipu in columns]
    cells = [cell for cell in cells if cell[3]]
    figure.add_trace(go.Scatter(
        x=[place[ipu] for _, _, ipu, _ in cells], y=[label for _, label, _, _ in cells], mode="markers+text",
        name="held", text=[str(len(held)) for *_, held in cells], textfont=dict(color="white", size=10),
        showlegend=False, marker=dict(symbol="square", size=22, color=group_color(0)), meta=dict(panel="matrix"),
        hovertext=[_cell_hover(row, ipu, held) for row, _, ipu, held in cells], hoverinfo="text"))
    plot = 46 + sum(heights)  # the replica's row, then the rows of uses
    top = 60 + 18 * len(ONE_REPLICA_NOTES)
    panel = "replica 0 on its IPUs, and how many collectives and variables each holds"
    figure.add_annotation(text=panel, x=0, xref="paper", xanchor="left", y=1, yref="paper", yanchor="bottom",
                          yshift=8, showarrow=False, align="left", name="panel title")
    notes = "".join(f"<br><sup>{text(note)}</sup>" for note in ONE_REPLICA_NOTES)
    # the replica's squares name the IPUs: the columns under them need no ticks
    figure.update_xaxes(visible=False, range=columns_range(len(columns)))
    figure.update_yaxes(categoryorder="array", categoryarray=list(reversed([REPLICA_ROW, *labels])),
                        showgrid=False, zeroline=False)
    height = plot + top + 20
    figure.update_layout(**base_layout(
        title=dict(text=f"{text(title)}{notes}", x=0.01, yref="container", yanchor="top", y=1 - TITLE_TOP / height),
        height=height, showlegend=False, margin=dict(l=20, r=20, t=top, b=20)))
    return figure


def _held(rows: Sequence[GroupingRow], ipu: int) -> str:
    """'24 collectives, 12 variables' on ``ipu``, or 'nothing'."""
    counts = [(sum(1 for use in row.uses if use_ipu(use) == ipu), row.uses[0].noun) for row in rows]
    return ", ".join(count_of(n, noun) for n, noun in counts if n) or "no collective or variable"


def _cell_hover(row: GroupingRow, ipu: int, held: Sequence[GroupingUse]) -> str:
    """Every use of ``row`` on ``ipu`` by name, a few to a line."""
    names, each = [text(use.name) for use in held], NAMES_PER_LINE[held[0].kind]
    lines = [", ".join(names[start:start + each]) for start in range(0, len(names), each)]
    return f"<b>{count_of(len(held), held[0].noun)} on IPU {ipu}</b>:<br>" + "<br>".join(lines)
