"""The memory view's titles in a real browser (JupyterLab, headless Chromium), at 630 and 1280 px: a pipelined
transformer, ResNet-50 through PopART and a 10,003-op program, each LivenessView shown on its own and the
transformer's inside the Workbench's tabs. Every panel's title and the figure's title and notes lie whole
inside the output (centred, a panel's title ran off a 630-px output's left edge), and each picture's canvas
is as tall as the picture, which so stays inside its output. Screenshots go to tests/artifacts/
(memory-*.png)."""
import pytest

from support.jupyterlab_harness import output_width, run_notebook
from test_browser_fit_width import PICTURE_HEIGHTS
from test_browser_grouped import ARTIFACTS, TESTS

pytestmark = pytest.mark.slow

SETUP = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import popxl
import real_programs
import workbench
from workbench.widgets import LivenessView"""
ALONE = {"transformer": "LivenessView(real_programs.transformer()[0], live=False)",
         "resnet50": "LivenessView(real_programs.resnet50_session(), live=False)",
         "wide": "LivenessView(real_programs.wide_program(), live=False)"}
IN_TABS = """\
ir, inputs = real_programs.transformer()
wb = workbench.show(ir)
wb.widget.selected_index = wb.tabs.index("liveness")
wb"""
# The title texts of the shown figure (its title and notes, its panels' titles) that do not lie whole inside
# the output, with how far they reach.
TITLES_OUTSIDE = """(output) => {
    const edge = output.closest('.jp-OutputArea-output').getBoundingClientRect();
    const out = [];
    const titles = [...output.querySelectorAll('.gtitle, .annotation-text')];
    if (!titles.length) return ['no titles drawn'];
    for (const node of titles) {
        const box = node.getBoundingClientRect();
        if (box.left < edge.left - 1 || box.right > edge.right + 1 || box.top < edge.top - 1 || box.bottom > edge.bottom + 1)
            out.push(`"${node.textContent.slice(0, 40)}" from ${Math.round(box.left - edge.left)} to ${Math.round(box.right - edge.left)} px of ${Math.round(edge.width)}`);
    }
    return out;
}"""
# Panel titles (those starting "IPU") that overlap another title or the figure's title.
TITLES_OVERLAPPING = """(output) => {
    const boxes = [...output.querySelectorAll('.gtitle, .annotation-text')].map((n) => [n.textContent, n.getBoundingClientRect()]);
    const out = [];
    boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => {
        if (p.left < q.right - 1 && q.left < p.right - 1 && p.top < q.bottom - 1 && q.top < p.bottom - 1) out.push(`${a} over ${b}`);
    }));
    return out;
}"""


OPEN_TAB = ".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)"


def shown(output):
    """The memory view in ``output``: the output itself, or the Workbench's open tab."""
    tab = output.locator(OPEN_TAB)
    return tab.first if tab.count() else output


def check_memory(output) -> None:
    view = shown(output)
    assert view.evaluate(TITLES_OUTSIDE) == []
    assert view.evaluate(TITLES_OVERLAPPING) == []
    canvas, picture = view.evaluate(PICTURE_HEIGHTS)
    assert picture > 100 and canvas >= picture, (canvas, picture)


def test_memory_titles_lie_whole_inside_630_and_1280_px_outputs_shown_alone_and_in_the_workbench(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    cells = [SETUP, *ALONE.values(), IN_TABS]
    page = run_notebook(browser, lab, "memory.ipynb", cells, width=630)
    names = [*ALONE, "workbench"]
    outputs = {name: page.locator(".jp-Cell").nth(1 + n).locator(".jp-OutputArea-output").first
               for n, name in enumerate(names)}
    for name, output in outputs.items():
        opened = f"{OPEN_TAB} " if name == "workbench" else ""
        output.locator(f"{opened}.ipu-wb-figure-canvas .main-svg").first.wait_for(state="visible")
    page.wait_for_timeout(2500)
    for width in (630, 1280):
        output_width(page, width)
        page.wait_for_timeout(1500)
        for name, output in outputs.items():
            assert abs(output.bounding_box()["width"] - width) <= 2
            check_memory(output)
            output.screenshot(path=str(ARTIFACTS / f"memory-{name}-{width}px.png"))
    page.close()
