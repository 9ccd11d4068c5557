"""The diff and memory views in a real browser (JupyterLab, headless Chromium) fit a narrow (630 px) and a
normal (848 px: a 1280-px window with the file browser open) notebook output: the diff's plot, legend,
toolbar and labels inside the output; the memory view's picture as tall as its output holds, not hanging
below it over the next cell. Screenshots go to tests/artifacts/ (diff-*px.png, liveness-630px.png)."""
import pytest

from support.jupyterlab_harness import output_width, run_notebook
from test_browser_grouped import ARTIFACTS, TESTS

pytestmark = pytest.mark.slow

DIFF = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import numpy as np
import popxl
import popxl.ops as ops
from support.programs import mlp_training
from workbench.widgets import DiffView, LivenessView


def scoped(axis):
    ir = popxl.Ir()
    with ir.main_graph, popxl.name_scope("encoder_layer_with_a_long_descriptive_scope_name"):
        x = popxl.variable(np.ones((4, 4), np.float32), name="x")
        for _ in range(3):
            x = ops.relu(x @ x)
        ops.softmax(x, axis=axis)
    return ir


DiffView(scoped(1), scoped(0))"""
LIVENESS = "LivenessView(mlp_training()[0], live=False)"

# What of a drawn plot sticks out of its output: the plot, its legend, its toolbar, its labels and titles.
STICKING_OUT = """(output) => {
    const edge = output.getBoundingClientRect();
    const out = [];
    const parts = ['.main-svg', '.legend', '.modebar', '.textpoint text', '.annotation-text', '.gtitle'];
    for (const selector of parts) {
        for (const node of output.querySelectorAll(selector)) {
            const box = node.getBoundingClientRect();
            if (box.width === 0) continue;
            if (box.left < edge.left - 1 || box.right > edge.right + 1)
                out.push(`${selector} "${(node.textContent || '').slice(0, 40)}" from ${Math.round(box.left - edge.left)} to ${Math.round(box.right - edge.left)} px of ${Math.round(edge.width)}`);
        }
    }
    return out;
}"""

# The height of a figure's canvas and of the picture plotly drew in it.
PICTURE_HEIGHTS = """(output) => {
    const canvas = output.querySelector('.ipu-wb-figure-canvas');
    return [canvas.getBoundingClientRect().height, canvas.querySelector('.main-svg').getBoundingClientRect().height];
}"""


def test_the_diff_and_memory_views_fit_narrow_and_normal_outputs(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "fit.ipynb", [DIFF, LIVENESS], width=630)
    diff, liveness = (page.locator(".jp-Cell").nth(n).locator(".jp-OutputArea-output").first for n in (0, 1))
    for output in (diff, liveness):
        output.locator(".ipu-wb-figure-canvas .main-svg").first.wait_for(state="visible")
    page.wait_for_timeout(2500)  # the page tells the kernel its width; the picture comes back laid out for it
    assert diff.evaluate(STICKING_OUT) == []
    canvas, picture = diff.evaluate(PICTURE_HEIGHTS)
    assert picture > 100 and canvas >= picture, (canvas, picture)
    assert diff.locator(".textpoint text", has_text="…").count() > 0  # long names shortened, whole on hover
    diff.screenshot(path=str(ARTIFACTS / "diff-630px.png"))
    canvas, picture = liveness.evaluate(PICTURE_HEIGHTS)
    assert picture > 100 and canvas >= picture, (canvas, picture)
    liveness.screenshot(path=str(ARTIFACTS / "liveness-630px.png"))
    output_width(page, 848)
    page.wait_for_timeout(2500)
    assert diff.evaluate(STICKING_OUT) == []
    diff.screenshot(path=str(ARTIFACTS / "diff-848px.png"))
    page.close()
