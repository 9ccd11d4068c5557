"""The model and graph pictures fit a notebook output narrower than PICTURE_WIDTH (JupyterLab's in a narrow
window, 630 px): the page tells the canvas its width (``room``), and the views lay their pictures out again
for it; a wider output keeps PICTURE_WIDTH, and the stepper's narrower picture keeps its own width."""
import popxl
import pytest

import workbench

from support.scene_geometry import check_scene

from real_programs import resnet50_session
from support.programs import mlp_training
from workbench.widgets import GraphView, ModelView
from workbench.widgets.tabs import STEPPER_PICTURE_WIDTH
from workbench.widgets.figures.picture_labels import CHAR_WIDTH, LABEL_GAP, MARGIN, picture_sizes
from workbench.widgets.style import NARROWEST_PICTURE, PICTURE_WIDTH, fitted_width

NARROW = 630


@pytest.fixture(scope="module")
def resnet():
    return resnet50_session()._workbench_source()


def test_fitted_width_takes_the_room_between_the_narrowest_picture_and_the_preferred_width():
    assert fitted_width(PICTURE_WIDTH, 0) == PICTURE_WIDTH  # not drawn yet
    assert fitted_width(PICTURE_WIDTH, NARROW) == NARROW
    assert fitted_width(PICTURE_WIDTH, 1400) == PICTURE_WIDTH
    assert fitted_width(PICTURE_WIDTH, 200) == NARROWEST_PICTURE  # narrower still: it scrolls
    assert fitted_width(300, 200) == 300


def test_the_model_picture_is_laid_out_again_for_a_narrow_output_and_back(resnet):
    view = ModelView(resnet, live=False)
    view.widget
    view._canvas._message(view._canvas, {"kind": "room", "width": NARROW}, [])  # as the page tells it
    layout = view.figure.layout
    assert layout.width == NARROW and layout.xaxis.range == (0, NARROW - 40)
    assert view._canvas.figure["layout"]["width"] == NARROW  # what the page draws
    assert view._crumbs.layout.max_width == f"{NARROW}px"
    scene = view.scene
    assert all(box["x"] + box["w"] / 2 <= NARROW - 40 for box in scene.boxes)  # folded to the narrower width
    check_scene(scene)
    view.expand(next(n["key"] for n in view.picture["nodes"] if n["kind"] == "group"))
    assert view.figure.layout.width == NARROW  # an expanded group is drawn at the output's width too
    check_scene(view.scene)
    view._canvas.room = 1400
    assert view.figure.layout.width == PICTURE_WIDTH


def test_a_picture_that_does_not_fit_its_output_keeps_its_width_and_the_steppers_is_one(resnet):
    view = ModelView(resnet, width=560, fits_output=False, live=False)
    view.widget
    view._canvas.room = 300  # a box as wide as its content would report less and less
    assert view.figure.layout.width == 560
    ir, inputs = mlp_training()
    with popxl.Session(ir, "ipu_model") as session:
        beside, _ = workbench.show(session, inputs, live=False)["stepper"].views
        assert beside.fits_output is False and beside.width == STEPPER_PICTURE_WIDTH


def test_graph_labels_end_inside_a_narrow_output():
    ir = mlp_training()[0]
    view = GraphView(ir, graph=next(g for g in ir.graphs if len(g.ops) > 10), live=False)
    view.widget
    view._canvas.room = NARROW
    assert view.width == NARROW
    layout = view.layout
    column = picture_sizes(layout, NARROW).column
    right = []
    for trace in view.figure.data:
        if trace.mode != "markers+text":
            continue
        for x, label in zip(trace.x, trace.text):
            if label:
                pixel = MARGIN + (x - layout.left + 0.5) * column  # the marker's centre in the output
                right.append(pixel + trace.marker.size / 2 + LABEL_GAP + len(label) * CHAR_WIDTH)
    assert right and max(right) <= NARROW
