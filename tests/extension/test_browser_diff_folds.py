"""Diffs of real-size transforms in a real browser (JupyterLab, headless Chromium): the 6-layer transformer's
forward graph against its gradient graph, and its forward graph before and after PopART's Inplace pattern.
At a 630-px and a 1280-px notebook output each first view is at most 1,500 px tall, inside its output, with no
two labels overlapping; a click on a fold opens it in place, a click on the open fold's heading closes it again.
With the pointer over the picture, plotly's tool bar covers none of the title. The time from running each cell to
its picture is printed; tests/benchmarks/bench_browser_first_pictures.py holds it to 2 s.
Screenshots go to tests/artifacts/ (diff-folds-*.png)."""
import pytest

from support.jupyterlab_harness import (KERNEL_IDLE, POINT_ON_PAGE, TIME_TO_PICTURE, output_width, run_notebook)
from test_browser_fit_width import STICKING_OUT
from test_browser_grouped import ARTIFACTS, TESTS

pytestmark = pytest.mark.slow

SETUP = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import plotly.graph_objects as go
import plotly.io
import real_programs
import workbench
from workbench.widgets import DiffView

plotly.io.renderers.default = "plotly_mimetype"
trained = real_programs.transformer()[0]
forward, gradient = (next(g for g in trained.graphs if g.name.endswith(end)) for end in ("forward", "forward_grad"))
inplace = real_programs.transformer()[0]
inplace_forward = next(g for g in inplace.graphs if g.name.endswith("forward"))
before_inplace = workbench.export.to_json(inplace)
inplace._pb_ir.applyInplacePattern(next(g for g in inplace._pb_ir.getAllGraphs() if g.id == inplace_forward.id))"""
CELLS = [SETUP, "go.Figure(go.Scatter(x=[0, 1], y=[1, 0]))",  # plotly.js loads with the first figure
         "DiffView(trained, trained, graph=forward, after_graph=gradient)",
         "DiffView(before_inplace, inplace, graph=inplace_forward)"]
DIFFS = {2: "gradient", 3: "inplace"}
PAINTED = ".ipu-wb-figure-canvas .main-svg .layer-above"
FOLD_NAME = "folded ops (click to unfold)"
OPEN_NAME = "unfolded (click ▾ to fold)"

# The picture's height, how many labels it draws, and every two texts (row labels, summary, legend, title, and
# plotly's tool bar where the pointer is over the picture) whose boxes overlap.
GEOMETRY = """(output) => {
    const svg = output.querySelector('.ipu-wb-figure-canvas .main-svg');
    const texts = [...output.querySelectorAll('.textpoint text, .annotation-text, .legendtext, .gtitle, .modebar')]
        .map((node) => [node.textContent, node.getBoundingClientRect()]).filter(([, box]) => box.width > 0);
    const overlaps = [];
    for (let i = 0; i < texts.length; i++)
        for (let j = i + 1; j < texts.length; j++) {
            const [[a, p], [b, q]] = [texts[i], texts[j]];
            const wide = Math.min(p.right, q.right) - Math.max(p.left, q.left);
            const tall = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
            if (wide > 1 && tall > 1) overlaps.push(`"${a.slice(0, 40)}" and "${b.slice(0, 40)}"`);
        }
    return {height: svg.getBoundingClientRect().height, labels: output.querySelectorAll('.textpoint').length, overlaps};
}"""


def run_the_diffs(page) -> dict[str, float]:
    """Runs each diff's cell: the milliseconds from running it to its picture painted, by diff."""
    times = {}
    for index, name in DIFFS.items():
        page.wait_for_function(KERNEL_IDLE)
        times[name] = page.evaluate(TIME_TO_PICTURE, [index, PAINTED])
    return times


def time_the_first_views(lab, browser) -> dict[tuple[str, int], float]:
    """The milliseconds from running each diff's cell to its picture, by diff and output width."""
    page = run_notebook(browser, lab, "diffs.ipynb", CELLS, timeout_ms=90_000, width=630)
    page.locator(".jp-Cell").nth(3).locator(".ipu-wb-figure-canvas .main-svg").first.wait_for(state="visible")
    times = {}
    for width in (630, 1280):
        output_width(page, width)
        times.update({(name, width): ms for name, ms in run_the_diffs(page).items()})
    page.close()
    return times


def check_first_views(page, width):
    """Runs each diff's cell and checks the picture laid out for the output."""
    times = run_the_diffs(page)
    page.wait_for_timeout(2500)  # the page tells the kernel its width; the picture comes back laid out for it
    for index, name in DIFFS.items():
        output = page.locator(".jp-Cell").nth(index).locator(".jp-OutputArea-output").first
        output.locator(".ipu-wb-figure-canvas .main-svg").first.hover()  # plotly shows its tool bar
        page.wait_for_timeout(300)
        assert output.locator(".modebar").first.is_visible(), name
        geometry = output.evaluate(GEOMETRY)
        print(f"{name} at {width} px: {round(times[name])} ms to picture, {round(geometry['height'])} px tall")
        assert 300 < geometry["height"] <= 1500, (name, geometry["height"])
        assert geometry["overlaps"] == [], (name, geometry["overlaps"])
        assert output.evaluate(STICKING_OUT) == [], name
        output.screenshot(path=str(ARTIFACTS / f"diff-folds-{name}-{width}px.png"))


def test_diffs_of_real_transforms_open_folded_to_one_screen_and_unfold_in_place(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "diffs.ipynb", CELLS, timeout_ms=90_000, width=630)
    page.locator(".jp-Cell").nth(3).locator(".ipu-wb-figure-canvas .main-svg").first.wait_for(state="visible")
    check_first_views(page, 630)

    output = page.locator(".jp-Cell").nth(2).locator(".jp-OutputArea-output").first
    before = output.evaluate(GEOMETRY)
    x, y = page.evaluate(POINT_ON_PAGE, [2, FOLD_NAME, 0])  # the first fold: layer5's added ops
    page.mouse.click(x, y)
    page.wait_for_function(f"""() => document.querySelectorAll('.jp-Cell')[2]
        .querySelectorAll('.textpoint').length > {before['labels']}""")
    page.wait_for_timeout(500)
    after = output.evaluate(GEOMETRY)
    assert after["height"] > before["height"] and after["overlaps"] == [], after
    assert output.evaluate(STICKING_OUT) == []
    assert output.locator(".textpoint text", has_text="ops in layer5/feed_forward").count() == 1
    output.screenshot(path=str(ARTIFACTS / "diff-folds-gradient-630px-layer5-open.png"))
    x, y = page.evaluate(POINT_ON_PAGE, [2, OPEN_NAME, 0])  # its heading
    page.mouse.click(x, y)
    page.wait_for_function(f"""() => document.querySelectorAll('.jp-Cell')[2]
        .querySelectorAll('.textpoint').length === {before['labels']}""")
    page.wait_for_timeout(500)
    assert output.evaluate(GEOMETRY)["height"] == before["height"]

    output_width(page, 1280)
    check_first_views(page, 1280)
    page.close()
