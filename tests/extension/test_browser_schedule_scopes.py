"""The grey strip of name scopes under a binned schedule's rows names each scope on the strip where the
name fits, in a real browser (headless Chromium drawing the static figure at a notebook's width): every name
drawn lies inside its own strip, and at 630 px each scope of the 2,102-op chain and the 10,003-op program
is named. The transformer's schedule (bar by bar, its layers named per run) keeps its legend, wrapped at 630 px,
clear of its title. Screenshots: tests/artifacts/schedule-scopes-*.png."""
from pathlib import Path

import plotly.io as pio
import pytest

from real_programs import long_chain, transformer, wide_program
from workbench.widgets import ScheduleView

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

# The strip's bars and the names plotly drew on them (none where a name does not fit), as page rectangles.
STRIPS = """() => {
  const trace = [...document.querySelectorAll('.barlayer .trace')].find((node) =>
      node.__data__ && node.__data__[0] && node.__data__[0].trace.name === 'groups (name scopes)');
  return [...trace.querySelectorAll('.point')].map((point) => {
    const bar = point.querySelector('path').getBoundingClientRect();
    const label = point.querySelector('text');
    const box = label ? label.getBoundingClientRect() : null;
    return {bar: [bar.left, bar.top, bar.right, bar.bottom], text: label ? label.textContent : null,
            box: box ? [box.left, box.top, box.right, box.bottom] : null};
  });
}"""


# The bottom of the title's last line and the top of the legend.
TITLE_AND_LEGEND = """() => [document.querySelector('.g-gtitle text').getBoundingClientRect().bottom,
                             document.querySelector('.legend').getBoundingClientRect().top]"""


@pytest.mark.parametrize("name, program, width, named", [
    ("chain", long_chain, 630, 4), ("10k", wide_program, 630, 5), ("10k", wide_program, 300, 0),
    ("transformer", lambda: transformer()[0], 630, 0), ("transformer", lambda: transformer()[0], 1000, 0)])
def test_each_scope_is_named_on_its_strip_where_the_name_fits(browser, name, program, width, named):
    figure = ScheduleView(program(), live=False).figure
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": width + 40, "height": 700})
    try:
        page.set_content(pio.to_html(figure, include_plotlyjs=True, full_html=True, default_width=f"{width}px"))
        page.wait_for_selector(".barlayer .point", state="attached")
        strips = page.evaluate(STRIPS)
        title, legend = page.evaluate(TITLE_AND_LEGEND)
        page.screenshot(path=str(ARTIFACTS / f"schedule-scopes-{name}-{width}px.png"))
    finally:
        page.close()
    assert title <= legend, (title, legend)
    drawn = [strip for strip in strips if strip["text"] and strip["box"][2] > strip["box"][0]]  # hidden: no box
    assert all(strip["text"] for strip in strips) and len(strips) == (named or len(strips))
    if name != "transformer":  # how many of its short runs of layers are named depends on the width
        assert len(drawn) == named
    for strip in drawn:
        (left, top, right, bottom), (x0, y0, x1, y1) = strip["bar"], strip["box"]
        assert left <= x0 and x1 <= right and top - 1 <= y0 and y1 <= bottom + 1, strip
