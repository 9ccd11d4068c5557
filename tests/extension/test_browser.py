"""The extension in a real browser: JupyterLab on 127.0.0.1, Debian's Chromium driven headless.

A notebook builds an IR whose names are markup, displays it and its Session; the test checks the
drawn DOM (graph, expand, hover, search, call tree, memory chart) and its geometry (a small graph
centred, the chart beside the details, not under them), that nothing from the names ran, that the
saved notebook keeps the output, that a saved ``.ir.json`` file has its icon and opens in the viewer,
that "expand all" on the MLP leaves something drawn in sight, and that malformed documents show an
error in place of the view and break nothing else. Screenshots go to tests/artifacts/. Every wait is
bounded; JupyterLab is stopped by its pid.
"""
import json
import sys
import time
from pathlib import Path

import nbformat
import pytest

from support.jupyterlab_harness import open_notebook, open_page, write_notebook
from workbench.export.mime import MIME_TYPE

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
IMG = '<img src=x onerror="window.__wbXss=1">'
SCRIPT = "<script>window.__wbXss=1</script>"

BUILD = f"""\
import numpy as np
import popxl
import popxl.ops as ops

ir = popxl.Ir()
with ir.main_graph, popxl.name_scope({SCRIPT!r}):
    x_stream = popxl.h2d_stream([4], popxl.float32, name="x")
    w = popxl.variable(np.ones(4, np.float32), name={IMG!r})
    x = ops.host_load(x_stream)
    body = ir.create_graph(lambda a: a * 2 + 1, x)
    (y,) = ops.call(body, x * w)
    y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
    ops.host_store(y_stream, y)
ir"""

RUN = """\
with popxl.Session(ir, "ipu_model") as session:
    print(session.run({x_stream: np.arange(4, dtype=np.float32)})[y_stream])
session"""


def test_a_notebook_draws_the_ir_and_its_session(lab, browser):
    write_notebook(lab.root / "display.ipynb", [BUILD, RUN])
    ARTIFACTS.mkdir(exist_ok=True)
    page = open_page(browser, lab.tree("display.ipynb"))
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel")
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function("document.querySelectorAll('.jp-OutputArea-output .ipu-wb-root').length === 2")
    ir_view, session_view = page.query_selector_all(".jp-OutputArea-output .ipu-wb-root")
    # The Ir opens on its Model tab (the grouped picture shipped in the document); the Graph tab lays out
    # nothing until it is opened.
    assert ir_view.wait_for_selector(".ipu-wb-group-svg .ipu-wb-pbox").is_visible()
    assert ir_view.query_selector(".ipu-wb-graph-svg") is None
    ir_view.query_selector(".ipu-wb-tab-graph").click()
    ir_view.wait_for_selector(".ipu-wb-canvas:not([aria-busy]) > .ipu-wb-graph-svg")

    # The Ir opens on its main graph; every markup name is drawn as text, and none ran. Ops are
    # labelled by type, as in the plotly views, with their names in the hover title.
    assert ir_view.query_selector(".ipu-wb-graph-view:not(.ipu-wb-hidden)")
    labels = [n.text_content() for n in ir_view.query_selector_all(".ipu-wb-label")]
    titles = [n.text_content() for n in ir_view.query_selector_all(".ipu-wb-node title")]
    folded = [n.text_content() for n in ir_view.query_selector_all(".ipu-wb-node .ipu-wb-subline")]
    assert f"{IMG} ⟨4⟩" in folded, folded  # a weight, named without its scope in the box of the op reading it
    assert "host_load" in labels and any(title.startswith(f"host_load {SCRIPT}/") for title in titles), titles
    # The small graph is centred in its canvas.
    svg, canvas = ir_view.query_selector(".ipu-wb-graph-svg").bounding_box(), ir_view.query_selector(".ipu-wb-canvas").bounding_box()
    assert svg["width"] < canvas["width"] - 100
    assert abs((svg["x"] + svg["width"] / 2) - (canvas["x"] + canvas["width"] / 2)) < 2
    assert page.evaluate("document.querySelectorAll('.jp-OutputArea img, .jp-OutputArea-output script').length") == 0
    assert page.evaluate("window.__wbXss") is None

    # Expanding the call shows the called graph; hovering an op gives its details; search highlights.
    ir_view.query_selector(".ipu-wb-callable.ipu-wb-closed").click()
    ir_view.wait_for_selector(".ipu-wb-callable.ipu-wb-open .ipu-wb-frame")
    inner = [n.text_content() for n in ir_view.query_selector_all(".ipu-wb-open .ipu-wb-op .ipu-wb-label")]
    assert "mul" in inner and "add" in inner, inner
    ir_view.query_selector(".ipu-wb-open .ipu-wb-op:not(.ipu-wb-callable)").hover()
    assert "out 0:" in ir_view.query_selector(".ipu-wb-details").text_content()
    ir_view.query_selector(".ipu-wb-search").fill("host_")
    assert len(ir_view.query_selector_all(".ipu-wb-match")) == 2
    assert ir_view.query_selector(".ipu-wb-search-status").text_content() == "2 shown"

    # The call tree lists the main graph and the call into the subgraph.
    ir_view.query_selector(".ipu-wb-tab-calls").click()
    assert ir_view.query_selector(".ipu-wb-call-tree").is_visible()
    assert "call " in ir_view.query_selector(".ipu-wb-tree-children").text_content()
    ir_view.screenshot(path=str(ARTIFACTS / "browser-ir-output.png"))

    # The Session opens on the memory chart with its device; the chart stays clear of the details,
    # whose lines break between words.
    assert session_view.query_selector(".ipu-wb-liveness").is_visible()
    left_out = session_view.query_selector(".ipu-wb-liveness-note")  # code that would dwarf the tensors
    assert len(session_view.query_selector_all(".ipu-wb-area")) == (3 if left_out else 4)
    assert "on ipu_model" in session_view.query_selector(".ipu-wb-liveness-summary").text_content()
    chart, details = (session_view.query_selector(s).bounding_box() for s in (".ipu-wb-chart-svg", ".ipu-wb-details"))
    assert chart["x"] + chart["width"] <= details["x"] or chart["y"] + chart["height"] <= details["y"], (chart, details)
    assert session_view.query_selector(".ipu-wb-details").evaluate(
        "node => [getComputedStyle(node).wordBreak, getComputedStyle(node).overflowWrap]") == ["normal", "anywhere"]
    assert page.evaluate("window.__wbXss") is None
    page.screenshot(path=str(ARTIFACTS / "browser-notebook.png"), full_page=True)

    # Saved, the notebook keeps both outputs under the extension's MIME type.
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        saved = nbformat.read(lab.root / "display.ipynb", as_version=4)
        kept = [o for cell in saved.cells for o in cell.outputs if MIME_TYPE in o.get("data", {})]
        if len(kept) == 2:
            break
        time.sleep(0.5)
    assert [o["metadata"][MIME_TYPE]["view"] for o in kept] == ["model", "memory"]
    page.close()


def test_a_saved_ir_json_file_opens_in_the_viewer(lab, browser):
    sys.path.insert(0, str(Path(__file__).parent))
    from test_xss import hostile_ir

    document = hostile_ir()._repr_mimebundle_()[0][MIME_TYPE]
    (lab.root / "model.ir.json").write_text(json.dumps(document), encoding="utf-8")
    page = open_page(browser, lab.tree("model.ir.json"))
    view = page.wait_for_selector(".jp-MimeDocument .ipu-wb-root")
    page.wait_for_selector('.jp-DirListing-item[title*="model.ir.json"] [data-icon="ipu-workbench:ir-file"]')
    assert view.query_selector(".ipu-wb-summary").text_content().startswith(f"IR {document['ir']['id']}: 2 graphs")
    view.query_selector(".ipu-wb-tab-graph").click()
    view.query_selector(".ipu-wb-expand-all").click()
    view.wait_for_selector(".ipu-wb-frame")
    folded = [n.text_content() for n in view.query_selector_all(".ipu-wb-node .ipu-wb-subline")]
    assert any(line.startswith("<img src=x onerror=\"__wbXss=1\">") for line in folded), folded
    assert page.evaluate("document.querySelectorAll('.jp-MimeDocument img, .jp-MimeDocument script').length") == 0
    assert page.evaluate("window.__wbXss") is None
    page.screenshot(path=str(ARTIFACTS / "browser-ir-json.png"), full_page=True)
    page.close()


SHOWN = """\
import numpy as np
import popxl
import popxl.ops as ops
import workbench
from workbench.widgets import GraphView

ir = popxl.Ir()
with ir.main_graph:
    x = popxl.variable(np.ones(3, np.float32), name="x")
    y = ops.sin(x) + x
workbench.show(ir)"""


def test_a_saved_notebook_opened_again_shows_static_pictures_where_its_widgets_were(lab, browser):
    """... and neither the live session nor the reopened notebook logs an error or a warning in the
    browser console (ipywidgets' "widget model not found" among them)."""
    write_notebook(lab.root / "widgets.ipynb", [SHOWN, "GraphView(ir)"])
    page = open_notebook(browser, lab, "widgets.ipynb")
    live = []
    page.on("console", lambda message: live.append((message.type, message.text)))
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function("document.querySelectorAll('.ipu-wb-figure-canvas .js-plotly-plot').length === 2")
    assert [entry for entry in live if entry[0] in ("error", "warning")] == [], live  # a live session logs nothing
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("!window.jupyterapp.shell.currentWidget.context.model.dirty")
    page.evaluate("window.jupyterapp.serviceManager.sessions.shutdownAll()")
    page.close()
    saved = nbformat.read(lab.root / "widgets.ipynb", as_version=4)
    assert all("application/vnd.jupyter.widget-view+json" in cell.outputs[0]["data"] for cell in saved.cells)

    logged = []
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.on("console", lambda message: logged.append((message.type, message.text)))
    page.on("pageerror", lambda error: logged.append(("pageerror", str(error))))
    page.set_default_timeout(90_000)
    page.goto(lab.tree("widgets.ipynb"))
    page.wait_for_function("window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel")
    page.wait_for_selector(".jp-OutputArea-output .ipu-wb-root")
    page.wait_for_selector(".jp-OutputArea-output .js-plotly-plot .main-svg")
    page.wait_for_timeout(3000)  # longer than ipywidgets waits for a missing model before it logs
    texts = page.evaluate("[...document.querySelectorAll('.jp-OutputArea-output')].map(n => n.textContent)")
    assert not any("model not found" in text for text in texts), texts
    assert page.evaluate("window.jupyterapp.shell.currentWidget.context.model.dirty") is False
    assert not any("model not found" in text for _, text in logged), logged
    assert [entry for entry in logged if entry[0] in ("error", "warning", "pageerror")] == [], logged
    page.screenshot(path=str(ARTIFACTS / "browser-saved-widgets.png"), full_page=True)
    page.close()


MLP = f"""\
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
import popxl
import workbench
from support.programs import mlp_training
from workbench.widgets import GraphView

ir, inputs = mlp_training()
session = popxl.Session(ir, "ipu_model")
with session:
    session.run(inputs)"""
BACKWARD = "GraphView(session, graph=next(g for g in ir.graphs if g.name.endswith('forward_grad')))"
LABEL_BOXES = """(plot) => [...plot.querySelectorAll('.textpoint text')].map((t) => {
    const box = t.getBoundingClientRect();
    return [box.left, box.top, box.right, box.bottom];
})"""

# The texts of a plotly figure (title lines, panel titles and notes, axis titles, legend entries) as rectangles.
TEXT_BOXES = """(plot) => [...plot.querySelectorAll('.gtitle tspan.line, .gtitle:not(:has(tspan.line)), .annotation-text, .g-xtitle text, .g-ytitle text, .legendtext')]
    .map((t) => { const box = t.getBoundingClientRect(); return [t.textContent, box.left, box.top, box.right, box.bottom]; })
    .filter(([, left, top, right, bottom]) => right > left && bottom > top)"""

# Menus too narrow for their choices: each <select> and the width its longest choice's text needs.
NARROW_MENUS = """(panel) => [...panel.querySelectorAll('select')].map((menu) => {
    const context = document.createElement('canvas').getContext('2d');
    context.font = getComputedStyle(menu).font;
    const needed = Math.max(...[...menu.options].map((option) => context.measureText(option.textContent).width));
    return [menu.clientWidth, needed];
}).filter(([width, needed]) => width < needed)"""


def texts_apart(plot) -> None:
    """No two texts of the figure overlap, and none sticks out above it."""
    texts = plot.evaluate(TEXT_BOXES)
    top = plot.bounding_box()["y"]
    for index, (name, left, upper, right, lower) in enumerate(texts):
        assert upper >= top - 1, f"{name!r} is cut at the figure's top"
        for other, other_left, other_upper, other_right, other_lower in texts[index + 1:]:
            apart = right <= other_left + 1 or other_right <= left + 1 or lower <= other_upper + 1 or other_lower <= upper + 1
            assert apart, f"{name!r} overlaps {other!r}"


def test_every_view_of_the_mlp_is_painted_and_the_backward_graph_labels_do_not_overlap(lab, browser):
    cells = [MLP, "workbench.show(session, inputs)", BACKWARD]
    write_notebook(lab.root / "mlp.ipynb", cells)
    page = open_notebook(browser, lab, "mlp.ipynb")
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    outputs = page.locator(".jp-Cell").nth(1)
    for tab in ("call tree", "graph", "schedule", "liveness", "replica groups", "stepper"):
        outputs.locator(".lm-TabBar-tab", has_text=tab).first.click()
        panel = outputs.locator(".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)").first
        if tab != "stepper":
            panel.locator(".js-plotly-plot .main-svg").first.wait_for(state="visible")
            texts_apart(panel.locator(".js-plotly-plot").first)
            assert panel.evaluate(NARROW_MENUS) == [], tab  # every choice readable whole
        panel.screenshot(path=str(ARTIFACTS / f"browser-mlp-{tab.replace(' ', '-')}.png"))
    plot = page.locator(".jp-Cell").nth(2).locator(".js-plotly-plot").first
    plot.locator(".main-svg").first.wait_for(state="visible")
    plot.screenshot(path=str(ARTIFACTS / "browser-mlp-backward-graph.png"))
    boxes = plot.evaluate(LABEL_BOXES)
    container = plot.bounding_box()
    assert len(boxes) > 20  # the ops' names are drawn
    for index, (left, top, right, bottom) in enumerate(boxes):
        assert container["x"] <= left and right <= container["x"] + container["width"]
        for other_left, other_top, other_right, other_bottom in boxes[index + 1:]:
            apart = right <= other_left + 0.5 or other_right <= left + 0.5 or bottom <= other_top + 0.5 \
                or other_bottom <= top + 0.5
            assert apart, f"labels overlap: {(left, top, right, bottom)} and {(other_left, other_top, other_right, other_bottom)}"
    page.close()


def test_a_figure_drawn_in_a_hidden_tab_takes_the_width_of_its_container_when_shown(lab, browser):
    cells = [MLP, "wb = workbench.show(session, inputs); wb"]
    write_notebook(lab.root / "tabs.ipynb", cells)
    page = open_notebook(browser, lab, "tabs.ipynb")
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    outputs = page.locator(".jp-Cell").nth(1)
    for tab in ("replica groups", "stepper", "call tree"):
        outputs.locator(".lm-TabBar-tab", has_text=tab).first.click()
        canvases = outputs.locator(".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden) .ipu-wb-figure-canvas")
        canvases.first.locator(".main-svg").first.wait_for(state="visible")
        for index in range(canvases.count()):
            page.wait_for_function("(canvas) => Math.abs(canvas.querySelector('.main-svg').getBoundingClientRect()"
                                   ".width - canvas.getBoundingClientRect().width) < 2",
                                   arg=canvases.nth(index).element_handle())
        widths = canvases.evaluate_all("(canvases) => canvases.map((canvas) => [canvas.querySelector('.main-svg')"
                                       ".getBoundingClientRect().width, canvas.getBoundingClientRect().width])")
        assert widths and all(abs(figure - container) < 2 for figure, container in widths), (tab, widths)


def test_expand_all_on_the_mlp_leaves_its_drawing_in_sight(lab, browser):
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from support.programs import mlp_training

    (lab.root / "mlp.ir.json").write_text(json.dumps(mlp_training()[0]._repr_mimebundle_()[0][MIME_TYPE]), encoding="utf-8")
    page = open_page(browser, lab.tree("mlp.ir.json"))
    view = page.wait_for_selector(".jp-MimeDocument .ipu-wb-root")
    view.query_selector(".ipu-wb-tab-graph").click()
    view.wait_for_selector(".ipu-wb-canvas:not([aria-busy]) > .ipu-wb-graph-svg")
    view.query_selector(".ipu-wb-expand-all").click()
    view.wait_for_selector(".ipu-wb-canvas:not([aria-busy]) .ipu-wb-frame")
    canvas = view.query_selector(".ipu-wb-canvas")
    ops_in_sight = canvas.evaluate("""canvas => {
        const box = canvas.getBoundingClientRect();
        return [...canvas.querySelectorAll('.ipu-wb-op:not(.ipu-wb-open) > .ipu-wb-box')].filter(node => {
            const r = node.getBoundingClientRect();
            return r.right > box.left && r.left < box.right && r.bottom > box.top && r.top < box.bottom;
        }).length;
    }""")
    assert ops_in_sight >= 5, ops_in_sight
    page.screenshot(path=str(ARTIFACTS / "browser-mlp-expanded.png"))
    page.close()


DRAWN_GEOMETRY = """svg => {
    const problems = [];
    const outer = svg.getBoundingClientRect();
    const rect = node => node.getBoundingClientRect();
    const nodes = [...svg.querySelectorAll('.ipu-wb-node:not(.ipu-wb-open)')];
    const boxes = nodes.map(node => rect(node.querySelector(':scope > .ipu-wb-box')));
    nodes.forEach((node, i) => {
        const [box, label] = [boxes[i], rect(node.querySelector(':scope > .ipu-wb-label'))];
        if (label.left < box.left || label.right > box.right || label.top < box.top || label.bottom > box.bottom) {
            problems.push(`the label of ${node.dataset.key} sticks out of its box`);
        }
        if (box.left < outer.left - 0.5 || box.right > outer.right + 0.5) {
            problems.push(`${node.dataset.key} is outside the drawing`);
        }
        for (const other of boxes.slice(i + 1)) {
            if (box.left < other.right && other.left < box.right && box.top < other.bottom && other.top < box.bottom) {
                problems.push(`${node.dataset.key} overlaps another node`);
            }
        }
    });
    return [nodes.length, problems];
}"""


def test_the_mlp_backward_graph_is_drawn_from_its_shipped_layering_with_labels_inside_their_boxes(lab, browser):
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from support.programs import mlp_training

    document = mlp_training(layers=5)[0]._repr_mimebundle_()[0][MIME_TYPE]
    (lab.root / "mlp-backward.ir.json").write_text(json.dumps(document), encoding="utf-8")
    page = open_page(browser, lab.tree("mlp-backward.ir.json"))
    view = page.wait_for_selector(".jp-MimeDocument .ipu-wb-root")
    view.query_selector(".ipu-wb-tab-graph").click()
    view.wait_for_selector(".ipu-wb-canvas:not([aria-busy]) > .ipu-wb-graph-svg")
    view.query_selector(".ipu-wb-graph-select").select_option("mlp_training.forward_grad")
    svg = view.wait_for_selector(".ipu-wb-canvas:not([aria-busy]) > .ipu-wb-graph-svg[data-engine='shipped'] .ipu-wb-output")
    svg = view.query_selector(".ipu-wb-graph-svg")
    count, problems = svg.evaluate(DRAWN_GEOMETRY)
    assert count > 50 and problems == [], problems
    view.query_selector(".ipu-wb-fit-toggle").check()
    canvas = view.query_selector(".ipu-wb-canvas").bounding_box()
    # Fitting draws the graph again: measure the new drawing.
    drawn = view.wait_for_selector(".ipu-wb-canvas:not([aria-busy]) > .ipu-wb-graph-svg").bounding_box()
    assert drawn["width"] <= canvas["width"] + 0.5, (drawn, canvas)
    view.query_selector(".ipu-wb-canvas").screenshot(path=str(ARTIFACTS / "browser-mlp-backward-extension.png"))
    page.close()


MALFORMED_OUTPUTS = f"""\
from IPython.display import display
empty = {{"schema": "ipu-workbench/ir", "version": 1, "ir": {{"id": 1, "replication_factor": 1, "num_host_transfers": 1}},
         "graphs": [], "call_sites": [], "streams": [], "variables": [], "remote_buffers": []}}
display({{{MIME_TYPE!r}: empty, "text/plain": "broken"}}, raw=True)"""


def test_malformed_documents_show_an_error_and_break_nothing_else(lab, browser):
    cells = [MALFORMED_OUTPUTS, "1 + 1", BUILD]
    write_notebook(lab.root / "malformed.ipynb", cells)
    page = open_notebook(browser, lab, "malformed.ipynb")
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function("document.querySelectorAll('.jp-OutputArea-output .ipu-wb-root').length === 2")
    assert len(page.query_selector_all(".jp-Notebook .jp-Cell")) == 3
    error = page.query_selector(".jp-OutputArea-output .ipu-wb-error")
    assert error.text_content() == "Cannot show this IR: graphs must NOT have fewer than 1 items"
    page.wait_for_selector(".jp-OutputArea-output .ipu-wb-root:not(.ipu-wb-error) .ipu-wb-group-svg")
    page.close()

    (lab.root / "broken.ir.json").write_text('{"schema": "ipu-workbench/ir", "version": 1, "graphs": [', encoding="utf-8")
    page = open_page(browser, lab.tree("broken.ir.json"))
    error = page.wait_for_selector(".jp-MimeDocument .ipu-wb-error")
    assert error.text_content().startswith("Cannot show this IR: the text is not JSON")
    assert page.query_selector(".jp-Dialog") is None
    page.close()
