"""Gradients named for what they are the gradient of: '∂ layer0.qkv (Gradient___ws_0)', found through the
call site of the forward graph."""
import numpy as np

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff
from workbench.analysis.gradient_names import GRADIENT_PREFIX, gradient_label, gradient_sources


def test_the_prefix_is_the_one_autodiff_writes():
    from workbench.transforms.autodiff import GRADIENT_PREFIX as WRITTEN

    assert GRADIENT_PREFIX == WRITTEN


def test_each_weight_gradient_of_the_transformer_names_the_variable_bound_at_the_forward_call():
    from real_programs import transformer

    ir, _ = transformer()
    sources = gradient_sources(ir)
    main = ir.main_graph
    calls = [op for op in main.ops if op.type == "call"]
    forward_call, grad_call = calls
    weights = forward_call.inputs[1:]  # bound to the forward graph's ws_0 .. ws_23
    assert [t.name for t in forward_call.called_graphs[0].inputs[1:]] == [f"ws_{i}" for i in range(24)]
    for index, (weight, gradient) in enumerate(zip(weights, grad_call.outputs)):
        assert gradient.name == f"Gradient___ws_{index}" and sources[gradient] is weight
        assert gradient_label(gradient, sources) == f"∂\u00a0{weight.name} (Gradient___ws_{index})"
    # the all-reduced gradient the optimiser applies, and inside the gradient graph, its output and the
    # gradient of a weight's copy to IPU 1, are the same variable's
    for op in main.ops:
        if op.type == "replicated_all_reduce":
            (reduced,) = op.outputs
            assert sources[reduced] is sources[op.inputs[0]]
            accumulate = next(o for o in main.ops if o.type == "accumulate_" and reduced in o.inputs)
            assert sources[reduced] is accumulate.inputs[0]
    grad_graph = grad_call.called_graphs[0]
    copy = next(t for t in grad_graph.device_tensors if t.name == "Gradient___layer4/ws_19_ipu1")
    assert gradient_label(copy, sources) == "∂\u00a0layer4.ff2 (Gradient___layer4/ws_19_ipu1)"
    assert sources[grad_graph.outputs[0]] is weights[0]
    # the gradient of an activation is named by its own name already
    gelu = next(t for t in grad_graph.device_tensors if t.name == "Gradient___layer3/feed_forward/gelu")
    assert gradient_label(gelu, sources) == gelu.name


def test_a_graph_called_twice_names_each_calls_weight_by_the_binding_of_its_activations():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((2, 3), np.float32), name="x")
        w1 = popxl.variable(np.full((3, 3), 0.5, np.float32), name="w1")
        w2 = popxl.variable(np.full((3, 3), 0.25, np.float32), name="w2")
        layer = ir.create_graph(lambda a, w: a @ w, x, w1)
        info = autodiff(layer)
        first = ops.call_with_info(layer, x, w1)
        second = ops.call_with_info(layer, first.parent_output(0), w2)
        seed = popxl.constant(np.ones((2, 3), np.float32), name="seed")
        # the second call's gradients first, as backpropagation runs
        grads_second = ops.call(info.graph, seed, inputs_dict=info.inputs_dict(second))
        grads_first = ops.call(info.graph, grads_second[0], inputs_dict=info.inputs_dict(first))
    sources = gradient_sources(ir)
    assert [t.name for t in layer.inputs] == ["a", "w"]
    assert sources[grads_first[1]] is w1 and sources[grads_second[1]] is w2
    assert sources[grads_first[0]] is x and sources[grads_second[0]] is first.parent_output(0)
    assert gradient_label(grads_second[1], sources) == f"∂\u00a0w2 ({grads_second[1].name})"
    # the gradient it names is that weight's: d(sum(seed * (x w1) w2)) / d w2 = (x w1)^T seed
    with ir.main_graph:
        stream = popxl.d2h_stream(grads_second[1].shape, grads_second[1].dtype, name="grad_w2")
        ops.host_store(stream, grads_second[1])
    with popxl.Session(ir, "ipu_model") as session:
        got = session.run()[stream]
    np.testing.assert_allclose(got, (np.ones((2, 3)) @ np.full((3, 3), 0.5)).T @ np.ones((2, 3)), rtol=1e-6)


def test_a_program_without_gradients_has_none():
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.ones(2, np.float32), name="w")
        ops.add(w, w)
    assert gradient_sources(ir) == {}
