"""The stepper's schedule in a real browser (JupyterLab, headless Chromium) stays drawn while the run is
stepped: each step patches the figure (the next-op marker moves), and a patch must not lose the figure's
height, which plotly deletes from the layout it was given when it resizes the figure (the schedule then
shrank to nothing under the stepper's table). Screenshot: tests/artifacts/stepper-schedule-stepped.png."""
from pathlib import Path

import pytest

from support.jupyterlab_harness import KERNEL_IDLE, run_notebook

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
TESTS = Path(__file__).resolve().parents[1]

STEPPER = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
import popxl
import workbench
import real_programs

ir, inputs = real_programs.transformer(layers=2)
session = popxl.Session(ir, "ipu_model")
session.__enter__()
wb = workbench.show(session, inputs)
wb.widget.selected_index = wb.tabs.index("stepper")
wb"""

# The heights of the schedule's canvas and of the picture plotly drew in it.
SCHEDULE_HEIGHTS = """(output) => {
    const canvas = [...output.querySelectorAll('.ipu-wb-figure-canvas')].find(
        (node) => (node.querySelector('.gtitle') || {}).textContent?.includes('schedule'));
    return [canvas.getBoundingClientRect().height, canvas.querySelector('.main-svg').getBoundingClientRect().height];
}"""


def test_the_steppers_schedule_keeps_its_height_as_the_run_is_stepped(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = run_notebook(browser, lab, "stepper.ipynb", [STEPPER])
    output = page.locator(".jp-Cell").nth(0).locator(".jp-OutputArea-output").first
    output.locator(".js-plotly-plot .gtitle", has_text="schedule").wait_for()
    page.wait_for_function(KERNEL_IDLE)
    page.wait_for_timeout(1500)  # the first draw, then plotly's resize to the output's width
    canvas, picture = output.evaluate(SCHEDULE_HEIGHTS)
    assert picture > 100 and canvas >= picture, (canvas, picture)
    for _ in range(3):
        output.locator("button", has_text="step").first.click()
        page.wait_for_function(KERNEL_IDLE)
        page.wait_for_timeout(500)
        canvas, picture = output.evaluate(SCHEDULE_HEIGHTS)
        assert picture > 100 and canvas >= picture, (canvas, picture)
    assert output.locator(".js-plotly-plot .legendtext", has_text="next op").count() == 1  # the marker moved in
    output.screenshot(path=str(ARTIFACTS / "stepper-schedule-stepped.png"))
    page.close()
