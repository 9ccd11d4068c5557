"""The standalone report, and the HTML that `show()` displays without a kernel, in a real browser (Debian's
Chromium, headless, offline): the packed plotly.js unpacks and every figure is drawn, with no request
leaving the page."""
import sys
from pathlib import Path

import pytest

import popxl
import workbench
from support.jupyterlab_harness import open_page

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def test_every_figure_of_the_mlp_report_is_drawn_offline(tmp_path, browser):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from support.programs import mlp_training

    ir, inputs = mlp_training()
    with popxl.Session(ir, "ipu_model") as session:
        session.run(inputs)
    path = workbench.report(session, tmp_path / "mlp.html")
    page = open_page(browser, "about:blank")
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(path.as_uri())
    figures = page.locator(".plotly-graph-div")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('.main-svg'))")
    assert figures.count() == 5 + len(ir.graphs)
    assert page.evaluate("() => typeof window.Plotly.newPlot") == "function"
    assert page.locator(".plotly-graph-div .scatterlayer .trace").count() > 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report_mlp.png"), full_page=False)
    assert [url for url in requests if not url.startswith("file:")] == []


def test_the_html_of_show_without_a_kernel_draws_offline(tmp_path, browser):
    from support.programs import mlp_training

    ir, _ = mlp_training()
    shown = workbench.show(ir, live=False)
    html = shown._repr_mimebundle_()[0]["text/html"]  # no kernel here: the static HTML
    path = tmp_path / "shown.html"
    path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{html}</body></html>",
                    encoding="utf-8")
    page = open_page(browser, "about:blank")
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(path.as_uri())
    page.wait_for_function(
        "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('.main-svg'))")
    assert page.locator(".plotly-graph-div").count() == 5 + len(ir.graphs)
    assert [url for url in requests if not url.startswith("file:")] == []
