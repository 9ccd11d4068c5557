"""The grouped pictures of real programs in a real browser (JupyterLab, headless Chromium), collapsed and
with groups expanded in place: the notebook's plotly figure and the extension's Model tab, for a pipelined
transformer's gradient graph, ResNet-50 through PopART and a 10,002-op program. In each picture no two boxes
overlap unless a frame holds the other, every box's text fits inside it, and every edge into an op ends in
an arrowhead. The stepper and the Workbench fit a 630-px output: whole tab titles, pictures laid out to the
output's width. Screenshots go to tests/artifacts/ (grouped-*.png, workbench-*-630px.png)."""
import re
from pathlib import Path

import pytest

from support.jupyterlab_harness import output_width, run_notebook

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
TESTS = Path(__file__).resolve().parents[1]

SETUP = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import plotly.io
import real_programs
from workbench.widgets import ModelView

plotly.io.renderers.default = "plotly_mimetype"
transformer = real_programs.transformer()[0]
grad = next(g for g in transformer.graphs if g.name.endswith("forward_grad"))
resnet = real_programs.resnet50_session()._workbench_source()
wide = real_programs.wide_program()


def expanded(ir, graph=None):
    '''The model view with the first group, and the first group inside it, expanded in place.'''
    view = ModelView(ir, graph=graph, live=False)
    first = next(n["key"] for n in view.picture["nodes"] if n["kind"] == "group")
    view.expand(first)
    inner = next((n["key"] for n in view.groups.picture(first)["nodes"] if n["kind"] == "group"), None)
    if inner is not None:
        view.expand(inner)
    return view.figure"""

PROGRAMS = {"transformer": ("transformer", "graph=grad"), "resnet50": ("resnet", "graph=None"),
            "wide": ("wide", "graph=None")}

BOXES = """(root) => [...root.querySelectorAll('.ipu-wb-pbox')].map((g) => {
    const box = g.querySelector('.ipu-wb-box').getBoundingClientRect();
    const texts = [...g.querySelectorAll(':scope > text, :scope > g > text')].map((t) => t.getBoundingClientRect().right);
    return {frame: g.classList.contains('ipu-wb-pbox-frame'), box: [box.left, box.top, box.right, box.bottom],
            textRight: Math.max(0, ...texts)};
})"""

# Edges drawn by the extension, in the picture's own coordinates: every segment vertical or horizontal, and
# none through a box that is not one of its ends (a box an edge starts or ends on) or through a frame's title.
EDGES_CLEAR = """(root) => {
    const svg = root.querySelector('.ipu-wb-group-svg');
    const place = (g) => { const m = /translate\\(([-\\d.e]+),([-\\d.e]+)\\)/.exec(g.getAttribute('transform'));
                           return [Number(m[1]), Number(m[2])]; };
    const boxes = [...svg.querySelectorAll('.ipu-wb-pbox:not(.ipu-wb-pbox-frame)')].map((g) => {
        const [x, y] = place(g); const r = g.querySelector('.ipu-wb-box');
        return {key: g.dataset.key, l: x, t: y, r: x + Number(r.getAttribute('width')), b: y + Number(r.getAttribute('height'))};
    });
    const titles = [...svg.querySelectorAll('g.ipu-wb-frame-title[data-key]')].map((g) => {
        const [x, y] = place(g); const t = g.querySelector('text').getBBox();
        return {key: 'title of ' + g.dataset.key, l: x + t.x, t: y + t.y, r: x + t.x + t.width, b: y + t.y + t.height};
    });
    const touches = (p, box) => box.l - 1 <= p[0] && p[0] <= box.r + 1 && box.t - 1 <= p[1] && p[1] <= box.b + 1;
    const out = [];
    for (const path of svg.querySelectorAll('path.ipu-wb-edge')) {
        const points = path.getAttribute('d').split(/[ML]/).filter((part) => part.trim()).map((part) => part.trim().split(/\\s+/).map(Number));
        const ends = [points[0], points[points.length - 1]];
        for (let i = 1; i < points.length; i++) {
            const [[x0, y0], [x1, y1]] = [points[i - 1], points[i]];
            if (x0 !== x1 && y0 !== y1) out.push(`diagonal ${points[i - 1]} ${points[i]}`);
            for (const box of [...boxes.filter((box) => !ends.some((end) => touches(end, box))), ...titles]) {
                const [l, r, t, b] = [box.l + 1, box.r - 1, box.t + 1, box.b - 1];
                const crossesX = Math.min(x0, x1) < r && Math.max(x0, x1) > l;
                const crossesY = Math.min(y0, y1) < b && Math.max(y0, y1) > t;
                if (crossesX && crossesY) out.push(`${path.querySelector('title').textContent} through ${box.key}`);
            }
        }
    }
    return out;
}"""


def overlapping(a, b):
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


def holds(outer, inner):
    return outer[0] <= inner[0] + 1 and inner[2] <= outer[2] + 1 and outer[1] <= inner[1] + 1 and inner[3] <= outer[3] + 1


def check_drawn(boxes):
    for number, a in enumerate(boxes):
        assert a["textRight"] <= a["box"][2] + 1, a  # the text fits in its box
        for b in boxes[number + 1:]:
            assert not overlapping(a["box"], b["box"]) or holds(a["box"], b["box"]) or holds(b["box"], a["box"]), (a, b)


def test_grouped_pictures_of_real_programs_collapsed_and_expanded(lab, browser):
    cells = [SETUP]
    for name, (ir, graph) in PROGRAMS.items():
        cells += [f"ModelView({ir}, {graph}, live=False).figure", f"expanded({ir}, {graph})", ir]
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "grouped.ipynb", cells)
    page.wait_for_function(f"document.querySelectorAll('.jp-OutputArea .ipu-wb-group-svg').length === {len(PROGRAMS)}")
    page.wait_for_function(f"document.querySelectorAll('.jp-OutputArea .js-plotly-plot .main-svg').length >= {2 * len(PROGRAMS)}")
    # a big program shows its top level first: wait for its whole document, whose groups open
    page.wait_for_function("![...document.querySelectorAll('.ipu-wb-summary')].some(s => s.textContent.includes('the top level first'))")
    for number, name in enumerate(PROGRAMS):
        collapsed, opened, extension = (page.locator(".jp-Cell").nth(1 + 3 * number + k).locator(".jp-OutputArea-output")
                                        for k in range(3))
        collapsed.screenshot(path=str(ARTIFACTS / f"grouped-{name}-notebook.png"))
        opened.screenshot(path=str(ARTIFACTS / f"grouped-{name}-notebook-expanded.png"))
        arrows = opened.locator(".scatterlayer .trace .points path").count()
        assert arrows > 0  # the arrowheads (and the hit markers) are drawn
        view = extension.locator(".ipu-wb-root").first
        if name == "transformer":
            grad_id = page.evaluate("(() => { const s = document.querySelectorAll('.ipu-wb-group-select')[0];"
                                    " return [...s.options].find(o => o.textContent.endsWith('forward_grad')).value; })()")
            view.locator(".ipu-wb-group-select").select_option(grad_id)
        check_drawn(view.evaluate(BOXES))
        assert view.evaluate(EDGES_CLEAR) == []
        view.screenshot(path=str(ARTIFACTS / f"grouped-{name}-extension.png"))
        view.locator(".ipu-wb-pbox-group:not(.ipu-wb-pbox-frame)").first.click()
        inner = view.locator(".ipu-wb-pbox-frame ~ .ipu-wb-pbox-group:not(.ipu-wb-pbox-frame)")
        if inner.count():
            inner.first.click()
        assert view.locator(".ipu-wb-pbox-frame").count() >= 1
        check_drawn(view.evaluate(BOXES))
        assert view.evaluate(EDGES_CLEAR) == []
        edges = view.locator(".ipu-wb-edge")
        assert edges.count() > 0 and view.locator(".ipu-wb-edge[marker-end]").count() > 0
        view.screenshot(path=str(ARTIFACTS / f"grouped-{name}-extension-expanded.png"))
    page.close()


STEPPER = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import popxl
import workbench
import real_programs

ir, inputs = real_programs.transformer(layers=10)
session = popxl.Session(ir, "ipu_model")
session.__enter__()
wb = workbench.show(session, inputs)
wb.widget.selected_index = wb.tabs.index("stepper")
wb"""
STEPS = """\
stepper = wb["stepper"]
for _ in range(13):
    stepper.step()
print(stepper.stop.op.name)"""


CLIPPED = """(root) => {
    const edge = root.getBoundingClientRect();
    const out = [];
    for (const node of root.querySelectorAll('*')) {
        if (node.closest('.js-plotly-plot') || node.offsetParent === null) continue;  // plotly's own layers; hidden
        const box = node.getBoundingClientRect();
        if (box.width && (box.left < edge.left - 1 || box.right > edge.right + 1)) out.push(`${node.className} sticks out`);
        const style = getComputedStyle(node);
        if (style.overflowX !== 'visible' && node.scrollWidth > node.clientWidth + 1) out.push(`${node.className} cut: ${node.scrollWidth} > ${node.clientWidth}`);
        if (style.textOverflow === 'ellipsis' && node.scrollWidth > node.clientWidth + 1) out.push(`${node.textContent} cut`);
    }
    return out;
}"""
PLACES = """(plot) => {
    let row = plot;
    while (row && !row.classList.contains('widget-hbox')) row = row.parentElement;
    const rect = (node) => { const r = node.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; };
    return [rect(row.firstElementChild), rect(plot)];
}"""


def test_the_steppers_picture_stays_beside_its_table_where_there_is_room_and_under_it_at_630_px(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "stepper.ipynb", [STEPPER, STEPS], width=960)  # a notebook in a wide window
    page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output pre").wait_for()
    name = page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output pre").text_content().strip()
    output = page.locator(".jp-Cell").first.locator(".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)").first
    picture = output.locator(".js-plotly-plot").first
    picture.locator(".main-svg").first.wait_for(state="visible")
    page.wait_for_timeout(1000)
    table_box, picture_box = picture.evaluate(PLACES)
    assert picture_box["x"] >= table_box["x"] + table_box["width"] - 1, (table_box, picture_box)  # beside, not below
    assert picture_box["y"] < table_box["y"] + table_box["height"]
    crumbs = [text for text in output.locator("button").all_text_contents() if re.search(r"\(\d[\d,]* ops?\)$", text)]
    assert any(name.split("/")[-2] in crumb for crumb in crumbs), (name, crumbs)  # the next op's group, opened in place
    check_next_op_in_view(page, picture, name)
    assert output.evaluate(CLIPPED) == []
    output.screenshot(path=str(ARTIFACTS / "grouped-transformer-stepper.png"))
    output_width(page, 630)  # JupyterLab's output in a narrow window: the picture goes under the table
    table_box, picture_box = picture.evaluate(PLACES)
    assert picture_box["y"] >= table_box["y"] + table_box["height"] - 1, (table_box, picture_box)
    check_next_op_in_view(page, picture, name)
    assert output.evaluate(CLIPPED) == []  # buttons, table and picture all inside the output, none cut
    output.screenshot(path=str(ARTIFACTS / "grouped-transformer-stepper-630px.png"))
    page.close()


def check_next_op_in_view(page, picture, name: str) -> None:
    """The next op's red outline, and its label inside it, lie inside the plot area."""
    outline = picture.locator(".scatterlayer .trace").filter(has=page.locator("path.js-line[style*='rgb(192, 0, 0)']"))
    assert outline.count() == 1
    plot = picture.locator(".nsewdrag").first.bounding_box()
    line = outline.locator("path.js-line").first.bounding_box()
    assert plot["x"] <= line["x"] and line["x"] + line["width"] <= plot["x"] + plot["width"] + 1
    assert plot["y"] <= line["y"] and line["y"] + line["height"] <= plot["y"] + plot["height"] + 1
    label = picture.locator(".annotation-text", has_text=name.split("/")[-1].split(".")[0]).first.bounding_box()
    assert line["x"] <= label["x"] <= line["x"] + line["width"] and line["y"] <= label["y"] <= line["y"] + line["height"]


WORKBENCH = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import popxl
import workbench
import real_programs

ir, inputs = real_programs.transformer()
session = popxl.Session(ir, "ipu_model")
session.__enter__()
wb = workbench.show(session, inputs)  # seven tabs, the stepper's last
wb"""
# Every tab inside the output with its whole title; the open tab's plots no wider than the output.
TABS_AND_PLOTS = """(output) => {
    const edge = output.getBoundingClientRect();
    const out = [];
    for (const tab of output.querySelectorAll('.lm-TabBar-tab')) {
        const box = tab.getBoundingClientRect(), label = tab.querySelector('.lm-TabBar-tabLabel');
        if (box.left < edge.left - 1 || box.right > edge.right + 1) out.push(`tab ${label.textContent} sticks out`);
        if (label.scrollWidth > label.clientWidth + 1) out.push(`tab ${label.textContent} cut`);
    }
    const page = output.querySelector('.widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)');
    for (const svg of page.querySelectorAll('.main-svg')) {
        const box = svg.getBoundingClientRect();
        if (box.right > edge.right + 1) out.push(`plot ${Math.round(box.width)} px wide in ${Math.round(edge.width)} px`);
    }
    return out;
}"""


def test_the_workbench_fits_a_630_px_output_with_whole_tab_titles_and_pictures_laid_out_to_its_width(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "workbench.ipynb", [WORKBENCH], width=630)
    output = page.locator(".jp-Cell").first.locator(".jp-OutputArea-output").first
    visible_plot = ".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden) .main-svg"
    output.locator(visible_plot).first.wait_for(state="visible")
    page.wait_for_timeout(2000)  # the page tells the kernel its width; the picture comes back laid out for it
    assert output.evaluate(TABS_AND_PLOTS) == []
    canvas = output.locator(".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden) .ipu-wb-figure-canvas").first
    room = canvas.evaluate("(node) => node.clientWidth")
    assert 560 < room <= 630 and abs(output.locator(visible_plot).first.bounding_box()["width"] - room) <= 2
    output.screenshot(path=str(ARTIFACTS / "workbench-model-630px.png"))
    output.locator(".lm-TabBar-tab", has_text="graph").first.click()
    output.locator(visible_plot).first.wait_for(state="visible")
    page.wait_for_timeout(2000)
    assert output.evaluate(TABS_AND_PLOTS) == []
    output.screenshot(path=str(ARTIFACTS / "workbench-graph-630px.png"))
    output_width(page, 1100)  # a wide output: the picture goes back to its own width
    output.locator(".lm-TabBar-tab", has_text="model").first.click()
    page.wait_for_timeout(2000)
    assert abs(output.locator(visible_plot).first.bounding_box()["width"] - 960) <= 2
    tabs = output.locator(".lm-TabBar-tab")
    assert len({round(tabs.nth(n).bounding_box()["y"]) for n in range(tabs.count())}) == 1  # one row
    page.close()
