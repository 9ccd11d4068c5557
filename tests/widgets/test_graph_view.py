"""GraphView: ops and tensors of one graph, call sites expanding inline, search, level of detail."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from widget_programs import call_tree_program, chain, click, trace
from workbench.export.node_content import op_lines
from workbench.widgets import GraphView
from support.programs import mlp_training
from workbench.widgets.dataflow import FULL_DETAIL_NODES, dataflow_picture
from workbench.widgets.figures import graph_figure
from workbench.widgets.figures.graph_figure import picture_layout
from workbench.widgets.style import KIND_COLORS


def small_program():
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2, 3], popxl.float32, name="x")
        x = ops.host_load(x_stream, name="x")
        w = popxl.variable(np.ones((3, 4), np.float32), name="w")
        copied = ops.ipu_copy(x @ w, 1)
        with popxl.ipu(1):
            two = popxl.constant(np.float32(2.0), name="two")
            y = copied * two
            y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
            ops.host_store(y_stream, y)
    return ir, x_stream, y_stream


def test_the_drawn_program_computes_x_at_w_times_two():
    ir, x_stream, y_stream = small_program()
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({x_stream: data})
    np.testing.assert_allclose(outputs[y_stream], data @ np.ones((3, 4), np.float32) * 2)


def test_every_op_and_tensor_is_a_node_with_its_kind_colour_and_details_on_hover():
    ir, _, _ = small_program()
    figure = GraphView(ir, live=False).figure
    assert [t.name for t in figure.data] == ["data flow", "arrowheads", "ops", "variables", "constants", "intermediates"]
    assert list(trace(figure, "ops").text) == [" · ".join(op_lines(op)[:2]) for op in ir.main_graph.ops]
    assert trace(figure, "ops").text[0].split()[0] == ir.main_graph.ops[0].type
    assert list(trace(figure, "variables").text) == ["w"]
    assert trace(figure, "variables").marker.color == KIND_COLORS["variable"]
    assert trace(figure, "constants").marker.color == KIND_COLORS["constant"]
    (w_hover,) = trace(figure, "variables").hovertext
    assert "float32[3,4]" in w_hover and "variable, IPU 0" in w_hover and "48 B" in w_hover
    (two_hover,) = trace(figure, "constants").hovertext
    assert "IPU 1" in two_hover
    copy_hover = trace(figure, "ops").hovertext[[op.type for op in ir.main_graph.ops].index("ipu_copy")]
    assert "<b>ipu_copy</b>" in copy_hover and "out[0]" in copy_hover and "float32[2,4]" in copy_hover


def test_ops_are_filled_by_ipu_and_graph_outputs_outlined():
    ir, _, _ = small_program()
    figure = GraphView(ir, live=False).figure
    colours = {label.split()[0]: colour for label, colour in zip(trace(figure, "ops").text, trace(figure, "ops").marker.color)}
    assert colours["matmul"] != colours["mul"]  # IPU 0 and IPU 1


def test_every_data_edge_points_down():
    ir, _, _ = small_program()
    picture = dataflow_picture(ir.main_graph)
    layout = picture_layout(picture)
    for tail, head, _ in picture.edges:
        assert layout.positions[tail][1] > layout.positions[head][1]


def test_a_call_site_expands_into_its_body_in_a_box_and_collapses_again():
    ir, graphs = call_tree_program(repeat_count=5)
    view = GraphView(ir, live=False)
    repeat = next(op for op in ir.main_graph.ops if op.type == "repeat")
    collapsed = len(view.picture.nodes)
    assert "▸ repeat ×5" in trace(view.figure, "call sites (click to expand)").text[0]
    view.expand(repeat)
    body_nodes = len(graphs["body"].ops) + len(graphs["body"].tensors)
    assert len(view.picture.nodes) == collapsed + body_nodes
    assert [a.text for a in view.figure.layout.annotations] == [f"repeat ×5: {graphs['body'].label}"]
    assert len(view.figure.layout.shapes) == 1
    (call,) = [n for n in view.picture.nodes.values() if n.frame and n.kind == "op" and n.item.type == "call"]
    view.expand(repeat, call.item)
    assert len(view.figure.layout.shapes) == 2
    view.collapse(repeat)
    assert len(view.picture.nodes) == collapsed and not view.figure.layout.shapes


def test_clicking_a_call_site_toggles_it_and_selects_the_op():
    ir, graphs = call_tree_program()
    view = GraphView(ir, live=False)
    conditional = next(op for op in ir.main_graph.ops if op.type == "conditional")
    key = view.picture.keys_of(conditional)[0]
    click(view.widget.children[-1], "call sites (click to expand)", key)
    assert view.selection.op is conditional
    assert [a.text for a in view.figure.layout.annotations] == [f"then: {graphs['then'].label}",
                                                                f"else: {graphs['other'].label}"]
    click(view.widget.children[-1], "call sites (click to expand)", key)
    assert not view.figure.layout.annotations


def test_expanding_something_that_is_not_a_call_site_of_the_graph_is_refused():
    ir, graphs = call_tree_program()
    view = GraphView(ir, live=False)
    inner_call = graphs["body"].ops[0]
    with pytest.raises(ValueError, match="not a call site of 'main'"):
        view.expand(inner_call)
    assert view.expanded == set()


def test_search_rings_matching_names_and_selects_a_single_match():
    ir, _, _ = small_program()
    view = GraphView(ir, live=False)
    matches = view.search("MUL")
    assert {view.picture.nodes[k].item.type for k in matches if view.picture.nodes[k].kind == "op"} == {
        "matmul", "mul"}
    assert len(trace(view.figure, "search matches").x) == len(matches)
    (only,) = view.search("ipu_copy")
    assert view.selection.op is view.picture.nodes[only].item
    assert list(trace(view.figure, "selected").customdata) == [only]
    assert view.search("") == [] and "search matches" not in [t.name for t in view.figure.data]


def test_a_2000_op_graph_ungrouped_is_drawn_with_ops_only_and_opens_on_its_top_layers():
    ir, _, _ = chain(2000)
    view = GraphView(ir, grouped=False, live=False)
    assert view.picture.detail == "ops"
    assert view.picture.op_count == 2000
    figure = view.figure
    assert [t.name for t in figure.data] == ["data flow", "arrowheads", "ops"]
    assert len(trace(figure, "ops").x) == 2000
    assert view.layout.depth == 2000 and view.layout.width == 1
    assert figure.layout.yaxis.range == (-15.5, 0.5)
    assert "ops only" in figure.layout.title.text


def test_auto_detail_draws_every_tensor_up_to_its_limit():
    def nodes(count):
        ir, _, _ = chain(count)
        return ir, len(dataflow_picture(ir.main_graph, detail="full").nodes)

    count = 2
    while nodes(count + 1)[1] <= FULL_DETAIL_NODES:
        count += 1
    ir, _ = nodes(count)
    assert dataflow_picture(ir.main_graph).detail == "full"
    ir, _ = nodes(count + 1)
    assert dataflow_picture(ir.main_graph).detail == "ops"
    assert dataflow_picture(ir.main_graph, detail="full").detail == "full"
    with pytest.raises(ValueError, match="detail must be"):
        dataflow_picture(ir.main_graph, detail="some")


def test_the_backward_graph_of_the_mlp_is_drawn_as_ops_only():
    ir, _ = mlp_training()
    backward = max(ir.graphs, key=lambda graph: len(graph.ops))
    assert len(backward.ops) > 25 and dataflow_picture(backward).detail == "ops"


@pytest.mark.parametrize("detail", ["ops", "full"])
def test_a_transpose_of_a_weight_sits_just_above_the_product_that_uses_it(detail):
    ir, _ = mlp_training()
    backward = max(ir.graphs, key=lambda graph: len(graph.ops))
    picture = dataflow_picture(backward, detail=detail)
    layers = picture_layout(picture).layers
    layer_of = {node.item: layers[key] for key, node in picture.nodes.items()}
    transposes = [op for op in backward.ops if op.type == "transpose"]
    assert len(transposes) == 7
    for transpose in transposes:
        result = transpose.outputs[0]
        (product,) = result.consumers
        if detail == "full":  # the result tensor between them
            assert layer_of[product] - layer_of[result] == 1 == layer_of[result] - layer_of[transpose]
        else:
            assert layer_of[product] - layer_of[transpose] == 1, transpose.name


def test_the_ops_level_joins_the_ops_that_hidden_tensors_connected():
    ir, _, _ = chain(5)
    picture = dataflow_picture(ir.main_graph, detail="ops")
    names = {key: node.item.name for key, node in picture.nodes.items()}
    assert [(names[t], names[h]) for t, h, _ in picture.edges] == [
        (ir.main_graph.ops[i].name, ir.main_graph.ops[i + 1].name) for i in range(4)]


def test_a_subgraph_shows_its_inputs_and_ringed_outputs():
    ir, graphs = call_tree_program()
    figure = graph_figure(dataflow_picture(graphs["body"]))
    assert list(trace(figure, "graph inputs").text) == [t.name for t in graphs["body"].inputs]
    outlines = dict(zip(trace(figure, "intermediates").text, trace(figure, "intermediates").marker.line.color))
    assert outlines[graphs["body"].outputs[0].name] == "#262626"


def test_an_expanded_call_is_entered_at_its_top_and_left_at_its_bottom_with_ops_only():
    from real_programs import transformer

    ir, _ = transformer(layers=2)
    forward = next(op for op in ir.main_graph.ops if op.type == "call" and op.called_graphs[0].name.endswith("forward"))
    view = GraphView(ir, detail="ops", live=False)
    view.expand(forward)
    picture = view.picture
    entering = [picture.nodes[head].item for _, head, kind in picture.edges if kind == "enter"]
    leaving = [picture.nodes[tail].item for tail, _, kind in picture.edges if kind == "exit"]
    body = forward.called_graphs[0]
    # the tokens enter at the first matmul; the 8 weights passed in draw no edge (variables are not drawn)
    (first,) = entering
    assert first.type == "matmul" and list(first.inputs) == list(body.inputs[:2])
    read_in_body = {tensor for op in body.ops for tensor in op.inputs}
    # the loss leaves for the host store from the mean, which no body op reads; the activations the gradient call
    # reads (all read in the body too) leave once, from the last body op that makes one of them
    saved, loss = leaving
    assert loss.type == "mean" and not set(loss.outputs) & read_in_body
    makers = [op for op in body.ops if set(op.outputs) & set(body.outputs[1:])]
    assert saved is makers[-1] and len(makers) > 10
    assert sum(kind == "exit" for _, _, kind in picture.edges) == 2


def test_a_click_on_a_call_of_a_large_graph_shows_that_graph_grouped_with_a_button_back():
    from real_programs import transformer

    ir, _ = transformer(layers=6)
    view = GraphView(ir, live=False)
    canvas = view.widget.children[-1]
    backward = next(op for op in ir.main_graph.ops if op.type == "call" and op.called_graphs[0].name.endswith("_grad"))
    gradient = backward.called_graphs[0]
    assert len(gradient.ops) >= 150  # inline, a wall of 359 ops
    key = view.picture.keys_of(backward)[0]
    assert "click to show it on its own, grouped" in view.picture.nodes[key].hover
    click(canvas, "call sites (click to expand)", key)
    assert view.graph is gradient and view.selection.graph is gradient and view.groups is not None
    assert view.expanded == set() and len(view.picture.nodes) < 30  # its groups, not its ops
    back = view.widget.children[1]
    assert back.description == "◂ back to main" and back.layout.display is None
    back.click()
    assert view.graph is ir.main_graph and back.layout.display == "none"
    with pytest.raises(ValueError, match="no graph to go back to"):
        view.back()


def test_a_click_on_a_call_of_a_small_graph_still_expands_it_in_place():
    ir, graphs = call_tree_program()
    view = GraphView(ir, live=False)
    call = next(op for op in ir.main_graph.ops if op.type == "repeat")
    key = view.picture.keys_of(call)[0]
    assert "click to expand it in place" in view.picture.nodes[key].hover
    click(view.widget.children[-1], "call sites (click to expand)", key)
    assert view.graph is ir.main_graph and view.expanded == {(call,)}
