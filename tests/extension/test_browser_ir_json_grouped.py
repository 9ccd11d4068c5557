"""A ``.ir.json`` file written as the README says (``to_json(ir, liveness=True)``) opens in JupyterLab (headless
Chromium) on the grouped Model tab, for a 2,102-op chain and a 10,003-op program: never the whole-graph Graph tab,
which at these sizes took 26.6 s and drew a hairball, or waited behind a "draw it" button. The time from opening
to the picture painted is printed; tests/benchmarks/bench_browser_first_pictures.py holds it to 2 s. Screenshots
go to tests/artifacts/ (ir-json-*.png)."""
import json

import pytest

from support.jupyterlab_harness import open_page
from test_browser_grouped import ARTIFACTS

pytestmark = pytest.mark.slow

PROGRAMS = ("long_chain", "wide_program")
# Opens file ``path`` and gives the milliseconds until its pane paints the grouped picture (or fails, or 10 s
# pass), with what the pane shows.
TIME_TO_GROUPED_PICTURE = """async (path) => {
  const start = performance.now();
  const widget = await window.jupyterapp.commands.execute('docmanager:open', {path});
  return await new Promise((resolve) => {
    const painted = () => {
      const node = widget.node;
      const failed = node.querySelector('.ipu-wb-root.ipu-wb-error');
      if (node.querySelector('.ipu-wb-group-svg') || failed || performance.now() - start > 10000) {
        requestAnimationFrame(() => resolve({
          ms: performance.now() - start,
          error: failed?.textContent ?? null,
          active: node.querySelector('.ipu-wb-tab.ipu-wb-active')?.textContent ?? null,
          groups: node.querySelectorAll('.ipu-wb-group-svg .ipu-wb-pbox-group').length,
          graphDrawn: node.querySelector('.ipu-wb-graph-svg') !== null,
        }));
      } else {
        requestAnimationFrame(painted);
      }
    };
    painted();
  });
}"""


def open_each_ir_json(lab, browser) -> dict[str, dict]:
    """Writes each of ``PROGRAMS`` to a ``.ir.json`` file as the README says and opens it: what
    ``TIME_TO_GROUPED_PICTURE`` gives for each."""
    import real_programs
    import workbench.export

    ARTIFACTS.mkdir(exist_ok=True)
    for name in PROGRAMS:
        ir = getattr(real_programs, name)()
        with open(lab.root / f"{name}.ir.json", "w") as f:  # the README's recipe
            json.dump(workbench.export.to_json(ir, liveness=True), f)
    page = open_page(browser, f"{lab.url}/lab?reset")
    page.wait_for_function("window.jupyterapp !== undefined")
    page.evaluate("window.jupyterapp.restored")
    every_opened = {}
    for name in PROGRAMS:
        every_opened[name] = opened = page.evaluate(TIME_TO_GROUPED_PICTURE, lab.path(f"{name}.ir.json"))
        page.locator(".jp-MimeDocument:visible .ipu-wb-root").first.screenshot(
            path=str(ARTIFACTS / f"ir-json-{name}.png"))
        print(f"{name}.ir.json: {opened['ms']:.0f} ms after opening: {opened}")
    page.close()
    return every_opened


def test_an_ir_json_file_written_the_readmes_way_opens_on_its_grouped_picture(lab, browser):
    every_opened = open_each_ir_json(lab, browser)
    assert set(every_opened) == set(PROGRAMS)
    for opened in every_opened.values():
        assert opened["error"] is None, opened
        assert opened["active"] == "Model" and opened["groups"] > 0, opened  # boxes of groups, not of ops
        assert not opened["graphDrawn"], opened  # no whole-graph layout of thousands of ops
