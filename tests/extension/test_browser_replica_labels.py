"""The replica groups view's row labels in a real browser (JupyterLab, headless Chromium), at 630 and 1280 px:
the 6-layer transformer on 2 replicas (24 all-reduces and 24 variables, each kind folded into one row) and a
program whose one collective reduces a variable with a very long name, and a program of one replica with 100
variables. Every row label is drawn on at most two lines, lies whole inside its output, left of the replica
squares, and overlaps no other label; the heading (with its note, for one replica) ends above the grid's title.
Screenshots go to tests/artifacts/ (replica-*.png)."""
import pytest

from support.jupyterlab_harness import output_width, run_notebook
from test_browser_fit_width import PICTURE_HEIGHTS
from test_browser_grouped import ARTIFACTS, TESTS

pytestmark = pytest.mark.slow

SETUP = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import numpy as np
import popxl
import popxl.ops as ops
import real_programs
from workbench.widgets import ReplicaGroupView


def long_named():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="a_rather_long_variable_name_" * 3)
        ops.collectives.replicated_all_reduce(x)
    return ir


def one_replica():
    ir = popxl.Ir()
    with ir.main_graph:
        for block in range(100):
            with popxl.name_scope(f"block{{block}}"):
                popxl.variable(np.ones(2, np.float32), name="w")
    return ir"""
VIEWS = {"transformer": "ReplicaGroupView(real_programs.transformer()[0], live=False)",
         "long-name": "ReplicaGroupView(long_named(), live=False)",
         "one-replica": "ReplicaGroupView(one_replica(), live=False)"}

# The matrix's row labels (the y ticks of its panel: the second, or the only one of a one-replica picture) with
# their lines, their boxes and the left edge of its squares.
ROW_LABELS = """(output) => {
    const edge = output.getBoundingClientRect();
    const panel = output.querySelector('.y2tick') ? 'x2y2' : 'xy';
    const squares = [...output.querySelectorAll('.scatterlayer .trace')].filter((t) => t.closest('.subplot')?.classList.contains(panel))
        .flatMap((t) => [...t.querySelectorAll('.point')]).map((p) => p.getBoundingClientRect());
    const left = squares.length ? Math.min(...squares.map((b) => b.left)) : null;
    const ticks = panel === 'x2y2' ? '.y2tick text' : '.ytick text';
    return [...output.querySelectorAll(ticks)].map((node) => {
        const box = node.getBoundingClientRect();
        const lines = node.querySelectorAll('tspan.line').length || 1;
        return {text: node.textContent, lines, left: box.left - edge.left, right: box.right - edge.left,
                top: box.top, bottom: box.bottom, width: edge.width, squares: left === null ? null : left - edge.left};
    });
}"""


# The bottom of the figure's heading and the top of the grid's title (the first subplot title).
HEADING_AND_GRID_TITLE = """(output) => {
    const heading = output.querySelector('.g-gtitle text').getBoundingClientRect();
    const grid = output.querySelector('.annotation .annotation-text').getBoundingClientRect();
    return [heading.bottom, grid.top];
}"""


def check_labels(labels: list[dict]) -> None:
    assert labels, "no row labels drawn"
    assert all(label["squares"] is not None for label in labels), "no squares found beside the labels"
    for label in labels:
        assert label["lines"] <= 2, label
        assert label["left"] >= -1 and label["right"] <= label["width"] + 1, label  # whole inside the output
        assert label["right"] <= label["squares"] + 1, label  # left of the squares
    for index, a in enumerate(labels):
        for b in labels[index + 1:]:
            assert a["bottom"] <= b["top"] + 1 or b["bottom"] <= a["top"] + 1, (a, b)


def test_replica_row_labels_are_whole_and_on_two_lines_at_most_at_630_and_1280_px(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "replicas.ipynb", [SETUP, *VIEWS.values()], width=630)
    outputs = {name: page.locator(".jp-Cell").nth(1 + n).locator(".jp-OutputArea-output").first
               for n, name in enumerate(VIEWS)}
    for output in outputs.values():
        output.locator(".ipu-wb-figure-canvas .main-svg").first.wait_for(state="visible")
    page.wait_for_timeout(2500)
    for width in (630, 1280):
        output_width(page, width)
        page.wait_for_timeout(1500)
        for name, output in outputs.items():
            output.screenshot(path=str(ARTIFACTS / f"replica-{name}-{width}px.png"))
            labels = output.evaluate(ROW_LABELS)
            check_labels(labels)
            heading, grid = output.evaluate(HEADING_AND_GRID_TITLE)
            assert heading <= grid, (name, width, heading, grid)
            canvas, picture = output.evaluate(PICTURE_HEIGHTS)
            assert picture > 100 and canvas >= picture, (canvas, picture)
    page.close()
