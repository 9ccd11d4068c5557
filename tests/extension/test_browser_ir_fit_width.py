"""The extension's grouped picture (an Ir's own display, and a saved ``.ir.json`` file in its own pane) in a
real browser (JupyterLab, headless Chromium) is laid out for the width it is given: a tall picture folds to
it, one a little wider is drawn smaller to fit, and it is laid out again when the output is resized. At 630
and 1280 px, for a pipelined transformer, ResNet-50 through PopART and a 10,003-op program, collapsed and with
a group expanded (the transformer's twelve parallel all-reduces too, wrapped into rows): nothing sticks out
or scrolls sideways, no box overlaps another, every box's text fits inside it. The Graph tab's whole-graph
picture, wider than the output, opens with its first op in view, not on empty edges, with weights and
constants folded into the boxes of their ops (ResNet-50's a column 562 px wide, once 4,789 px of weights); the Memory tab's chart
is laid out for its panel's width, at one pixel per pixel, and again when resized. Screenshots go to
tests/artifacts/ (ir-fit-*.png)."""
import json

import pytest

from support.jupyterlab_harness import (open_page, output_width, run_notebook)
from test_browser_grouped import ARTIFACTS, BOXES, CLIPPED, TESTS, check_drawn

pytestmark = pytest.mark.slow

SETUP = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import real_programs"""
PROGRAMS = {"transformer": "real_programs.transformer()[0]",
            "resnet50": "real_programs.resnet50_session()._workbench_source()",
            "wide": "real_programs.wide_program()"}
# The widths of the picture's canvas, of what it holds and of the picture; the toolbar's note on its size.
GEOMETRY = """(root) => {
    const canvas = root.querySelector('.ipu-wb-group-canvas');
    const svg = canvas.querySelector('.ipu-wb-group-svg');
    return {room: canvas.clientWidth, scroll: canvas.scrollWidth, drawn: svg.getBoundingClientRect().width,
            picture: svg.viewBox.baseVal.width, note: root.querySelector('.ipu-wb-group-note')?.textContent ?? ''};
}"""
EXPAND_FIRST = "ipu-wb-pbox-group:not(.ipu-wb-pbox-frame)"
# Whether the Graph tab's first op (init) lies whole inside the canvas's first screen.
FIRST_OP_IN_VIEW = """(root) => {
    const canvas = root.querySelector('.ipu-wb-graph-view .ipu-wb-canvas');
    const first = [...canvas.querySelectorAll('.ipu-wb-op')].find((g) => g.querySelector('title').textContent.startsWith('init'));
    const c = canvas.getBoundingClientRect(), b = first.querySelector('rect').getBoundingClientRect();
    return c.left <= b.left && b.right <= c.right && c.top <= b.top && b.bottom <= c.bottom;
}"""
# The width the Graph tab's whole-graph picture was laid out at.
GRAPH_WIDTH = "(root) => root.querySelector('.ipu-wb-graph-svg').viewBox.baseVal.width"
# Whether the .ir.json pane shows all of the view: it fits, or the pane scrolls to the rest.
PANE_SCROLLS = """(root) => {
    const pane = root.closest('.jp-MimeDocument > .ipu-wb-renderer');
    return pane.scrollHeight <= pane.clientHeight + 1 || ['auto', 'scroll'].includes(getComputedStyle(pane).overflowY);
}"""
# The memory chart's width on the page and the width it was laid out for.
CHART_WIDTHS = """(root) => {
    const chart = root.querySelector('.ipu-wb-chart-svg');
    return [chart.getBoundingClientRect().width, chart.viewBox.baseVal.width, chart.parentElement.clientWidth];
}"""


def check_fits(root) -> dict:
    """The picture inside its canvas: no box over another, no text out of its box; nothing else in the view
    sticking out or cut. Gives the geometry."""
    geometry = root.evaluate(GEOMETRY)
    assert geometry["scroll"] <= geometry["room"] + 1 and geometry["drawn"] <= geometry["room"] + 1, geometry
    assert root.evaluate(CLIPPED) == []
    if geometry["drawn"] < geometry["picture"] - 1:  # drawn smaller to fit: not so small it cannot be read
        assert geometry["drawn"] >= 0.75 * geometry["picture"] - 1 and geometry["note"].startswith("drawn at"), geometry
    check_drawn(root.evaluate(BOXES))
    return geometry


# Whether the group canvas is taller than its view, and how its backgrounds are attached.
SCROLL_SHADOWS = """(root) => {
    const canvas = root.querySelector('.ipu-wb-group-canvas');
    return [canvas.scrollHeight > canvas.clientHeight, getComputedStyle(canvas).backgroundAttachment];
}"""


def test_an_irs_picture_is_laid_out_for_its_outputs_width_at_630_and_1280_px_and_again_when_resized(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "fit.ipynb", [SETUP, *PROGRAMS.values()], width=630)
    page.wait_for_function(f"document.querySelectorAll('.jp-OutputArea .ipu-wb-group-svg').length === {len(PROGRAMS)}")
    page.wait_for_function("![...document.querySelectorAll('.ipu-wb-summary')].some(s => s.textContent.includes('the top level first'))")
    views = {name: page.locator(".jp-Cell").nth(1 + n).locator(".ipu-wb-root").first for n, name in enumerate(PROGRAMS)}
    room = {}
    for name, view in views.items():
        room[name] = check_fits(view)["room"]
        assert 560 < room[name] <= 630
        view.screenshot(path=str(ARTIFACTS / f"ir-fit-{name}-630px.png"))
    # at 630 px the transformer's main graph is laid out within the output, at its full size
    assert views["transformer"].evaluate(GEOMETRY)["picture"] <= room["transformer"]
    # ResNet-50 goes on below its canvas: a shadow at the bottom edge says so (covers scroll, shadows stay)
    overflow, attachment = views["resnet50"].evaluate(SCROLL_SHADOWS)
    assert overflow and attachment == "local, local, scroll, scroll", (overflow, attachment)
    for name, view in views.items():
        view.locator(f".{EXPAND_FIRST}").first.click()
        geometry = check_fits(view)
        view.screenshot(path=str(ARTIFACTS / f"ir-fit-{name}-expanded-630px.png"))
        if name == "wide":  # 24 blocks in a column: folded for 920 px they were 652 px wide, now one band
            assert geometry["picture"] <= room["wide"], geometry
    # inside the optimizer, its first run: 8 units of an all-reduce and its update, wrapped into rows
    views["transformer"].locator(f".{EXPAND_FIRST}").first.click()
    assert views["transformer"].locator(".ipu-wb-pbox-frame").count() == 2
    assert check_fits(views["transformer"])["picture"] <= room["transformer"]
    views["transformer"].screenshot(path=str(ARTIFACTS / "ir-fit-transformer-expanded-twice-630px.png"))
    output_width(page, 1280)  # resized: each picture is laid out again for the wider output
    page.wait_for_timeout(1000)
    for name, view in views.items():
        geometry = check_fits(view)
        assert 900 < geometry["room"] <= 1280 - 260, geometry  # the details beside the picture
        view.screenshot(path=str(ARTIFACTS / f"ir-fit-{name}-expanded-1280px.png"))
        if name == "wide":  # fewer, wider bands: beyond what a fixed 920-px fold gives
            assert 920 < geometry["picture"] <= geometry["room"], geometry
    for name in ("transformer", "resnet50"):  # whole graphs wider than the output open on their first op
        views[name].locator(".ipu-wb-tab-graph").click()
        views[name].locator(".ipu-wb-draw-large").click()  # both open grouped (tall, and 181 ops)
        views[name].locator(".ipu-wb-graph-svg").wait_for()
        assert views[name].evaluate(FIRST_OP_IN_VIEW)
        graph = views[name].locator(".ipu-wb-graph-view")
        assert graph.locator(".ipu-wb-variable, .ipu-wb-constant").count() == 0  # folded into their ops' boxes
        assert graph.locator(".ipu-wb-subline").count() > 0
        if name == "resnet50":  # a column of ops with their weights, not a row of 161 weight nodes (4,789 px)
            assert views[name].evaluate(GRAPH_WIDTH) < 1000
        views[name].screenshot(path=str(ARTIFACTS / f"ir-fit-{name}-graph-1280px.png"))
        views[name].locator(".ipu-wb-tab-memory").click()
    for width in (1280, 630):  # the memory chart is laid out for its panel, at one pixel per pixel
        output_width(page, width)
        for name in ("transformer", "resnet50"):
            drawn, laid_out, panel = views[name].evaluate(CHART_WIDTHS)
            assert abs(drawn - laid_out) <= 1 and abs(drawn - panel) <= 1, (drawn, laid_out, panel)
            assert views[name].evaluate(CLIPPED) == []
            views[name].screenshot(path=str(ARTIFACTS / f"ir-fit-{name}-memory-{width}px.png"))
    page.close()


def test_a_saved_ir_json_file_is_laid_out_for_its_panes_width_and_again_when_resized(lab, browser):
    import real_programs
    from workbench.export.mime import MIME_TYPE

    ARTIFACTS.mkdir(exist_ok=True)
    document = real_programs.wide_program()._repr_mimebundle_()[0][MIME_TYPE]
    (lab.root / "wide.ir.json").write_text(json.dumps(document), encoding="utf-8")
    page = open_page(browser, lab.tree("wide.ir.json"))
    page.set_default_timeout(240_000)
    view = page.locator(".jp-MimeDocument .ipu-wb-root").first
    view.locator(".ipu-wb-group-svg").wait_for()
    for width in (630, 1280):
        pane_width(page, width)
        geometry = check_fits(view)
        view.locator(f".{EXPAND_FIRST}").first.click()
        expanded = check_fits(view)
        assert expanded["room"] == geometry["room"] and expanded["picture"] <= expanded["room"]
        if width == 1280:  # folded into bands as wide as the pane, beyond a fixed 920-px fold
            assert expanded["picture"] > 920, expanded
        assert view.evaluate(PANE_SCROLLS)  # what lies below a tall picture can be scrolled to
        view.screenshot(path=str(ARTIFACTS / f"ir-fit-wide-ir-json-{width}px.png"))
        view.locator(".ipu-wb-pbox-frame .ipu-wb-frame-title").first.click()  # closed again
    page.close()


def pane_width(page, width: int) -> None:
    """Resizes the page so that the open ``.ir.json`` file's view is ``width`` pixels wide."""
    now = page.evaluate("document.querySelector('.jp-MimeDocument .ipu-wb-root').getBoundingClientRect().width")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"] + width - round(now), "height": 1100})
    page.wait_for_timeout(1500)
