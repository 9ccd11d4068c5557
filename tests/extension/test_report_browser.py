"""The standalone report in a real browser (Debian's Chromium, headless, offline): the packed
plotly.js unpacks and every figure of the MLP's report is drawn, with no request leaving the page."""
import sys
from pathlib import Path

import pytest

import popxl
import workbench
from support.jupyterlab_harness import chromium, open_page

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def test_every_figure_of_the_mlp_report_is_drawn_offline(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from support.programs import mlp_training

    ir, inputs = mlp_training()
    with popxl.Session(ir, "ipu_model") as session:
        session.run(inputs)
    path = workbench.report(session, tmp_path / "mlp.html")
    with chromium() as browser:
        page = open_page(browser, "about:blank")
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(path.as_uri())
        figures = page.locator(".plotly-graph-div")
        page.wait_for_function(
            "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('.main-svg'))")
        assert figures.count() == 4 + len(ir.graphs)
        assert page.evaluate("() => typeof window.Plotly.newPlot") == "function"
        assert page.locator(".plotly-graph-div .scatterlayer .trace").count() > 0
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report_mlp.png"), full_page=False)
    assert [url for url in requests if not url.startswith("file:")] == []
