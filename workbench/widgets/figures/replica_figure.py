"""Replica groups: one grouping as a grid of replicas coloured by group, the grouping of every
collective and variable as a replicas-by-user matrix, and per-group variable values after a run as
an HTML table."""
from __future__ import annotations

import html
import re
from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from workbench.analysis.replica_groups import GroupingRow, GroupingUse, GroupValue, fold_uses
from workbench.ir import ReplicaGrouping, Variable

from ..style import TEMPLATE, base_layout, count_of, group_color, group_tint, text

VALUE_ELEMENTS = 8  # values with more elements are summarised (shape, mean, min, max)
PANEL_GAP = 72  # pixels between panels: the axis ticks and title above, the next panel's title below
TITLE_NAME = 80  # characters per line of the grid title's user: a longer name wraps
ROW_NAME = 48  # characters per line of a matrix row's label: longer ones wrap, so the matrix keeps its width
ROW_LINES = 2  # lines of a row's label at most: a longer one is shortened in its middle (its hover has it whole)
LINE_PITCH = 15  # pixels per line of a row label
NARROW_OUTPUT = 800  # pixels: in an output narrower than this the legend goes under the picture
LEGEND_LINE = 24  # pixels per line of the legend under the picture


def grid_columns(replicas: int) -> int:
    return replicas if replicas <= 16 else 8


def columns_range(columns: int) -> list[float]:
    """The x range of ``columns`` replica columns: at least 8 wide, so a few replicas stay together on
    the left however wide the figure is; the grid and the matrix line up up to 16 replicas."""
    return [-0.6, max(columns, 8) - 0.4]


def format_value(value: np.ndarray) -> str:
    value = np.asarray(value)
    if value.size <= VALUE_ELEMENTS:
        return np.array2string(value, precision=4, separator=", ", threshold=VALUE_ELEMENTS)
    as_float = value.astype(np.float64)
    return (f"shape {tuple(value.shape)}: mean {as_float.mean():.4g}, min {as_float.min():.4g}, "
            f"max {as_float.max():.4g}")


def replica_group_figure(grouping: ReplicaGrouping, uses: Sequence[GroupingUse],
                         title: Optional[str] = None, instances: Sequence[range] = (),
                         narrow: bool = False, ipus: Sequence[int] = ()) -> go.Figure:
    """Grid of ``grouping``; matrix of ``uses``, one row per kind and grouping. Of one replica, where nothing
    groups, the replica on its ``ipus`` and what each holds instead (``one_replica_figure``). With several
    ``instances`` (processes of a popdist job, as global replica ranges), dashed lines part their
    replicas in the matrix, and in the grid where it is one row. ``narrow`` (an output under
    NARROW_OUTPUT pixels) puts the legend under the picture: beside it, with the matrix's row labels, it
    left the replica columns narrower than their squares, which overlapped."""
    if grouping.num_replicas == 1 and len(instances) <= 1:
        from .one_replica_figure import one_replica_figure  # it draws with this module's helpers

        return one_replica_figure(uses, ipus, title or "1 replica")
    rows = fold_uses(list(uses))
    panels = ["grid"] + (["matrix"] if uses else [])
    grid_rows = -(-grouping.num_replicas // grid_columns(grouping.num_replicas))
    lines = max((label.count("<br>") + 1 for label in row_labels(rows)), default=1)
    pixels = {"grid": 20 + 46 * grid_rows, "matrix": 20 + max(28, LINE_PITCH * lines + 10) * len(rows)}
    titles = {"grid": _grid_title(grouping, uses), "matrix": "Groups of each collective and variable"}
    plot = sum(pixels[p] for p in panels) + PANEL_GAP * (len(panels) - 1)
    figure = make_subplots(rows=len(panels), cols=1, row_heights=[pixels[p] for p in panels],
                           vertical_spacing=PANEL_GAP / plot if len(panels) > 1 else None,
                           subplot_titles=[titles[p] for p in panels])
    figure.layout.template = TEMPLATE  # in place of plotly's default
    # Titles start at the left of the panels and may run on over the legend, never off the figure.
    figure.update_annotations(x=0, xanchor="left", align="left")
    _add_grid(figure, grouping, 1)
    if uses:
        _add_matrix(figure, grouping.num_replicas, rows, 2)
    if len(instances) > 1:
        one_row = grid_columns(grouping.num_replicas) == grouping.num_replicas
        if one_row:
            _add_instances(figure, instances, 1, grid=True)
        if uses:
            _add_instances(figure, instances, 2, grid=False)
    top = 70 + 20 * (titles["grid"].count("<br>") + 1)
    legend = dict(title_text="groups", yanchor="top", y=1.0)
    below = 0
    if narrow:  # two groups a line, under the picture
        below = LEGEND_LINE * -(-grouping.num_groups // 2) + 10
        legend = dict(title_text="groups", orientation="h", x=0, xanchor="left", y=0, yref="container",
                      yanchor="bottom")
    words = title or count_of(grouping.num_replicas, "replica")
    heading = dict(text=words, x=0.01)
    figure.update_layout(**base_layout(
        title=heading, height=plot + top + 20 + below, legend=legend, margin=dict(l=20, r=20, t=top, b=20 + below)))
    return figure


def values_table_html(values: dict[Variable, list[GroupValue]]) -> str:
    """Each group's value of each variable after the last run, as an HTML table whose rows wrap
    rather than get cut, each row tinted with its group's colour."""
    cell = "padding:3px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #E0E0E0;"
    head = "".join(f'<th style="{cell}background:#F2F2F2">{name}</th>'
                   for name in ("variable", "group", "replicas", "value"))
    rows = []
    for variable, entries in values.items():
        for entry in entries:
            fields = (variable.name, str(entry.group), ", ".join(map(str, entry.replicas)), format_value(entry.value))
            cells = "".join(f'<td style="{cell}">{html.escape(field)}</td>' for field in fields)
            rows.append(f'<tr style="background:{group_tint(entry.group)}">{cells}</tr>')
    return ('<div class="ipu-wb-values"><b>Variable values per group after the last run</b>'
            f'<table style="border-collapse:collapse;font:12px sans-serif;margin-top:4px">'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def grouping_shape(grouping: ReplicaGrouping) -> str:
    """How a grouping splits the replicas, in words: '2 groups (stride 1, group size 2)'."""
    if grouping.is_const:
        shape = f"stride {grouping.stride}, group size {grouping.group_size}"
    else:
        listed = ", ".join(map(str, grouping.assignment[:16])) + (", ..." if grouping.num_replicas > 16 else "")
        shape = f"assignment [{listed}]"
    return f"{count_of(grouping.num_groups, 'group')} ({shape})"


def _grid_title(grouping: ReplicaGrouping, uses: Sequence[GroupingUse]) -> str:
    """The grouping, then on a second line the one collective or variable using it, else how many do
    (the matrix below names them all)."""
    users = [use for use in uses if use.grouping == grouping]
    title = grouping_shape(grouping)
    if len(users) == 1:
        return title + "<br>" + _wrapped(users_in_words(users), TITLE_NAME)
    return title + ("<br>" + users_in_words(users) if users else "")


def users_in_words(users: Sequence[GroupingUse]) -> str:
    """"used by" the one collective or variable of ``users``, else how many of each kind: the names of many
    would not fit on a line."""
    if len(users) == 1:
        return f"used by {users[0].label}"
    counts: dict[str, int] = {}
    for use in users:
        counts[use.noun] = counts.get(use.noun, 0) + 1
    parts = [f"{n} {noun}{'s' if n > 1 else ''}" for noun, n in counts.items()]
    return "used by " + (", ".join(parts[:-1]) + " and " if len(parts) > 1 else "") + parts[-1]


def _add_grid(figure: go.Figure, grouping: ReplicaGrouping, row: int) -> None:
    columns = grid_columns(grouping.num_replicas)
    for group, members in enumerate(grouping.groups()):
        figure.add_trace(go.Scatter(
            x=[r % columns for r in members], y=[-(r // columns) for r in members], mode="markers+text",
            name=f"group {group}: replicas {', '.join(map(str, members))}", legendgroup=f"group{group}",
            text=[str(r) for r in members], textfont=dict(color="white", size=12),
            marker=dict(symbol="square", size=34, color=group_color(group)),
            customdata=members, meta=dict(panel="grid", group=group),
            hovertext=[f"replica {r}: group {group} with {', '.join(map(str, members))}" for r in members],
            hoverinfo="text"), row=row, col=1)
    rows = -(-grouping.num_replicas // columns)
    figure.update_xaxes(visible=False, range=columns_range(columns), row=row, col=1)
    figure.update_yaxes(visible=False, range=[-rows + 0.4, 0.6], row=row, col=1)


def _add_matrix(figure: go.Figure, replicas: int, uses: Sequence[GroupingRow], row: int) -> None:
    labels = row_labels(uses)
    label_of = {id(use): label for use, label in zip(uses, labels)}
    most = max(use.grouping.num_groups for use in uses)
    for group in range(most):
        cells = [(use, r) for use in uses if group < use.grouping.num_groups for r in use.grouping.members(group)]
        figure.add_trace(go.Scatter(
            x=[r for _, r in cells], y=[label_of[id(use)] for use, _ in cells], mode="markers+text",
            name=f"group {group}", legendgroup=f"group{group}", showlegend=False,
            text=[str(group)] * len(cells), textfont=dict(color="white", size=10),
            marker=dict(symbol="square", size=22 if replicas <= 16 else 12, color=group_color(group)),
            meta=dict(panel="matrix", group=group),
            hovertext=[f"{_every_name(use)}<br>replica {r} is in group {group} with "
                       f"{', '.join(map(str, use.grouping.members(group)))}{_storage_note(use)}" for use, r in cells],
            hoverinfo="text"), row=row, col=1)
    figure.update_xaxes(title_text="replica", tickmode="array", range=columns_range(replicas),
                        tickvals=list(range(0, replicas, 1 if replicas <= 16 else 4)), row=row, col=1)
    figure.update_yaxes(categoryorder="array", categoryarray=list(reversed(labels)), row=row, col=1)


def _add_instances(figure: go.Figure, instances: Sequence[range], row: int, grid: bool) -> None:
    """Dashed lines between the instances' replicas; their names under the grid's squares, or in
    the matrix's axis title."""
    for index, replicas in enumerate(instances):
        if index:
            figure.add_vline(x=replicas.start - 0.5, line=dict(color="#595959", width=1.5, dash="dash"),
                             row=row, col=1, name="instance boundary")
        if grid:
            axis = "" if row == 1 else row
            figure.add_annotation(x=(replicas.start + replicas.stop - 1) / 2, y=0, yref=f"y{axis} domain",
                                  xref=f"x{axis}", text=f"instance {index}", showarrow=False, yanchor="top",
                                  font=dict(size=10, color="#595959"), name="instance")
    if not grid:
        names = " · ".join(f"instance {i}: {r.start}–{r.stop - 1}" if len(r) > 1 else f"instance {i}: {r.start}"
                           for i, r in enumerate(instances))
        figure.update_xaxes(title_text=f"replica ({names})", row=row, col=1)


def _every_name(row: GroupingRow, per_line: int = 6) -> str:
    """Every use of a row by name, a few to a line (the row's label names only the first two)."""
    if len(row.uses) == 1:
        return text(row.label)
    names = [text(use.name) for use in row.uses]
    lines = [", ".join(names[start:start + per_line]) for start in range(0, len(names), per_line)]
    return f"<b>{len(row.uses)} {row.uses[0].noun}s</b>:<br>" + "<br>".join(lines)


def _storage_note(row: GroupingRow) -> str:
    """Where a row's variables live, for its hover: Streaming Memory, and the slice each replica holds."""
    first = row.uses[0]
    if first.storage == "RTS":
        return (f"<br>in Streaming Memory, sharded over {first.shards} replicas: each holds "
                f"1/{first.shards} of each variable")
    if first.storage == "remote":
        return "<br>in Streaming Memory (remote buffers), loaded onto the IPU where used"
    return ""


def row_labels(rows: Sequence[GroupingRow]) -> list[str]:
    """Each row's label as the matrix draws it: wrapped, on at most ROW_LINES lines (a longer label keeps its
    start and end around a '…'), and told apart from every other row's (plotly merges rows of one label)."""
    labels: list[str] = []
    for row in rows:
        label = _shortened(row.label)
        copy = 1
        while label in labels:
            copy += 1
            label = _shortened(f"{row.label} ({copy})")
        labels.append(label)
    return labels


def _shortened(label: str) -> str:
    """``label`` wrapped; where that takes more than ROW_LINES lines, its middle left out."""
    wrapped, keep = _wrapped(label), ROW_LINES * ROW_NAME - 1
    while wrapped.count("<br>") >= ROW_LINES and keep > 8:
        wrapped = _wrapped(label[:keep // 2] + "…" + label[len(label) - (keep - keep // 2 - 1):])
        keep -= 4
    return wrapped


def _wrapped(label: str, most: int = ROW_NAME) -> str:
    """``label`` escaped (plotly's labels read markup) and wrapped into lines of at most ``most`` characters,
    at spaces, after the ``/`` of a name scope, and within a part longer than a line: whole, never cut."""
    lines: list[str] = []
    for number, word in enumerate(label.split(" ")):
        parts = [chunk for piece in re.findall(r"[^/]*/|[^/]+", word) or [""]
                 for chunk in (piece[start:start + most] for start in range(0, max(len(piece), 1), most))]
        for part_number, part in enumerate(parts):
            joined = (" " if number and not part_number else "") + part
            if lines and len(lines[-1]) + len(joined) <= most:
                lines[-1] += joined
            else:
                lines.append(part)
    return "<br>".join(text(line) for line in lines)
