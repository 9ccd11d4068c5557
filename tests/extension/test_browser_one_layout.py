"""The extension's Graph tab in a real browser (JupyterLab, headless Chromium) places graphs from the layering the
export ships: the transformer's main and backward graphs, the 2,102-op chain and a 2,002-op backward graph are
drawn in panes 590 and 1,280 px wide and fit the pane (the 2,002-op graph, once about 19,900 px wide behind a
"draw it" button, now wraps). Each of them opens grouped, as the export says (``grouped.graphs[].opens``), and is
drawn op by op on "draw every op". The times and widths are printed (tests/benchmarks/bench_browser_first_pictures.py
holds each to 2 s); screenshots go to tests/artifacts/ (one-layout-*.png).

Run with the build of this checkout: ``JUPYTER_PATH`` naming a folder whose ``labextensions/ipu-workbench`` is
``extensions/ipu-workbench/labextension`` puts it before an installed copy."""
import json

import pytest

from support.jupyterlab_harness import open_page
from support.programs import mlp_training
from test_browser_grouped import ARTIFACTS
from test_browser_ir_fit_width import pane_width
from workbench.export.mime import MIME_TYPE

pytestmark = pytest.mark.slow

# Picks `graph` in the Graph tab's menu and resolves, once the drawing is painted, to the seconds it took, the
# canvas's width, the drawing's width, the engine that placed it, its count of ops and how it opened (grouped: the
# seconds count from "draw every op").
PICK = """async ([root, graph]) => {
    const view = root.querySelector('.ipu-wb-graph-view');
    const select = view.querySelector('.ipu-wb-graph-select');
    let start = performance.now();
    select.value = graph;
    select.dispatchEvent(new Event('change'));
    const canvas = view.querySelector('.ipu-wb-canvas');
    const opens = canvas.getAttribute('data-opens');
    const drawEvery = canvas.querySelector('.ipu-wb-draw-large');
    if (drawEvery !== null) {  // it opens grouped: the time from asking for every op
        start = performance.now();
        drawEvery.click();
    }
    while (canvas.getAttribute('aria-busy') === 'true' || canvas.querySelector('.ipu-wb-graph-svg') === null) {
        if (performance.now() - start > 90000) {
            throw new Error(`${graph}: no drawing within 90 s of picking it`);
        }
        await new Promise(resolve => setTimeout(resolve, 5));
    }
    await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    const svg = canvas.querySelector('.ipu-wb-graph-svg');
    return {seconds: (performance.now() - start) / 1000, room: canvas.clientWidth, drawn: svg.getBoundingClientRect().width,
            engine: svg.getAttribute('data-engine'), ops: svg.querySelectorAll('.ipu-wb-op').length, opens};
}"""
# (program, graph, its count of ops)
PICKS = [("transformer", "main_graph", 53), ("transformer", "transformer.forward_grad", 359),
         ("chain", "main_graph", 2102), ("mlp", "mlp_training.forward_grad", 2002)]


def pick_every_graph(lab, browser) -> list[tuple[tuple[str, str, int], int, dict]]:
    """Opens each program's ``.ir.json`` and picks its graphs in the Graph tab, in panes 590 and 1,280 px wide:
    (its entry of ``PICKS``, pane width, what ``PICK`` gives) for each, a screenshot of each in tests/artifacts/."""
    import real_programs

    ARTIFACTS.mkdir(exist_ok=True)
    programs = {"transformer": real_programs.transformer()[0], "chain": real_programs.long_chain(),
                "mlp": mlp_training(layers=333)[0]}
    results = []
    for name, program in programs.items():
        document = program._repr_mimebundle_()[0][MIME_TYPE]
        (lab.root / f"{name}.ir.json").write_text(json.dumps(document), encoding="utf-8")
    for name in programs:
        page = open_page(browser, lab.tree(f"{name}.ir.json"))
        page.set_default_timeout(240_000)
        view = page.locator(".jp-MimeDocument .ipu-wb-root").first
        view.locator(".ipu-wb-tab-graph").click()
        view.locator(".ipu-wb-graph-view .ipu-wb-canvas > *").first.wait_for()
        for width in (590, 1280):
            pane_width(page, width)
            for entry in PICKS:
                program, graph, _ = entry
                if program == name:
                    picked = page.evaluate(PICK, [view.element_handle(), graph])
                    print(f"{name} {graph} at {width} px: {picked}")
                    results.append((entry, width, picked))
                    view.screenshot(path=str(ARTIFACTS / f"one-layout-{name}-{graph}-{width}px.png"))
        page.close()
    return results


def test_graphs_are_drawn_from_the_shipped_layering_and_fit_the_pane(lab, browser):
    results = pick_every_graph(lab, browser)
    assert len(results) == 2 * len(PICKS)
    for (_, _, ops), _, picked in results:
        assert picked["engine"] == "shipped" and picked["ops"] == ops, picked
        assert picked["opens"] == ("tall" if ops < 150 else "large"), picked
        assert picked["drawn"] <= picked["room"] + 0.5, picked
