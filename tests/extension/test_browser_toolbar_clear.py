"""Every tab of ``workbench.show``, and the diff view, in a real browser (JupyterLab, headless Chromium), in a
630-px and a 960-px notebook output: with the pointer over a picture, plotly's tool bar (drawn in the picture's top right corner
while the pointer is over it) covers none of its titles, notes, legend entries or labels. Screenshots go to
tests/artifacts/ (toolbar-*.png)."""
import pytest

from support.jupyterlab_harness import KERNEL_IDLE, open_notebook, output_width, write_notebook
from test_browser_grouped import ARTIFACTS, TESTS

pytestmark = pytest.mark.slow

SETUP = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import popxl
import real_programs
import workbench

ir, inputs = real_programs.transformer(layers=2)
session = popxl.Session(ir, "ipu_model")
forward, gradient = (next(g for g in ir.graphs if g.name.endswith(end)) for end in ("forward", "forward_grad"))"""
SHOW = "workbench.show(session, inputs)"
DIFF = "workbench.widgets.DiffView(forward, gradient)"
# The texts of the visible pictures of an output that the tool bar of their picture covers.
COVERED = """(output) => {
    const covered = [];
    for (const plot of output.querySelectorAll('.js-plotly-plot')) {
        const bar = plot.querySelector('.modebar');
        if (!bar || plot.getClientRects().length === 0 || bar.getClientRects().length === 0) continue;
        const q = bar.getBoundingClientRect();
        const texts = [...plot.querySelectorAll('.gtitle, .annotation-text, .legendtext, .textpoint text')]
            .flatMap((node) => node.querySelector('tspan.line') ? [...node.querySelectorAll('tspan.line')] : [node]);
        for (const node of texts) {  // a text of several lines, line by line
            const p = node.getBoundingClientRect();
            const wide = Math.min(p.right, q.right) - Math.max(p.left, q.left);
            const tall = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
            if (p.width > 0 && wide > 1 && tall > 1) covered.push(node.textContent.slice(0, 60));
        }
    }
    return covered;
}"""


def test_plotlys_tool_bar_covers_no_title_or_label_of_any_tab(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    write_notebook(lab.root / "toolbar.ipynb", [SETUP, SHOW, DIFF])
    page = open_notebook(browser, lab, "toolbar.ipynb")
    page.set_default_timeout(120_000)
    covered = {}
    for width in (630, 960):
        output_width(page, width)
        page.wait_for_function(KERNEL_IDLE)
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        output = page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output").first
        output.locator(".lm-TabBar-tab").first.wait_for()
        tabs = output.locator(".lm-TabBar-tab")
        for index in range(tabs.count()):
            title = tabs.nth(index).text_content()
            tabs.nth(index).click()
            page.wait_for_function(KERNEL_IDLE)
            plot = output.locator(".js-plotly-plot:visible .main-svg").first
            plot.wait_for(state="visible")
            page.wait_for_timeout(1000)  # the picture laid out again for the output's width
            for each in output.locator(".js-plotly-plot:visible").all():
                box = each.bounding_box()
                page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                page.wait_for_timeout(300)
                found = output.evaluate(COVERED)
                if found:
                    covered[f"{title} at {width} px"] = found
            output.screenshot(path=str(ARTIFACTS / f"toolbar-{title.replace(' ', '-')}-{width}px.png"))
        diff = page.locator(".jp-Cell").nth(2).locator(".jp-OutputArea-output").first
        diff.locator(".js-plotly-plot .main-svg").first.hover()
        page.wait_for_timeout(300)
        if diff.evaluate(COVERED):
            covered[f"diff at {width} px"] = diff.evaluate(COVERED)
        diff.screenshot(path=str(ARTIFACTS / f"toolbar-diff-{width}px.png"))
    page.close()
    assert covered == {}, covered
