"""In JupyterLab (headless Chromium), the transformer's ``.ir.json`` Graph tab opens its main graph as the export
says (``grouped.graphs[].opens``: taller than a screen op by op): the grouped picture, its optimizer one box saying
``24 × replicated_all_reduce → accumulate_``, within the first screen; a click opens the optimizer in place into runs
of 8 units, one per weight; "draw every op" draws the ladder. Screenshots go to tests/artifacts/ (opening-*.png)."""
import json

import pytest

from support.jupyterlab_harness import open_page
from test_browser_grouped import ARTIFACTS

pytestmark = pytest.mark.slow

# Opens file ``path`` on its Graph tab showing the main graph, and gives what the tab shows once painted.
OPEN_GRAPH_TAB = """async (path) => {
  const widget = await window.jupyterapp.commands.execute('docmanager:open', {path});
  const node = widget.node;
  const start = performance.now();
  while (!node.querySelector('.ipu-wb-tab-graph') && performance.now() - start < 10000) {
    await new Promise(resolve => setTimeout(resolve, 20));
  }
  node.querySelector('.ipu-wb-tab-graph').click();
  while (!node.querySelector('.ipu-wb-graph-view .ipu-wb-canvas > *') && performance.now() - start < 10000) {
    await new Promise(resolve => setTimeout(resolve, 20));
  }
  const canvas = node.querySelector('.ipu-wb-graph-view .ipu-wb-canvas');
  const picture = canvas.querySelector('.ipu-wb-group-svg');
  return {
    opens: canvas.getAttribute('data-opens'),
    message: canvas.querySelector('.ipu-wb-large')?.textContent ?? '',
    groups: picture ? [...picture.querySelectorAll('.ipu-wb-pbox-group')].map(box =>
      [...box.querySelectorAll('text')].map(text => text.textContent).join(' | ')) : [],
    height: picture ? picture.getBoundingClientRect().height : 0,
  };
}"""


def test_the_transformers_main_graph_opens_grouped_in_the_graph_tab_and_draws_every_op_on_request(lab, browser):
    import real_programs
    import workbench.export

    ARTIFACTS.mkdir(exist_ok=True)
    ir, _ = real_programs.transformer()
    with open(lab.root / "transformer.ir.json", "w") as f:
        json.dump(workbench.export.to_json(ir), f)
    page = open_page(browser, f"{lab.url}/lab?reset")
    page.wait_for_function("window.jupyterapp !== undefined")
    page.evaluate("window.jupyterapp.restored")
    shown = page.evaluate(OPEN_GRAPH_TAB, lab.path("transformer.ir.json"))
    assert shown["opens"] == "tall", shown
    assert "take 28 rows, more than a screen holds: shown grouped" in shown["message"], shown
    assert shown["groups"] == ["▸ optimizer | 48 ops: 24 × replicated_all_reduce → accumulate_"], shown
    assert 0 < shown["height"] <= 700, shown  # the whole graph on the first screen
    pane = page.locator(".jp-MimeDocument:visible .ipu-wb-root").first
    pane.screenshot(path=str(ARTIFACTS / "opening-transformer-main-grouped.png"))
    boxes = ".ipu-wb-graph-view .ipu-wb-pbox-group:not(.ipu-wb-pbox-frame)"
    read = "boxes => boxes.map(box => [...box.querySelectorAll('text')].map(text => text.textContent).join(' | '))"
    pane.locator(boxes).first.click()
    page.wait_for_function("document.querySelectorAll('.ipu-wb-graph-view .ipu-wb-pbox-group').length >= 4")
    runs = pane.locator(boxes).evaluate_all(read)
    assert runs == [f"▸ layer{n}.qkv … layer{n + 1}.ff2 | 16 ops: 8 × replicated_all_reduce → accumulate_"
                    for n in (0, 2, 4)], runs
    pane.locator(boxes).first.click()
    page.wait_for_function("document.querySelectorAll('.ipu-wb-graph-view .ipu-wb-pbox-group').length >= 12")
    units = pane.locator(boxes).evaluate_all(read)
    assert "▸ layer0.qkv | 2 ops: replicated_all_reduce → accumulate_" in units and len(units) == 10, units  # 8 + 2 runs
    pane.screenshot(path=str(ARTIFACTS / "opening-transformer-optimizer-open.png"))
    pane.locator(".ipu-wb-draw-large").click()
    page.wait_for_function("document.querySelector('.ipu-wb-graph-view .ipu-wb-graph-svg') !== null")
    drawn = page.evaluate("document.querySelectorAll('.ipu-wb-graph-view .ipu-wb-graph-svg .ipu-wb-op').length")
    assert drawn == len(ir.main_graph.ops), drawn
    pane.screenshot(path=str(ARTIFACTS / "opening-transformer-every-op.png"))
    page.close()
