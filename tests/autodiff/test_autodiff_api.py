"""popxl.transforms.autodiff: the gradient graph, its expected connections, the forward graph's extra
outputs, and the popxl tutorial pattern of calling both graphs from the main graph."""
import numpy as np
import pytest

import popxl
from popart import popart_exception
import popxl.ops as ops
from popxl.transforms import ExpectedConnection, ExpectedConnectionType, GradGraphInfo, autodiff

RNG = np.random.default_rng(0)


class Linear(popxl.Module):
    def __init__(self):
        self.W: popxl.Tensor = None
        self.b: popxl.Tensor = None

    def build(self, x: popxl.Tensor, out_features: int) -> popxl.Tensor:
        self.W = popxl.graph_input((x.shape[-1], out_features), popxl.float32, "W")
        self.b = popxl.graph_input((out_features,), popxl.float32, "b")
        return ops.tanh(x @ self.W + self.b)


def store(tensor: popxl.Tensor, name: str) -> popxl.DeviceToHostStream:
    stream = popxl.d2h_stream(tensor.shape, tensor.dtype, name)
    ops.host_store(stream, tensor)
    return stream


def test_linear_module_tutorial_pattern():
    x_data, w_data, b_data = (RNG.random(s).astype(np.float32) for s in ((2, 3), (3, 4), (4,)))
    seed_data = RNG.random((2, 4)).astype(np.float32)
    ir = popxl.Ir()
    main = ir.main_graph
    with main:
        x, W, b = popxl.variable(x_data, name="x"), popxl.variable(w_data, name="W"), popxl.variable(b_data, name="b")
        linear = Linear()
        fwd = ir.create_graph(linear, x, out_features=4)
        grad_info = popxl.transforms.autodiff(fwd)
        fwd_info = ops.call_with_info(fwd, x, inputs_dict={linear.W: W, linear.b: b})
        seed = popxl.constant(seed_data, name="seed")
        grad_call_info = ops.call_with_info(grad_info.graph, seed, inputs_dict=grad_info.inputs_dict(fwd_info))
        grad_map = grad_info.fwd_parent_ins_to_grad_parent_outs(fwd_info, grad_call_info)
        streams = {name: store(grad_map[t], name) for name, t in (("x", x), ("W", W), ("b", b))}
    assert [t.name for t in grad_map.values()] == ["Gradient___x", "Gradient___W", "Gradient___b"]
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    dy = seed_data * (1 - np.tanh(x_data @ w_data + b_data) ** 2)
    np.testing.assert_allclose(outputs[streams["W"]], x_data.T @ dy, rtol=1e-5)
    np.testing.assert_allclose(outputs[streams["b"]], dy.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(outputs[streams["x"]], dy @ w_data.T, rtol=1e-5)


def test_fwd_graph_ins_to_grad_parent_outs_maps_subgraph_inputs():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((2, 3), np.float32), name="x")
        linear = Linear()
        fwd = ir.create_graph(linear, x, out_features=2)
        info = autodiff(fwd)
        fwd_call = ops.call_with_info(fwd, x, inputs_dict={linear.W: popxl.variable(np.ones((3, 2), np.float32)),
                                                           linear.b: popxl.variable(np.ones(2, np.float32))})
        grad_call = ops.call_with_info(info.graph, popxl.constant(np.ones((2, 2), np.float32)),
                                       inputs_dict=info.inputs_dict(fwd_call))
        mapping = info.fwd_graph_ins_to_grad_parent_outs(grad_call)
    assert list(mapping) == list(fwd.inputs)
    assert all(t in ir.main_graph for t in mapping.values())
    assert [t.id for t in mapping.values()] == ["Gradient___x", "Gradient___W", "Gradient___b"]


def test_expected_connections_follow_grads_provided_and_required_order():
    ir = popxl.Ir()
    with ir.main_graph:
        def fn(a, b):
            return a * b, ops.exp(a)
        graph = ir.create_graph(fn, popxl.TensorSpec((3,), popxl.float32), popxl.TensorSpec((3,), popxl.float32))
        a, b = graph.inputs
        product, exponential = graph.outputs
        info = autodiff(graph, grads_provided=[exponential, product], grads_required=[b, a])
    kinds = [c.connection_type for c in info.expected_inputs]
    assert kinds[:2] == [ExpectedConnectionType.FwdGrad] * 2
    assert set(kinds[2:]) == {ExpectedConnectionType.Fwd}
    assert info.inputs[:2] == (exponential, product)
    assert set(info.inputs[2:]) == {a, b, exponential}  # exp's gradient reads its output
    assert info.outputs == (b, a)
    assert all(c.connection_type is ExpectedConnectionType.FwdGrad for c in info.expected_outputs)
    assert [t.name for t in info.graph.inputs[:2]] == ["Gradient___exp", "Gradient___mul"]
    assert [t.name for t in info.graph.outputs] == ["Gradient___b", "Gradient___a"]
    assert info.forward_graph is graph


def test_defaults_provide_every_output_and_require_every_input():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda a, b: a + b, popxl.TensorSpec((2,), popxl.float32),
                                popxl.TensorSpec((2,), popxl.float32))
        info = autodiff(graph)
    assert info.inputs == graph.outputs
    assert info.outputs == graph.inputs


def test_activations_become_forward_outputs_and_call_sites_gain_them():
    events = []
    ir = popxl.Ir()
    ir.events.subscribe(lambda kind, payload: events.append((kind, payload)))
    with ir.main_graph:
        graph = ir.create_graph(lambda a: ops.sin(ops.exp(a)), popxl.TensorSpec((2,), popxl.float32))
        x = popxl.variable(np.array([0.5, 1.0], np.float32), name="x")
        site = ops.call_with_info(graph, x)
        assert len(site.outputs) == 1
        info = autodiff(graph)
        exp_output = graph.ops[0].outputs[0]
        assert graph.outputs[1] is exp_output
        assert len(site.outputs) == 2 and site.outputs[1].spec == exp_output.spec
        assert ("op_changed", site.op) in events
        grads = ops.call(info.graph, popxl.constant(np.ones(2, np.float32)), inputs_dict=info.inputs_dict(site))
        stream = store(grads[0], "dx")
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()[stream]
    data = np.array([0.5, 1.0])
    np.testing.assert_allclose(result, np.cos(np.exp(data)) * np.exp(data), rtol=1e-6)


def test_inputs_already_in_the_forward_graph_are_not_added_as_outputs():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda a, b: a * b, popxl.TensorSpec((2,), popxl.float32),
                                popxl.TensorSpec((2,), popxl.float32))
        info = autodiff(graph)
    assert len(graph.outputs) == 1
    assert set(info.inputs[1:]) == set(graph.inputs)


def test_only_needed_activations_are_asked_for():
    """The gradient of ``a`` alone needs ``b``, not ``a`` itself."""
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda a, b: a * b, popxl.TensorSpec((2,), popxl.float32),
                                popxl.TensorSpec((2,), popxl.float32))
        a, b = graph.inputs
        info = autodiff(graph, grads_required=[a])
    assert info.inputs[1:] == (b,)
    assert [op.type for op in info.graph.ops] == ["mul"]


def test_gradients_of_a_tensor_used_several_times_are_summed():
    x = np.array([0.5, -1.5, 2.0])
    grads = run_gradients(lambda a: a * a + a, x)
    np.testing.assert_allclose(grads[0], 2 * x + 1)


def test_broadcast_gradients_are_summed_to_the_input_shape():
    a, b = RNG.random((2, 3)), RNG.random((3,))
    grads = run_gradients(lambda p, q: p * q, a, b)
    np.testing.assert_allclose(grads[1], a.sum(axis=0))
    np.testing.assert_allclose(grads[0], np.broadcast_to(b, (2, 3)))


def test_detach_blocks_the_gradient():
    x = np.array([1.0, 2.0])
    grads = run_gradients(lambda a: a * a.detach(), x)
    np.testing.assert_allclose(grads[0], x)


def test_unreached_and_integer_inputs_get_zero_gradients():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda a, b, i: ops.exp(a), popxl.TensorSpec((2,), popxl.float32),
                                popxl.TensorSpec((3,), popxl.float32), popxl.TensorSpec((2,), popxl.int32))
        info = autodiff(graph)
        grads = ops.call(info.graph, popxl.constant(np.ones(2, np.float32)),
                         inputs_dict=info.inputs_dict(ops.call_with_info(graph, *(popxl.constant(
                             np.ones(t.shape, t.dtype.as_numpy())) for t in graph.inputs))))
        streams = [store(g, f"g{i}") for i, g in enumerate(grads)]
    assert [g.spec for g in grads] == [t.spec for t in graph.inputs]
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    np.testing.assert_array_equal(outputs[streams[1]], np.zeros(3, np.float32))
    np.testing.assert_array_equal(outputs[streams[2]], np.zeros(2, np.int32))


def test_an_op_without_a_gradient_rule_on_the_path_is_an_error_and_changes_nothing():
    ir = popxl.Ir()
    with ir.main_graph:
        def fn(a):
            b = a * 2.0
            return ops.sin(ops.exp_(b))
        graph = ir.create_graph(fn, popxl.TensorSpec((2,), popxl.float32))
        site = ops.call_with_info(graph, popxl.constant(np.ones(2, np.float32)))
        graphs_before, outputs_before = ir.graphs, graph.outputs
        with pytest.raises(popart_exception, match=rf"^The graph {graph.id} contains a modifying op: exp_ op "):
            autodiff(graph)
    assert ir.graphs == graphs_before
    assert graph.outputs == outputs_before and len(site.outputs) == 1


def test_an_op_without_a_rule_off_the_path_is_fine():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda a, b: (ops.sin(a), ops.argmax(b)), popxl.TensorSpec((2,), popxl.float32),
                                popxl.TensorSpec((2,), popxl.float32))
        a, b = graph.inputs
        info = autodiff(graph, grads_provided=graph.outputs[:1], grads_required=[a])
    assert info.outputs == (a,)


def test_a_modifying_op_is_refused_even_off_the_gradients_path():
    """As in PopART: a graph that writes a tensor in place is not differentiated at all; views are fine."""
    ir = popxl.Ir()
    spec = popxl.TensorSpec((2,), popxl.float32)
    with ir.main_graph:
        graph = ir.create_graph(lambda a, b: (ops.sin(a), ops.exp_(b)), spec, spec)
        a, _ = graph.inputs
        with pytest.raises(popart_exception, match="modifying op: exp_ op .*Autodiff cannot be used on graphs "
                                                   "with inplace modifying ops"):
            autodiff(graph, grads_provided=graph.outputs[:1], grads_required=[a])
        viewing = ir.create_graph(lambda a, b: ops.sin(ops.concat_([a, b], axis=0)), spec, spec)
        assert len(autodiff(viewing).outputs) == 2


def test_argument_errors():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda a: ops.exp(a), popxl.TensorSpec((2,), popxl.float32))
        other = ir.create_graph(lambda a: ops.exp(a), popxl.TensorSpec((2,), popxl.float32))
        with pytest.raises(ValueError, match="main graph"):
            autodiff(ir.main_graph)
        with pytest.raises(ValueError, match="not a tensor of graph"):
            autodiff(graph, grads_required=other.inputs)
        with pytest.raises(TypeError, match="must be a popxl.Graph"):
            autodiff("graph")
        with pytest.raises(ValueError, match="more than once"):
            autodiff(graph, grads_provided=[graph.outputs[0], graph.outputs[0]])


def test_a_tensor_required_twice_gets_two_gradient_outputs():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda a: ops.exp(a), popxl.TensorSpec((2,), popxl.float32))
        info = autodiff(graph, grads_required=[graph.inputs[0], graph.inputs[0]])
        assert len(info.graph.outputs) == 2 and info.outputs == (graph.inputs[0], graph.inputs[0])
        x = popxl.variable(np.array([0.0, 1.0], np.float32))
        site = ops.call_with_info(graph, x)
        grads = ops.call(info.graph, popxl.constant(np.ones(2, np.float32)), inputs_dict=info.inputs_dict(site))
        streams = [popxl.d2h_stream((2,), popxl.float32, f"g{i}") for i in range(2)]
        for stream, grad in zip(streams, grads):
            ops.host_store(stream, grad)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()
    for stream in streams:
        np.testing.assert_allclose(result[stream], np.exp([0.0, 1.0]), rtol=1e-6)


def test_info_objects_are_not_constructible_and_describe_themselves():
    with pytest.raises(TypeError):
        GradGraphInfo()
    with pytest.raises(TypeError):
        ExpectedConnection()
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda a: ops.exp(a), popxl.TensorSpec((2,), popxl.float32))
        info = autodiff(graph)
    text = repr(info)
    assert text.startswith(f"GradGraphInfo[\n  graph={info.graph.id}\n  expected_inputs=[\n")
    assert "(ExpectedConnectionType.FwdGrad, Tensor[" in text and text.endswith("  ]\n]")
    assert repr(info.expected_outputs[0]) == f"(ExpectedConnectionType.FwdGrad, {graph.inputs[0]!r})"


def test_inputs_dict_refuses_a_call_of_another_graph():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda a: ops.exp(a), popxl.TensorSpec((2,), popxl.float32))
        other = ir.create_graph(lambda a: ops.sin(a), popxl.TensorSpec((2,), popxl.float32))
        info = autodiff(graph)
        site = ops.call_with_info(other, popxl.constant(np.ones(2, np.float32)))
        with pytest.raises(TypeError, match="not 'exp'|not"):
            info.inputs_dict(site)


def test_nested_calls_are_differentiated_recursively_and_can_be_reused():
    ir = popxl.Ir()
    with ir.main_graph:
        inner = ir.create_graph(lambda a: ops.sin(a) * a, popxl.TensorSpec((3,), popxl.float32))
        outer = ir.create_graph(lambda a: ops.exp(ops.call(inner, a)[0]), popxl.TensorSpec((3,), popxl.float32))
        infos = autodiff(outer, return_all_grad_graphs=True)
        assert set(infos) == {outer, inner}
        assert infos[inner].forward_graph is inner
        # outer now also returns activations: provide the gradient of its own output only
        again = autodiff(outer, grads_provided=outer.outputs[:1], called_graphs_grad_info={inner: infos[inner]})
        assert sum(g.name.startswith(inner.name + "_grad") for g in ir.graphs) == 1  # reused, not rebuilt
        x = np.array([0.1, 0.7, -1.2], np.float32)
        site = ops.call_with_info(outer, popxl.constant(x))
        grads = ops.call(again.graph, popxl.constant(np.ones(3, np.float32)), inputs_dict=again.inputs_dict(site))
        stream = store(grads[0], "dx")
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()[stream]
    inner_value = np.sin(x) * x
    np.testing.assert_allclose(result, np.exp(inner_value) * (np.cos(x) * x + np.sin(x)), rtol=1e-5)


def test_a_graph_called_by_repeat_cannot_gain_outputs():
    ir = popxl.Ir()
    with ir.main_graph:
        body = ir.create_graph(lambda a: ops.sin(ops.exp(a)), popxl.TensorSpec((2,), popxl.float32))
        ops.repeat(body, 3, popxl.constant(np.ones(2, np.float32)))
        graphs_before = ir.graphs
        with pytest.raises(NotImplementedError, match="repeat cannot gain outputs"):
            autodiff(body)
    assert ir.graphs == graphs_before and len(body.outputs) == 1


def run_gradients(fn, *arrays):
    """The gradients of ``sum(fn(*arrays))`` by every input, through autodiff on the IPU model."""
    ir = popxl.Ir()
    with ir.main_graph:
        specs = [popxl.TensorSpec(a.shape, popxl.float64) for a in arrays]
        graph = ir.create_graph(fn, *specs)
        info = autodiff(graph)
        site = ops.call_with_info(graph, *(popxl.constant(a, popxl.float64) for a in arrays))
        seed = popxl.constant(np.ones(graph.outputs[0].shape), popxl.float64)
        grads = ops.call(info.graph, seed, inputs_dict=info.inputs_dict(site))
        streams = [store(g, f"g{i}") for i, g in enumerate(grads)]
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    return [outputs[s] for s in streams]


def test_a_failure_after_a_called_graph_was_differentiated_undoes_its_new_outputs():
    ir = popxl.Ir()
    with ir.main_graph:
        spec = popxl.TensorSpec((2,), popxl.float32)
        inner = ir.create_graph(lambda a: ops.sin(ops.exp(a)), spec)

        def outer_fn(a):
            return ops.call(inner, ops.exp_(a * 2.0))[0]
        outer = ir.create_graph(outer_fn, spec)
        call_op = next(op for op in outer.ops if op.type == "call")
        graphs_before = ir.graphs
        with pytest.raises(popart_exception, match="modifying op: exp_"):
            autodiff(outer)
    assert ir.graphs == graphs_before
    assert len(inner.outputs) == 1 and len(call_op.outputs) == 1 and len(outer.outputs) == 1
    assert not any(t.meta for t in inner.tensors)


def test_an_open_in_sequence_block_does_not_order_the_gradient_graph():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        graph = ir.create_graph(lambda a: ops.sin(a) * a, popxl.TensorSpec((2,), popxl.float32))
        first = ops.exp(popxl.constant(np.ones(2, np.float32)))
        info = autodiff(graph)
        second = ops.sin(first)
    assert all(not op.after for op in info.graph.ops)
    assert second.producer.after == (first.producer,)


def test_popxl_module_paths():
    import sys
    from popxl.transforms.autodiff import ExpectedConnection as connection, ExpectedConnectionType as kind

    assert (connection, kind) == (ExpectedConnection, ExpectedConnectionType)
    assert popxl.transforms.autodiff is autodiff
    assert sys.modules["popxl.transforms.autodiff"].GradGraphInfo is GradGraphInfo
    assert [k.value for k in ExpectedConnectionType] == ["Fwd", "FwdGrad"]
