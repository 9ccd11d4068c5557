"""The extension's Graph tab in a real browser (JupyterLab, headless Chromium) lays a graph wider than its
output out again with its wide layers wrapped into rows: the transformer's main graph, drawn op by op with
"draw every op" (its optimizer's 24
all-reduces and 24 updates once side by side, 4,542 px) fits outputs of 590, 630, 1,240 and 1,280 px, as an
Ir's own display and as a saved ``.ir.json`` file, and is laid out again when the output is resized. The
notebook's Graph tab (``workbench.show``), which opens it grouped as the extension does, wraps the same rows
within the output once asked for every op. Screenshots go to
tests/artifacts/ (graph-wrap-*.png)."""
import json

import pytest

from support.jupyterlab_harness import (open_page, output_width, run_notebook)
from test_browser_grouped import ARTIFACTS, TABS_AND_PLOTS, TESTS
from test_browser_ir_fit_width import pane_width

pytestmark = pytest.mark.slow

SETUP = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import real_programs
real_programs.transformer()[0]"""
WIDTHS = (590, 630, 1240, 1280)
# The canvas's width, the width of what it holds, the drawing's width and the toolbar's note.
GEOMETRY = """(root) => {
    const canvas = root.querySelector('.ipu-wb-graph-view .ipu-wb-canvas');
    const svg = canvas.querySelector('.ipu-wb-graph-svg');
    return {room: canvas.clientWidth, scroll: canvas.scrollWidth, drawn: svg.getBoundingClientRect().width,
            busy: canvas.getAttribute('aria-busy') === 'true', note: root.querySelector('.ipu-wb-layout-note').textContent,
            ops: svg.querySelectorAll('.ipu-wb-op').length};
}"""


def settled_geometry(page, root) -> dict:
    """The Graph tab's geometry once its layout for the present width is drawn."""
    page.wait_for_timeout(500)
    root.locator(".ipu-wb-graph-view .ipu-wb-canvas:not([aria-busy='true']) .ipu-wb-graph-svg").wait_for()
    return root.evaluate(GEOMETRY)


def check_fits(geometry: dict, width: int) -> None:
    assert geometry["ops"] == 53, geometry
    assert geometry["room"] <= width, geometry
    assert geometry["drawn"] <= geometry["room"] and geometry["scroll"] <= geometry["room"], geometry


def test_the_graph_tab_wraps_the_transformers_optimizer_to_its_outputs_width(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "wrap.ipynb", [SETUP], width=WIDTHS[0])
    view = page.locator(".jp-OutputArea .ipu-wb-root").first
    view.locator(".ipu-wb-tab-graph").click()
    view.locator(".ipu-wb-draw-large").click()  # it opens grouped, taller than a screen op by op
    for width in WIDTHS:
        output_width(page, width)
        geometry = settled_geometry(page, view)
        check_fits(geometry, width)
        view.screenshot(path=str(ARTIFACTS / f"graph-wrap-transformer-{width}px.png"))
    page.close()


def test_a_saved_ir_json_files_graph_tab_fits_its_pane(lab, browser):
    import real_programs
    from workbench.export.mime import MIME_TYPE

    ARTIFACTS.mkdir(exist_ok=True)
    document = real_programs.transformer()[0]._repr_mimebundle_()[0][MIME_TYPE]
    (lab.root / "transformer.ir.json").write_text(json.dumps(document), encoding="utf-8")
    page = open_page(browser, lab.tree("transformer.ir.json"))
    page.set_default_timeout(240_000)
    view = page.locator(".jp-MimeDocument .ipu-wb-root").first
    view.locator(".ipu-wb-tab-graph").click()
    view.locator(".ipu-wb-draw-large").click()  # it opens grouped, taller than a screen op by op
    for width in (630, 1280):
        pane_width(page, width)
        geometry = settled_geometry(page, view)
        check_fits(geometry, width)
        view.screenshot(path=str(ARTIFACTS / f"graph-wrap-transformer-ir-json-{width}px.png"))
    page.close()


SHOWN = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import workbench
import real_programs
workbench.show(real_programs.transformer()[0])"""


def test_the_notebooks_graph_tab_wraps_the_transformers_optimizer_within_its_output(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "shown.ipynb", [SHOWN], width=630)
    output = page.locator(".jp-Cell").first.locator(".jp-OutputArea-output").first
    visible_plot = ".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden) .main-svg"
    output.locator(visible_plot).first.wait_for(state="visible")
    output.locator(".lm-TabBar-tab", has_text="graph").first.click()
    page.wait_for_timeout(1000)
    texts = output.locator(visible_plot).first.evaluate(  # a label's lines (plotly's tspans) joined by a space
        """(svg) => [...svg.querySelectorAll('.textpoint text')].map((t) => {
             const lines = [...t.querySelectorAll('tspan.line')].map((line) => line.textContent);
             return lines.length ? lines.join(' ') : t.textContent; })""")
    # grouped, the optimizer's caption whole on two lines at 630 px
    assert "▸ optimizer (48 ops): 24 × replicated_all_reduce → accumulate_" in texts, texts
    output.locator("select:has(option:text-is('every op'))").first.select_option(label="every op")
    for width in (630, 1280):
        output_width(page, width)
        page.wait_for_timeout(2000)  # the page tells the kernel its width; the picture comes back laid out for it
        assert output.evaluate(TABS_AND_PLOTS) == []
        texts = output.locator(visible_plot).first.evaluate(
            "(svg) => [...svg.querySelectorAll('.textpoint text')].map((t) => t.textContent)")
        assert sum(text.startswith("accumulate_") for text in texts) >= 4, texts  # the top rows, labelled whole
        assert not any(text.endswith("…") for text in texts), texts
        output.screenshot(path=str(ARTIFACTS / f"graph-wrap-notebook-transformer-{width}px.png"))
    page.close()
