"""A saved notebook opened again with no kernel at all (JupyterLab, headless Chromium): the notebook shows
``show(ir)``, the IR's own output and every view, is saved and its kernel shut down; it is then opened as a
notebook that names no kernel opens, the user choosing "No Kernel". Every saved output still draws its picture
(the static one each widget output carries), the page says "model not found" nowhere and the browser console
logs no error or warning. Screenshots go to tests/artifacts/ (reopen-no-kernel*.png)."""
import nbformat
import pytest

from support.jupyterlab_harness import run_notebook
from test_browser_grouped import ARTIFACTS, TESTS

pytestmark = pytest.mark.slow

SETUP = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import numpy as np
import popxl
import popxl.ops as ops
import real_programs
import workbench
from support.programs import call_tree_program
from workbench.widgets import (CallTreeView, GraphView, LivenessView, ModelView, ReplicaGroupView,
                               ScheduleView)

one_graph = popxl.Ir()
with one_graph.main_graph:
    x = popxl.variable(np.ones(3, np.float32), name="x")
    y = ops.sin(x) + x
calls, _ = call_tree_program()
transformer, inputs = real_programs.transformer(layers=2)"""
SHOWN = {"show": "workbench.show(calls)",
         "ir": "calls",
         "call-tree-one-graph": "CallTreeView(one_graph)",
         "call-tree": "CallTreeView(calls)",
         "graph": "GraphView(one_graph)",
         "model": "ModelView(transformer)",
         "schedule": "ScheduleView(transformer)",
         "liveness": "LivenessView(transformer)",
         "replicas": "ReplicaGroupView(transformer)"}
PICTURE = ".js-plotly-plot .main-svg, .ipu-wb-root"
# The one graph's square, its label and the legend's entry in the call tree of a program of one graph.
CARD = """(output) => {
    const box = (node) => { const b = node.getBoundingClientRect(); return {left: b.left, right: b.right, top: b.top, bottom: b.bottom}; };
    return {square: box(output.querySelector('.scatterlayer .point')), label: box(output.querySelector('.annotation-text')),
            legend: box(output.querySelector('.legend .traces')), output: box(output)};
}"""
# Per output: whether it holds a drawn picture, and its text (where ipywidgets would write "model not found").
OUTPUTS = f"""() => [...document.querySelectorAll('.jp-Cell')].slice(1).map((cell) => {{
    const output = cell.querySelector('.jp-OutputArea-output');
    if (!output) return {{drawn: false, text: 'no output'}};
    const picture = output.querySelector({PICTURE!r});
    const box = picture ? picture.getBoundingClientRect() : null;
    return {{drawn: Boolean(box && box.width > 50 && box.height > 50), text: output.textContent.slice(0, 200)}};
}})"""


def test_a_saved_notebook_reopened_with_no_kernel_draws_every_picture_and_logs_nothing(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "saved.ipynb", [SETUP, *SHOWN.values()])
    page.wait_for_function(f"({OUTPUTS})().every((output) => output.drawn)")
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("!window.jupyterapp.shell.currentWidget.context.model.dirty")
    page.evaluate("window.jupyterapp.serviceManager.sessions.shutdownAll()")
    page.close()

    saved = nbformat.read(lab.root / "saved.ipynb", as_version=4)
    widget_outputs = [cell for cell in saved.cells[1:]
                      if "application/vnd.jupyter.widget-view+json" in cell.outputs[0]["data"]]
    assert len(widget_outputs) == len(SHOWN) - 1  # every view but the IR's own output is a widget
    # A notebook that names no kernel: JupyterLab asks for one, and the user picks "No Kernel".
    saved.metadata.pop("kernelspec", None)
    saved.metadata.pop("language_info", None)
    nbformat.write(saved, lab.root / "saved.ipynb")

    logged = []
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.on("console", lambda message: logged.append((message.type, message.text)))
    page.on("pageerror", lambda error: logged.append(("pageerror", str(error))))
    page.set_default_timeout(120_000)
    page.goto(lab.tree("saved.ipynb"))
    page.locator(".jp-Dialog").wait_for()
    page.locator(".jp-Dialog select").select_option(label="No Kernel")
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.wait_for_function("window.jupyterapp?.shell.currentWidget?.sessionContext?.kernelDisplayName === 'No Kernel'")
    page.wait_for_function(f"({OUTPUTS})().every((output) => output.drawn)")
    page.wait_for_timeout(3000)  # longer than ipywidgets waits for a missing model before it logs
    outputs = page.evaluate(OUTPUTS)
    page.screenshot(path=str(ARTIFACTS / "reopen-no-kernel.png"), full_page=True)
    cells = page.locator(".jp-Cell")
    for index, name in enumerate(SHOWN):
        output = cells.nth(1 + index).locator(".jp-OutputArea-output").first
        output.scroll_into_view_if_needed()
        output.screenshot(path=str(ARTIFACTS / f"reopen-no-kernel-{name}.png"))
    assert page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session") is None  # no kernel
    card = cells.nth(1 + list(SHOWN).index("call-tree-one-graph")).locator(".jp-OutputArea-output").first
    check_card(card.evaluate(CARD))
    assert [output["drawn"] for output in outputs] == [True] * len(SHOWN), outputs
    assert not any("model not found" in output["text"] for output in outputs), outputs
    assert not any("model not found" in text for _, text in logged), logged
    assert [entry for entry in logged if entry[0] in ("error", "warning", "pageerror")] == [], logged
    # the outputs are as saved (choosing "No Kernel" writes an empty kernelspec into the metadata, nothing else)
    shown = page.evaluate("window.jupyterapp.shell.currentWidget.context.model.toJSON()")
    assert [cell.get("outputs") for cell in shown["cells"]] == [cell.get("outputs") for cell in saved.cells]
    page.close()


def check_card(card: dict) -> None:
    """The one graph's square sits just under the legend's start, its label right beside it."""
    square, label, legend = card["square"], card["label"], card["legend"]
    assert abs(square["left"] - legend["left"]) <= 40, card
    assert 0 <= square["top"] - legend["bottom"] <= 60, card
    assert 0 <= label["left"] - square["right"] <= 20, card
    assert label["right"] - card["output"]["left"] <= 480, card  # all within a small card
