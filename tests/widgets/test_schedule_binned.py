"""A schedule of thousands of op executions is drawn in time bins: one bar per row, kind and bin that says which
ops it holds, every execution in exactly one, the figure small; clicking a bin selects its first op, whose
executions are outlined one by one as before."""
import json

import pytest

from real_programs import long_chain, wide_program
from widget_programs import click, trace
from workbench.widgets import ScheduleView
from workbench.widgets.figure_canvas import figure_json
from workbench.widgets.figures.schedule_bins import BINNED_ABOVE, BINS_PER_ROW
from workbench.widgets.figures.schedule_figure import schedule_bars
from workbench.widgets.style import SCHEDULE_LABELS


@pytest.fixture(scope="module")
def wide_view():
    return ScheduleView(wide_program(), live=False)


def test_ten_thousand_executions_are_drawn_as_a_few_hundred_bars_that_hold_every_one(wide_view):
    bars = schedule_bars(wide_view.events)
    assert len(bars) > BINNED_ABOVE
    figure = wide_view.figure
    kinds = [t for t in figure.data if (t.meta or {}).get("binned")]
    assert {t.name for t in kinds} == {SCHEDULE_LABELS["compute"], SCHEDULE_LABELS["host_io"]}
    compute = trace(figure, SCHEDULE_LABELS["compute"])
    assert len(compute.x) <= BINS_PER_ROW
    counted = sum(int(hover.split(": ")[1].split(" op execution")[0].replace(",", ""))
                  for t in kinds for hover in t.hovertext)
    assert counted == len(bars)
    ends = [base + length for base, length in zip(compute.base, compute.x)]
    computed = [bar for bar in bars if wide_view.events[bar.event].kind == "compute"]
    assert max(ends) == max(bar.end for bar in computed) and min(compute.base) == min(bar.start for bar in computed)
    assert "gathered by kind into spans of" in figure.layout.title.text
    assert len(json.dumps(figure_json(figure))) < 300_000


def test_a_bins_hover_names_its_first_and_last_op_and_its_commonest_types(wide_view):
    compute = trace(wide_view.figure, SCHEDULE_LABELS["compute"])
    hover = compute.hovertext[5]
    first = wide_view.events[compute.customdata[5]].op
    assert hover.startswith("<b>compute: ") and first.name in hover and "matmul" in hover and "relu" in hover
    assert f"cycles {compute.base[5]:,} to {compute.base[5] + compute.x[5]:,}" in hover and " … " in hover


def test_clicking_a_bin_selects_its_first_op_and_outlines_its_executions(wide_view):
    wide_view.widget
    compute = trace(wide_view.figure, SCHEDULE_LABELS["compute"])
    index = int(compute.customdata[5])
    click(wide_view._canvas, SCHEDULE_LABELS["compute"], index)
    op = wide_view.events[index].op
    assert wide_view.selection.op is op
    outlined = trace(wide_view.figure, "selected op", kind="selected op")
    assert list(outlined.customdata) == [i for i, event in enumerate(wide_view.events) if event.op is op]


def test_a_schedule_under_the_limit_keeps_a_bar_per_execution():
    view = ScheduleView(long_chain(1500), live=False)
    bars = schedule_bars(view.events)
    assert len(bars) <= BINNED_ABOVE
    assert sum(len(t.x) for t in view.figure.data if t.name == SCHEDULE_LABELS["compute"]) == sum(
        1 for bar in bars if view.events[bar.event].kind == "compute")
    assert not any((t.meta or {}).get("binned") for t in view.figure.data)


def test_a_strip_under_the_bins_says_which_group_of_name_scopes_ran_when(wide_view):
    groups = trace(wide_view.figure, "groups (name scopes)")
    labels = [hover.split("</b>")[0][len("<b>"):] for hover in groups.hovertext]
    assert labels == [f"block{first} … block{first + 19}" for first in range(0, 100, 20)]
    assert all("2,000 op executions" in hover for hover in groups.hovertext)
    spans = list(zip(groups.base, groups.x))
    assert all(start + length <= following for (start, length), (following, _) in zip(spans, spans[1:]))
    assert len(set(groups.marker.color)) == 2  # alternating, so that neighbours stand apart
    assert list(groups.text) == labels and groups.textposition == "inside"  # named on the strip where it fits
    assert wide_view.figure.layout.uniformtext.mode == "hide"  # and where it does not, in the hover only
