"""A grouped picture with groups open is layered frame by frame: each opened group's frame begins below every node
outside it that feeds it and ends above every node outside it that it feeds, so that frames stack one under
another rather than interleave; where the frames feed one another in a circle there is no such layering."""
import pytest

from picture_cases import PICTURES
from workbench.widgets import GraphView
from workbench.widgets.dataflow import DataflowPicture, PictureBox, PictureNode
from workbench.widgets.figures.graph_figure import picture_layout
from workbench.widgets.figures.picture_nesting import box_parents, nested_layers


@pytest.fixture(scope="module", params=["transformer backward graph, every one of its 44 groups open",
                                        "transformer backward graph grouped, a layer open in its IPU's group",
                                        "ResNet-50 grouped, a stage and a block in it open"])
def picture(request):
    (ir, graph), detail, *openers = PICTURES[request.param]()
    view = GraphView(ir, graph=graph, detail=detail, live=False)
    for opens in openers:
        opens(view)
    return view.picture


def test_each_frame_begins_below_what_feeds_it_and_ends_above_what_it_feeds(picture):
    layers = nested_layers(picture, [(tail, head) for tail, head, _ in picture.edges])
    assert layers is not None and set(layers) == set(picture.nodes)
    for tail, head, _ in picture.edges:
        assert layers[tail] < layers[head]
    for box in picture.boxes:
        members = set(box.members)
        top, bottom = min(layers[key] for key in members), max(layers[key] for key in members)
        for tail, head, _ in picture.edges:
            if head in members and tail not in members:
                assert layers[tail] < top, f"{tail} feeds {box.label} from below its top"
            if tail in members and head not in members:
                assert layers[head] > bottom, f"{box.label} feeds {head} from above its bottom"


def test_the_frames_of_the_backward_graph_with_every_group_open_stack_by_layer():
    """Its six layers' frames take six bands of layers, none overlapping another: the backward pass of one
    layer runs after the next layer's, not beside it."""
    (ir, graph), detail, *openers = PICTURES["transformer backward graph, every one of its 44 groups open"]()
    view = GraphView(ir, graph=graph, detail=detail, live=False)
    for opens in openers:
        opens(view)
    picture = view.picture
    layers = nested_layers(picture, [(tail, head) for tail, head, _ in picture.edges])
    spans = sorted((min(layers[key] for key in box.members), max(layers[key] for key in box.members))
                   for box in picture.boxes if box.label.startswith("▾ layer"))
    assert len(spans) == 6
    assert all(upper[1] < lower[0] for upper, lower in zip(spans, spans[1:]))


def node(key: str) -> PictureNode:
    return PictureNode(key, "op", "op", key, None)


def test_frames_that_feed_one_another_in_a_circle_have_no_nested_layering():
    picture = DataflowPicture(None, "ops", {key: node(key) for key in "abcd"},
                              [("a", "c", "data"), ("c", "b", "data"), ("b", "d", "data")],
                              [PictureBox((), "first", ["a", "b"], key="group:1"), PictureBox((), "second", ["c", "d"], key="group:2")])
    assert box_parents(picture) == [None, None]  # side by side, neither inside the other
    assert nested_layers(picture, [(tail, head) for tail, head, _ in picture.edges]) is None
    layout = picture_layout(picture)  # laid out all the same, as a picture of interleaved frames
    assert all(layout.positions[tail][1] > layout.positions[head][1] for tail, head, _ in picture.edges)
    (x_a, _), (x_c, _) = layout.positions["a"], layout.positions["c"]
    assert x_a != x_c  # the two frames side by side
    picture.edges = [("a", "b", "data"), ("b", "c", "data"), ("c", "d", "data")]
    assert nested_layers(picture, [(tail, head) for tail, head, _ in picture.edges]) == {"a": 0, "b": 1, "c": 2, "d": 3}
