"""Every op of an ungrouped graph carries its whole label in the picture at the widths of a narrow and a
wide notebook: wide layers (a transformer's 48 optimizer ops) fold into more rows instead of dropping labels."""
import pytest

from real_programs import transformer
from picture_pixels import Pixels
from workbench.widgets import GraphView

OP_TRACES = ("ops", "call sites (click to expand)")


@pytest.fixture(scope="module")
def main_graph_ir():
    return transformer()[0]


@pytest.mark.parametrize("room", [630, 1280])
def test_every_op_of_the_transformer_main_graph_has_its_whole_label(main_graph_ir, room):
    view = GraphView(main_graph_ir, grouped=False, live=False)  # it opens grouped, its optimizer one box
    view.fit(room)
    figure = view.figure
    labels = {node.key: node.caption for node in view.picture.nodes.values() if node.kind == "op"}
    assert len(labels) == len(main_graph_ir.main_graph.ops) == 53
    drawn = {key: label for trace in figure.data if trace.name in OP_TRACES
             for key, label in zip(trace.customdata, trace.text)}
    assert drawn == labels  # every op box labelled, none cut
    assert any("·" in label and "⟨" in label for label in labels.values())  # optimizer ops name their weight
    pixels = Pixels(figure, view.width)
    boxes = pixels.labels
    assert len(boxes) == len(labels)
    for index, (left, top, right, bottom, _) in enumerate(boxes):
        assert 0 <= left and right <= pixels.width, "a label runs off the picture"
        for other_left, other_top, other_right, other_bottom, _ in boxes[index + 1:]:
            assert right <= other_left or other_right <= left or bottom <= other_top or other_bottom <= top, \
                "two labels overlap"
    centres, radii = pixels.centres, pixels.radii
    for index in range(len(centres)):
        for other in range(index + 1, len(centres)):
            assert ((centres[index] - centres[other]) ** 2).sum() ** 0.5 >= radii[index] + radii[other]
