"""The short and long names the views give a gradient: '∂ W0' for a label, '∂ W0 (Gradient___ws_0)' for a hover
or a table, and the search that finds it by either."""
from support.programs import mlp_training
from workbench.analysis.gradient_names import gradient_short_name, gradient_sources, gradient_title, name_matches


def test_a_weights_gradient_is_short_named_by_the_weight_and_an_activations_by_its_own_name_after_the_mark():
    ir, _ = mlp_training(replicas=1, steps=2)
    grad_graph = next(graph for graph in ir.graphs if graph.name.endswith("forward_grad"))
    sources = gradient_sources(ir)
    by_name = {tensor.name: tensor for tensor in grad_graph.device_tensors}
    assert gradient_short_name(by_name["Gradient___ws_2"], sources) == "∂\u00a0W1"
    assert gradient_title(by_name["Gradient___ws_2"], sources) == "∂\u00a0W1 (Gradient___ws_2)"
    assert gradient_short_name(by_name["Gradient___relu_1"], sources) == "∂\u00a0relu_1"
    assert gradient_title(by_name["Gradient___relu_1"], sources) == "∂\u00a0relu_1 (Gradient___relu_1)"
    assert gradient_short_name(by_name["relu_1"], sources) == gradient_title(by_name["relu_1"], sources) == "relu_1"


def test_the_gradients_of_chosen_graphs_alone_are_those_of_the_whole_ir_in_them():
    ir, _ = mlp_training(replicas=1, steps=2)
    grad_graph = next(graph for graph in ir.graphs if graph.name.endswith("forward_grad"))
    everywhere = gradient_sources(ir)
    chosen = gradient_sources(ir, [grad_graph])
    assert chosen and chosen == {t: source for t, source in everywhere.items() if t.graph is grad_graph}
    assert len(chosen) < len(everywhere)  # the step graph's all-reduced gradients are left out


def test_a_typed_space_finds_the_marks_no_break_space():
    assert name_matches("∂ w0", "∂\u00a0W0 (Gradient___ws_0)")
    assert name_matches("∂\u00a0w0", "∂ W0")
    assert name_matches("gradient___ws_0", "∂\u00a0W0 (Gradient___ws_0)")
    assert not name_matches("∂ w1", "∂\u00a0W0 (Gradient___ws_0)")
