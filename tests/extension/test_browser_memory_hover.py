"""The memory view's hovers as plotly.js draws them (headless Chromium drawing the static figure): a point
whose template names a run of several lines kept once in the trace's ``meta`` shows each of those lines on a
line of its own, as does a point with a line written in place, and they read as ``point_hover`` reads them;
the peak's star names its step and bytes."""
import re

import plotly.io as pio
import pytest

from real_programs import transformer
from workbench.widgets import LivenessView
from workbench.widgets.figures.liveness_hover import point_hover

pytestmark = pytest.mark.slow

HOVER_LINES = "() => [...document.querySelectorAll('.hoverlayer .hovertext tspan.line')].map((n) => n.textContent)"
RUN = re.compile(r"%\{meta\.lines\[(\d+)\]\}")


def shown_lines(hover: str) -> list[str]:
    """The lines of a hover as the page shows them: markup dropped, entities read."""
    lines = re.sub(r"<br>", "\n", hover)
    lines = re.sub(r"<[^>]+>", "", lines).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return [line for line in lines.split("\n") if line]


def test_a_hovers_runs_of_lines_and_lines_in_place_each_show_on_a_line_of_their_own(browser):
    figure = LivenessView(transformer()[0], live=False).figure
    curve = next(index for index, t in enumerate(figure.data) if t.name == "intermediates" and t.meta["ipu"] == 0)
    drawn = figure.data[curve]
    templates = list(drawn.hovertemplate)
    runs = next(index for index, template in enumerate(templates)
                if any("<br>" in drawn.meta["lines"][int(n)] for n in RUN.findall(template)))
    in_place = next(index for index, template in enumerate(templates)  # past its step, a line not in meta
                    if any(line and not line.startswith("the same") for line in RUN.sub("", template).split("<br>")[1:]))
    star = next(index for index, t in enumerate(figure.data) if t.name == "peak")
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    try:
        page.set_content(pio.to_html(figure, include_plotlyjs=True, full_html=True, div_id="memory"))
        page.wait_for_selector(".main-svg")
        shown = {}
        for name, (trace, point) in {"runs": (curve, runs), "in place": (curve, in_place), "peak": (star, 0)}.items():
            page.evaluate(f"Plotly.Fx.hover('memory', [{{curveNumber: {trace}, pointNumber: {point}}}])")
            page.wait_for_function("document.querySelectorAll('.hoverlayer .hovertext').length > 0")
            shown[name] = page.evaluate(HOVER_LINES)
            page.evaluate("Plotly.Fx.unhover('memory')")
    finally:
        page.close()
    assert shown["runs"] == shown_lines(point_hover(drawn, runs)) and len(shown["runs"]) > 3
    assert shown["in place"] == shown_lines(point_hover(drawn, in_place))
    peak = figure.data[star]
    assert shown["peak"] == shown_lines(peak.hovertext[0]) and shown["peak"][-1].startswith("peak of the tensors: ")
