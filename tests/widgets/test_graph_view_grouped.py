"""GraphView of a large graph: it opens as the Model tab's groups (name scopes, runs of scopes), each a node
with its op count whose edges are its ops', opens and closes in place on click, and stays small on the comm."""
import json

import pytest

from real_programs import wide_program
from widget_programs import chain, click, trace
from workbench.export.grouping import group_graph
from workbench.widgets import GraphView
from workbench.export.opening import SCREEN_ROWS
from workbench.widgets.dataflow import GROUPED_OPS
from workbench.widgets.figure_canvas import figure_json
from workbench.widgets.figures.graph_figure import GROUP_TRACE, OPENED_TRACE, layer_pixels, picture_layout


@pytest.fixture(scope="module")
def wide():
    return wide_program()


def test_a_10000_op_graph_opens_as_a_few_named_groups_with_their_op_counts(wide):
    view = GraphView(wide, live=False)
    assert view.groups is not None and view.picture.op_count == 3
    groups = [node.label for node in view.picture.nodes.values() if node.kind == "group"]
    assert groups == [f"▸ block{first} … block{first + 19} (2000 ops)" for first in range(0, 100, 20)]
    # each box says what it holds, its commonest op types counted as the Model tab's boxes count them
    assert list(trace(view.figure, GROUP_TRACE).text) == [f"{group}: 990 matmul · 990 relu · 20 add" for group in groups]
    assert list(trace(view.figure, "ops").text) == ["init", "host_load x", "host_store y"]  # with the stream's tensor
    assert "grouped by name scope" in view.figure.layout.title.text
    names = {key: node.label for key, node in view.picture.nodes.items()}
    assert [(names[tail], names[head]) for tail, head, _ in view.picture.edges] == [  # the chain between them
        ("init", "host_load"), ("host_load", groups[0]), *zip(groups, groups[1:]), (groups[-1], "host_store")]
    hover = trace(view.figure, GROUP_TRACE).hovertext[0]
    assert "2000 ops" in hover and "matmul" in hover and "relu" in hover


def test_the_grouped_figure_is_small(wide):
    """A few nodes laid out and drawn (tests/benchmarks/bench_views_real.py times it), not 10,003."""
    view = GraphView(wide, live=False)
    assert len(view.picture.nodes) <= 30 and len(view.layout.positions) == len(view.picture.nodes)
    assert len(json.dumps(figure_json(view.figure))) < 50_000


def test_clicking_a_group_opens_it_in_a_box_and_clicking_its_title_closes_it(wide):
    view = GraphView(wide, live=False)
    canvas = view.widget.children[-1]
    first = next(key for key, node in view.picture.nodes.items() if node.kind == "group")
    click(canvas, GROUP_TRACE, first)
    assert [a.text for a in view.figure.layout.annotations] == ["▾ block0 … block19 (2000 ops)"]
    inner = [node.label for node in view.picture.nodes.values() if node.kind == "group"]
    assert inner[:2] == ["▸ block0 (99 ops)", "▸ block1 (101 ops)"] and len(inner) == 20 + 4
    block = next(key for key, node in view.picture.nodes.items() if node.label == "▸ block0 (99 ops)")
    click(view._canvas, GROUP_TRACE, block)
    assert len(view.figure.layout.shapes) == 2 and view.picture.op_count == 3
    layout = picture_layout(view.picture)
    for tail, head, _ in view.picture.edges:  # still every edge downwards
        assert layout.positions[tail][1] > layout.positions[head][1]
    click(view._canvas, OPENED_TRACE, first)
    assert view.opened == set() and not view.figure.layout.shapes


def test_an_op_inside_a_closed_group_is_found_and_selected_through_its_group(wide):
    view = GraphView(wide, live=False)
    op = next(op for op in wide.main_graph.ops if op.name == "block42/relu.4204")
    matches = view.search("relu.4204")
    assert matches == view.picture.keys_of(op) == ["group:" + view.groups.children[2].id]
    view.selection.op = op
    assert list(trace(view.figure, "selected").customdata) == matches


def test_grouping_follows_the_size_of_the_graph_unless_asked():
    small, _, _ = chain(SCREEN_ROWS - 2)  # with its input and output, one screen of layers
    large, _, _ = chain(GROUPED_OPS)
    tall, _, _ = chain(GROUPED_OPS - 2)  # taller than a screen op by op, a few runs of ops grouped
    assert GraphView(small, live=False).groups is None
    assert GraphView(tall, live=False).groups is not None
    assert GraphView(large, live=False).groups is not None
    assert GraphView(large, grouped=False, live=False).picture.op_count == GROUPED_OPS
    assert GraphView(small, grouped=True, live=False).groups is not None
    with pytest.raises(ValueError, match="grouped must be"):
        GraphView(small, grouped="yes", live=False)
    view = GraphView(small, live=False)
    with pytest.raises(ValueError, match="drawn ungrouped"):
        view.open_group("main_graph#1")
    view = GraphView(large, live=False)
    with pytest.raises(ValueError, match="has no group 'nowhere'"):
        view.open_group("nowhere")
    assert view.opened == set()


def test_the_titles_of_groups_open_one_in_another_stand_one_above_the_other(wide):
    view = GraphView(wide, live=False)
    run = view.groups.children[0]
    view.open_group(run.children[0].id)  # its run opens with it
    assert view.opened == {run.id, run.children[0].id}
    outer, inner = view.figure.layout.annotations
    assert (outer.text, inner.text) == ("▾ block0 … block19 (2000 ops)", "▾ block0 (99 ops)")
    assert (outer.y - inner.y) * layer_pixels(view.picture) >= 12 > 0  # a 10-px title's height apart
    assert view.figure.layout.height == layer_pixels(view.picture) * 16 + 130


def test_expanding_a_call_site_inside_a_closed_group_opens_the_groups_holding_it():
    import popxl
    import popxl.ops as ops

    ir = popxl.Ir()
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        body = ir.create_graph(lambda t: ops.relu(t), x.spec)
        for block in range(12):
            with popxl.name_scope(f"stage{block}"):
                for _ in range(45):
                    x = ops.tanh(x)
                x = ops.call(body, x)[0]
    view = GraphView(ir, grouped=True, live=False)
    call = next(op for op in ir.main_graph.ops if op.type == "call" and op.name.startswith("stage7/"))
    assert view.picture.keys_of(call)[0].startswith("group:")
    view.expand(call)
    (key,) = view.picture.keys_of(call)
    assert not key.startswith("group:") and view.picture.nodes[key].expanded
    assert any(box.label.startswith("▾ stage7") for box in view.picture.boxes)
    assert any(box.label == f"call: {body.label}" for box in view.picture.boxes)


def test_a_group_opened_before_the_tab_is_looked_at_is_drawn_open(wide):
    run = group_graph(wide.main_graph).children[1]
    view = GraphView(wide, live=False, defer=True)
    view.open_group(run.id)
    assert view.opened == {run.id}
    assert [a.text for a in view.figure.layout.annotations] == ["▾ block20 … block39 (2000 ops)"]


def test_a_constant_read_only_inside_closed_groups_is_left_out_until_an_op_reading_it_is_drawn():
    from real_programs import long_chain

    view = GraphView(long_chain(), detail="full", live=False)
    names = lambda: {node.label for node in view.picture.nodes.values() if node.kind == "tensor"}  # noqa: E731
    assert "one" not in names() and view.picture.op_count == 0
    leaf = next(group for group in view.groups.walk() if not group.children)
    view.open_group(leaf.id)
    assert "one" in names()
    (one,) = [key for key, node in view.picture.nodes.items() if node.label == "one"]
    readers = {view.picture.nodes[head].kind for tail, head, _ in view.picture.edges if tail == one}
    assert "op" in readers


def test_real_models_of_a_few_hundred_ops_open_grouped_on_one_screen():
    """ResNet-50 (181 ops) opened as 172 layers of bare op types, 16 to a screen, and the transformer's backward
    graph (359 ops) as 126 layers of unlabelled boxes: both open grouped, as a picture under a screen tall."""
    from real_programs import resnet50_session, transformer

    resnet = resnet50_session()._workbench_source()
    view = GraphView(resnet, live=False)
    labels = list(trace(view.figure, GROUP_TRACE).text)
    assert [label.split(" (")[0] for label in labels] == ["▸ res_conv1", "▸ res2", "▸ res3", "▸ res4", "▸ res5", "▸ pred"]
    assert labels[1] == "▸ res2 (32 ops): 10 conv · 10 batch_norm_inference · 9 relu"  # whole, not cut
    assert view.figure.layout.height <= 900
    ir, _ = transformer()
    backward = next(graph for graph in ir.graphs if graph.name.endswith("_grad"))
    view = GraphView(ir, graph=backward, live=False)
    assert [node.label.split(" (")[0] for node in view.picture.nodes.values() if node.kind == "group"] == [
        "▸ IPU 1", "▸ IPU 0"]
    assert view.figure.layout.height <= 900 and "grouped by name scope" in view.figure.layout.title.text


def test_no_node_lies_inside_the_box_of_an_opened_group_it_is_not_in():
    """A box is drawn round its members and their labels: the layout moves the nodes beside an opened group (the
    backward graph's gradient outputs, the forward graph's weight copies) out of its outline."""
    from real_programs import transformer
    from workbench.widgets.figures.picture_frames import frame_plan

    ir, _ = transformer()
    backward = next(graph for graph in ir.graphs if graph.name.endswith("_grad"))
    forward = next(graph for graph in ir.graphs if graph.name.endswith("forward"))
    checked = 0
    for graph, path in ((backward, ("IPU 0", "layer2")), (backward, ("IPU 1", "layer3")), (forward, ("IPU 1", "layer3"))):
        view = GraphView(ir, graph=graph, grouped=True, live=False)
        group = view.groups
        for label in path:
            group = next(child for child in group.children if child.label == label)
            view.open_group(group.id)
            picture, positions = view.picture, view.layout.positions
            for box, (x0, x1, y0, y1) in frame_plan(picture, view.layout, view.width).frames:
                members = set(box.members)
                strangers = [picture.nodes[key].label for key, (x, y) in positions.items()
                             if key not in members and x0 < x < x1 and y0 < y < y1]
                assert strangers == [], (box.label, strangers)
                checked += 1
    assert checked == 9


def test_a_group_says_what_it_holds_after_its_whole_name_or_its_name_alone(wide):
    """Beside a group its name comes whole before its contents are written: with room for the name and a few
    characters more, the contents follow, on a second line where they fit it whole, else cut where they must be;
    with less, the name alone (they are in the hover), without its count where it must."""
    from workbench.widgets.figures.graph_figure import drawn_label

    group = next(node for node in GraphView(wide, live=False).picture.nodes.values() if node.kind == "group")
    name, caption = group.label, group.caption
    assert caption == f"{name}: 990 matmul · 990 relu · 20 add"
    assert drawn_label(group, len(caption)) == caption
    assert drawn_label(group, len(name) + 14) == f"{name}:\n990 matmul · 990 relu · 20 add"
    assert drawn_label(group, len(name)) == name
    assert drawn_label(group, len(name) - 4) == "▸ block0 … block19"
