"""The stepper's table of live values in a real browser (JupyterLab, headless Chromium) is set in lines as
close as its 12-px text needs, not the 28 px that ipywidgets gives each line of an HTML widget: stepped into
the transformer's forward graph, the next op's input (its name and type, and a summary of its value in each of
2 replicas in three short lines: mean, least, largest) takes at most 60 px (145 px at 28 px a line, about 90
with the summary in one wrapped sentence and the graph named on every row). The picture beside it gets the plot
height its figure asks for: its legend, six rows at 560 px, has room under it instead of squashing the boxes.
Screenshot: tests/artifacts/stepper-table.png."""
import pytest

from support.jupyterlab_harness import KERNEL_IDLE, run_notebook
from test_browser_stepper_schedule import ARTIFACTS, STEPPER

pytestmark = pytest.mark.slow

# The height of the next op's input row, and the distance between the lines of text in its cells.
TABLE = """(output) => {
    const row = output.querySelector('table tbody tr');
    const cell = row.querySelector('td');
    return {row: row.getBoundingClientRect().height, line: parseFloat(getComputedStyle(cell).lineHeight),
            size: parseFloat(getComputedStyle(cell).fontSize)};
}"""

# The plot height plotly drew the picture beside the table with, and the one its figure asks for.
PICTURE_PLOT = """(output) => {
    const plot = [...output.querySelectorAll('.js-plotly-plot')].find((node) => node.layout?.xaxis?.visible === false);
    return [plot._fullLayout._size.h, plot.layout.height - plot.layout.margin.t - plot.layout.margin.b];
}"""


def test_the_steppers_live_values_are_set_in_lines_as_close_as_their_text_needs(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "stepper.ipynb", [STEPPER])
    output = page.locator(".jp-Cell").nth(0).locator(".jp-OutputArea-output").first
    output.locator("button", has_text="step").first.wait_for()
    page.wait_for_function(KERNEL_IDLE)
    for _ in range(4):  # into the forward graph, before its split
        output.locator("button", has_text="step").first.click()
        page.wait_for_function(KERNEL_IDLE)
    output.locator("table tbody tr").first.wait_for()
    page.wait_for_timeout(500)
    table = output.evaluate(TABLE)
    drawn, asked = output.evaluate(PICTURE_PLOT)
    output.screenshot(path=str(ARTIFACTS / "stepper-table.png"))
    page.close()
    assert table["size"] == 12 and table["line"] <= 1.4 * table["size"], table
    assert table["row"] <= 60, table
    assert abs(drawn - asked) <= 1, (drawn, asked)
