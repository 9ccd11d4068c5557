"""The Graph tab's picture and the stepper name a gradient by what it is the gradient of ('∂ W0'), keeping its
own name ('Gradient___ws_0') in the hover, in brackets, and for the search."""
import popxl
from support.programs import mlp_training
from widget_programs import trace
from workbench.widgets import GraphView
from workbench.widgets.dataflow import dataflow_picture
from workbench.widgets.stepper_view import SessionStepperView
from workbench.widgets.style import fitted_words

MARK = "∂\u00a0"


def gradient_graph(ir):
    return next(graph for graph in ir.graphs if graph.name.endswith("forward_grad"))


def test_the_gradient_graphs_picture_labels_each_gradient_by_what_it_is_the_gradient_of():
    ir, _ = mlp_training(replicas=1, steps=2)
    figure = GraphView(ir, gradient_graph(ir), live=False).figure
    drawn = [label for t in figure.data if t.text is not None and not isinstance(t.text, str) for label in t.text]
    assert {f"{MARK}W0", f"{MARK}b3", f"{MARK}mean"} <= set(drawn)
    assert not [label for label in drawn if "Gradient___" in label]


def test_a_gradients_hover_says_both_names_and_the_search_finds_it_by_either():
    ir, _ = mlp_training(replicas=1, steps=2)
    picture = dataflow_picture(gradient_graph(ir), detail="full")
    (key,) = [key for key, node in picture.nodes.items() if node.kind == "tensor" and node.item.name == "Gradient___ws_0"]
    assert picture.nodes[key].label == f"{MARK}W0"
    assert picture.nodes[key].hover.startswith(f"<b>{MARK}W0</b> (Gradient___ws_0)<br>")
    made_by = picture.nodes[key].item.producer
    (op_key,) = picture.keys_of(made_by)
    assert f"out[0] {MARK}W0 (Gradient___ws_0): " in picture.nodes[op_key].hover
    relu = next(node for node in picture.nodes.values() if node.kind == "tensor" and node.item.name == "Gradient___relu")
    assert relu.label == f"{MARK}relu" and relu.hover.startswith(f"<b>{MARK}relu</b> (Gradient___relu)")
    assert picture.find("Gradient___ws_0") == picture.find("∂ W0") == picture.find(f"{MARK}w0") == [key]


def test_the_graph_views_search_box_finds_a_gradient_by_the_name_it_is_labelled_with():
    ir, _ = mlp_training(replicas=1, steps=2)
    view = GraphView(ir, gradient_graph(ir), live=False)
    view.figure
    (key,) = view.search("∂ b2")
    assert view.picture.nodes[key].item.name == "Gradient___ws_5"
    assert view.selection.tensor is view.picture.nodes[key].item
    assert list(trace(view.build_figure(), "search matches").customdata) == [key]


def test_the_stepper_names_the_gradients_the_next_op_reads_and_makes_and_the_other_live_ones():
    ir, inputs = mlp_training(replicas=1, steps=2)
    weight_gradient = next(t for t in gradient_graph(ir).device_tensors if t.name == "Gradient___ws_0")
    with popxl.Session(ir, "ipu_model") as session:
        view = SessionStepperView(session, inputs, live=False)
        view.run_to(weight_gradient.producer)
        assert view.stop.op is weight_gradient.producer
        html = view.values_html()
        assert f"<b>made by the next op</b>: {MARK}W0 (Gradient___ws_0)</p>" in html
        assert {row.name for row in view.rows if row.read_next} == {"transpose_7", f"{MARK}add (Gradient___add)"}
        others = html[html.index("<details>"):]
        assert f"{MARK}b0 (Gradient___ws_1)" in others and "Gradient___ws_1," not in others
        view.close()


def test_the_stepper_filter_finds_a_gradient_by_either_name():
    ir, inputs = mlp_training(replicas=1, steps=2)
    weight_gradient = next(t for t in gradient_graph(ir).device_tensors if t.name == "Gradient___ws_0")
    with popxl.Session(ir, "ipu_model") as session:
        view = SessionStepperView(session, inputs, live=False)
        view.run_to(weight_gradient.producer)
        for typed in ("gradient___ws_3", "∂ b1", f"{MARK}B1"):
            view.filter(typed)
            html = view.values_html()
            assert "1 other live tensor matching" in html and f"{MARK}b1 (Gradient___ws_3)" in html
        view.close()


def test_a_caption_is_cut_after_a_word_only_where_that_keeps_eight_characters_or_all_the_room_allows():
    # the gradient graph's shorter labels leave its ops less room: 'sum axis=(0,)' had been cut to 'sum…'
    assert fitted_words("sum axis=(0,)", 10) == "sum axis=…"
    assert fitted_words("sum axis=(0,)", 6) == "sum…"
    assert fitted_words("transpose (1,0,2)", 12) == "transpose…"
