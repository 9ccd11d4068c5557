"""The side-by-side diff figure: before on the left, after on the right, one row per op or fold, a summary
of the transform on top (counts per outermost name scope and per op type)."""
from __future__ import annotations

from typing import Union

import plotly.graph_objects as go

from workbench.export.diff_folds import DiffFold, OpenFold
from workbench.export.graph_diff import DiffRow, GraphDiff

from ..style import PICTURE_WIDTH, TEMPLATE, TITLE_UNDER_TOOLBAR as TITLE_TOP, base_layout, text, text_array

STATUS_LOOK = {  # status -> (legend name, marker colour)
    "same": ("unchanged", "#BFBFBF"),
    "changed": ("changed (hover for what)", "#ED7D31"),
    "removed": ("removed", "#C00000"),
    "added": ("added", "#70AD47"),
}
FOLD_NAME = "folded ops (click to unfold)"
OPEN_NAME = "unfolded (click ▾ to fold)"
BANDS = {"folded": "#F2F2F2", "open": "#E3EAF4"}  # the background of a fold's row and of an open fold's heading
ROW_HEIGHT = 20
MAX_ROWS = 400  # rows drawn; the rest are counted in the title
SIDE_MARGIN = 20  # pixels left and right of the plot
X_RANGE = (-0.05, 2.0)  # before's markers at x=0, after's at x=1, each side's labels to the right of its markers
LABEL_CHAR_WIDTH = 6.7  # pixels per character of an 11 px monospace label
LABEL_OFFSET = 9  # pixels from a marker's centre to its label's first character
TITLE_CHAR_WIDTH = 8  # pixels per character of the title, bold names and plain counts together
TITLE_LINE = 22  # pixels per line of the title
SUMMARY_LINE = 15  # pixels per line of the summary under the title (11 px monospace)
SUMMARY_LINES = {"scope": 3, "type": 2}  # the most lines each part of the summary takes
LEGEND_ROW = 24  # pixels per row of the legend
LEGEND_CHAR_WIDTH = 7  # pixels per character of a legend entry (12 px), plus LEGEND_SYMBOL for its mark
LEGEND_SYMBOL = 46


def plot_width(width: int) -> float:
    return width - 2 * SIDE_MARGIN


def pixel(x: float, width: int) -> float:
    """The pixel, from the figure's left edge, of ``x`` in data coordinates."""
    return SIDE_MARGIN + (x - X_RANGE[0]) / (X_RANGE[1] - X_RANGE[0]) * plot_width(width)


def label_room(width: int, x: float = 0, to_edge: bool = False) -> int:
    """Characters of a label from a marker at ``x`` that fit before the other side's marker (or, with
    ``to_edge``, before the plot's right edge) in a figure ``width`` pixels wide."""
    end = pixel(1, width) - LABEL_OFFSET if x == 0 and not to_edge else width - SIDE_MARGIN
    return max(8, int((end - pixel(x, width) - LABEL_OFFSET) // LABEL_CHAR_WIDTH))


def shortened(label: str, room: int) -> str:
    return label if len(label) <= room else label[:room - 1] + "…"


def wrapped(items: list[str], room: int, most: int, lead: str) -> list[str]:
    """``items`` joined by " · " after ``lead`` into lines of ``room`` characters, at most ``most`` lines
    (the last ending in "…" where items are left out)."""
    lines: list[str] = []
    line = lead
    for index, item in enumerate(items):
        piece = item if line == lead else " · " + item
        if len(line) + len(piece) <= room:
            line += piece
            continue
        if len(lines) + 1 == most:
            lines.append(shortened(line + " · …", room) if index < len(items) else line)
            return lines
        lines.append(line)
        line = " " * len(lead) + item
    lines.append(line)
    return lines


def summary_lines(diff: GraphDiff, width: int) -> list[str]:
    """What the transform did at a glance: added (+), removed (−) and changed (~) ops per outermost scope,
    and how the number of ops of each type changed."""
    room = int(plot_width(width) // LABEL_CHAR_WIDTH)
    signs = (("removed", "−"), ("added", "+"), ("changed", "~"))
    scopes = [f"{scope or '(top)'} " + " ".join(f"{sign}{counts[status]}" for status, sign in signs if counts[status])
              for scope, counts in diff.scope_changes().items()]
    types = sorted(diff.type_changes().items(), key=lambda item: (-abs(item[1]), item[0]))
    kinds = [f"{'+' if n > 0 else '−'}{abs(n)} {name}" for name, n in types]
    lines = wrapped(scopes, room, SUMMARY_LINES["scope"], "by scope: ") if len(scopes) > 1 or scopes and scopes[0][0] != "(" else []
    return lines + (wrapped(kinds, room, SUMMARY_LINES["type"], "by type:  ") if kinds else [])


def legend_rows(names: list[str], width: int) -> int:
    rows, used = 1, 0.0
    for name in names:
        entry = LEGEND_SYMBOL + LEGEND_CHAR_WIDTH * len(name)
        if used and used + entry > plot_width(width):
            rows, used = rows + 1, 0.0
        used += entry
    return rows


def diff_figure(diff: GraphDiff, shown: list[Union[DiffRow, DiffFold, OpenFold]], width: int = PICTURE_WIDTH) -> go.Figure:
    """Before on the left, after on the right, one row per item of ``shown``: an op, a fold (a grey band
    saying what it holds) or an open fold's heading (a blue band); markers and labels coloured by status,
    labels shortened to fit."""
    rows = shown[:MAX_ROWS]
    figure = go.Figure(layout=dict(template=TEMPLATE))
    folds = [(index, item) for index, item in enumerate(rows) if isinstance(item, DiffFold)]
    heads = [(index, item.fold) for index, item in enumerate(rows) if isinstance(item, OpenFold)]
    for kind, banded in (("folded", folds), ("open", heads)):
        if banded:
            figure.add_trace(go.Bar(
                orientation="h", y=[-index for index, _ in banded], x=[X_RANGE[1] - X_RANGE[0] - 0.02] * len(banded),
                base=[X_RANGE[0] + 0.01] * len(banded), width=0.86, marker=dict(color=BANDS[kind], line=dict(width=0)),
                customdata=text_array(fold.key for _, fold in banded), showlegend=False,
                hovertext=text_array(_fold_hover(fold, kind == "open") for _, fold in banded), hoverinfo="text",
                meta=dict(status=kind, side="band")))
    legend: list[str] = []
    for status, (name, color) in STATUS_LOOK.items():
        for side, x in (("before", 0), ("after", 1)):
            points = [(index, getattr(row, side), row) for index, row in enumerate(rows)
                      if isinstance(row, DiffRow) and row.status == status and getattr(row, side) is not None]
            if not points:
                continue
            room = label_room(width, x)
            shows = name not in legend
            legend += [name] if shows else []
            figure.add_trace(go.Scatter(
                x=[x] * len(points), y=[-index for index, _, _ in points], mode="markers+text", name=name,
                legendgroup=status, showlegend=shows, marker=dict(symbol="square", size=10, color=color),
                text=text_array(text(shortened(f"{op['type']}  {op['name']}", room)) for _, op, _ in points),
                textposition="middle right", textfont=dict(size=11, family="monospace",
                                                           color="#262626" if status != "same" else "#7F7F7F"),
                customdata=text_array(op["id"] for _, op, _ in points),
                hovertext=text_array(_hover(op, row) for _, op, row in points), hoverinfo="text",
                meta=dict(status=status, side=side)))
    if folds:
        legend.append(FOLD_NAME)
        _add_fold_labels(figure, folds, width, opened=False)
    if heads:
        legend.append(OPEN_NAME)
        _add_fold_labels(figure, heads, width, opened=True)
    return _laid_out(figure, diff, len(rows), len(shown), legend, width)


def _add_fold_labels(figure: go.Figure, folds: list[tuple[int, DiffFold]], width: int, opened: bool) -> None:
    """A marker and a label per side that has ops in the fold (one across both sides for unchanged ops); an
    open fold's heading points down."""
    points = []
    for index, fold in folds:
        counts = fold.counts()
        if counts["same"]:
            points.append((0, index, fold, "same", label_room(width, 0, to_edge=True)))
            continue
        for x, status in ((0, "removed"), (1, "added")):
            if counts[status]:
                points.append((x, index, fold, status, label_room(width, x)))
    label = (lambda fold, status: f"{fold.what(status)} (click ▾ to fold)") if opened else DiffFold.describe
    figure.add_trace(go.Scatter(
        x=[x for x, *_ in points], y=[-index for _, index, *_ in points], mode="markers+text",
        name=OPEN_NAME if opened else FOLD_NAME,
        marker=dict(symbol="triangle-down" if opened else "triangle-right", size=10,
                    color=[STATUS_LOOK[status][1] for *_, status, _ in points]),
        text=text_array(text(shortened(label(fold, status), room)) for _, _, fold, status, room in points),
        textposition="middle right", textfont=dict(size=11, family="monospace", color="#595959"),
        customdata=text_array(fold.key for _, _, fold, _, _ in points),
        hovertext=text_array(_fold_hover(fold, opened) for _, _, fold, _, _ in points), hoverinfo="text",
        meta=dict(status="open" if opened else "folded", side="both")))


def _laid_out(figure: go.Figure, diff: GraphDiff, drawn: int, total: int, legend: list[str], width: int) -> go.Figure:
    sides = f"{diff.before_label} (left) → {diff.after_label} (right): "
    counts = f"{diff.count('added')} added, {diff.count('removed')} removed, {diff.count('changed')} changed"
    wraps = len(sides + counts) * TITLE_CHAR_WIDTH > plot_width(width)  # the counts on a line of their own
    title = (f"<b>{text(diff.before_label)}</b> (left) → <b>{text(diff.after_label)}</b> (right): "
             + ("<br>" if wraps else "") + counts
             + (f"<br><sup>the first {MAX_ROWS} rows of {total}</sup>" if total > drawn else ""))
    title_px = TITLE_LINE * (1 + wraps + (total > drawn))
    summary = summary_lines(diff, width)
    legend_px = LEGEND_ROW * legend_rows(legend, width)
    top = TITLE_TOP + title_px + SUMMARY_LINE * len(summary) + legend_px + 6
    height = max(200, ROW_HEIGHT * drawn + top + 30)
    if summary:
        figure.add_annotation(text="<br>".join(text(line) for line in summary), xref="paper", x=0, xanchor="left",
                              yref="paper", y=1, yanchor="bottom", yshift=legend_px, align="left", showarrow=False,
                              font=dict(size=11, family="monospace", color="#404040"))
    figure.update_layout(**base_layout(
        title=dict(text=title, x=0.01, xanchor="left", yref="container", y=1 - TITLE_TOP / height, yanchor="top"),
        width=width, height=height,
        xaxis=dict(visible=False, range=list(X_RANGE), fixedrange=True),
        yaxis=dict(visible=False, range=[-max(drawn, 1) + 0.5, 0.5]),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0.0, xanchor="left"),
        margin=dict(l=SIDE_MARGIN, r=SIDE_MARGIN, t=top, b=20), dragmode="pan", showlegend=True))
    return figure


def _hover(op: dict, row: DiffRow) -> str:
    lines = [f"<b>{text(op['type'])}</b> {text(op['name'])}", f"IPU {op['ipu']}"]
    lines += [text(change) for change in row.changes]
    return "<br>".join(lines)


def _fold_hover(fold: DiffFold, opened: bool = False) -> str:
    counts = fold.counts()
    lines = [f"<b>{text(fold.describe(status))}</b>" for status in ("same", "removed", "added") if counts[status]]
    for side in ("before", "after"):
        types = fold.side_counts(side).most_common(6)
        if types and not counts["same"] or side == "before" and types:
            lines.append(f"{side}: " + ", ".join(f"{n} {text(name)}" for name, n in types)
                         + (", …" if len(fold.side_counts(side)) > 6 else ""))
    return "<br>".join(lines + ["click to fold again" if opened else "click to unfold"])
