"""Gradients through call, repeat and conditional against finite differences in float64, and the
limits of differentiating loops and branches."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popxl
from popart import popart_exception
import popxl.ops as ops
from popxl.transforms import autodiff
from gradcheck import check_gradients
from strategies import SETTINGS, nonscalar_shapes, seeds, values


def subgraph(fn, *args):
    return popxl.gcg().ir.create_graph(fn, *args)


# ----- call -----
@settings(**SETTINGS)
@given(shape=nonscalar_shapes, seed=seeds)
def test_call(shape, seed):
    def fn(x, w):
        return ops.call(subgraph(lambda a, b: ops.tanh(a * b) + ops.exp(a), x, w), x, w)[0]
    check_gradients(fn, values(seed, shape), values(seed + 1, shape))


def test_nested_calls_and_a_graph_called_from_two_places():
    def fn(x, w):
        inner = subgraph(lambda a, b: ops.exp(a) * b, x, w)
        outer = subgraph(lambda a, b: ops.call(inner, ops.sin(a), b)[0] * a, x, w)
        return ops.call(outer, x, w)[0] + ops.call(inner, w, x)[0]
    check_gradients(fn, values(1, (2, 3)), values(2, (2, 3)))


def test_call_with_an_input_passed_twice_and_an_unused_output():
    def fn(x):
        graph = subgraph(lambda a, b: (a * b, ops.exp(b)), x, x)
        return ops.call(graph, x, x)[0]
    check_gradients(fn, values(1, (4,)))


def test_call_of_a_graph_returning_its_input_and_an_integer():
    def fn(x, i):
        graph = subgraph(lambda a, n: (a, n, ops.sin(a)), x, i)
        y, _, z = ops.call(graph, x, i)
        return y * z
    check_gradients(fn, values(1, (3,)), np.array([1, 2, 3], np.int32))


# ----- repeat -----
@settings(**SETTINGS)
@given(shape=nonscalar_shapes, count=st.integers(1, 6), seed=seeds)
def test_repeat_with_carried_state_and_invariants(shape, count, seed):
    def fn(x, w, b):
        body = subgraph(lambda s, m, c: ops.tanh(s * m + c) + s * 0.5, x, w, b)
        return ops.repeat(body, count, x, w, b)[0]
    check_gradients(fn, values(seed, shape, -1, 1), values(seed + 1, shape, -1, 1), values(seed + 2, shape[-1:], -1, 1))


def test_repeat_with_two_carried_tensors_and_an_integer_counter():
    def fn(x, y):
        def step(s, t, n):
            return s * t + 0.1, ops.sin(s) + t, n + 1
        body = subgraph(step, x, y, popxl.constant(np.int32(0)))
        s, t, _ = ops.repeat(body, 3, x, y, popxl.constant(np.int32(0)))
        return s * t
    check_gradients(fn, values(1, (2, 2), -1, 1), values(2, (2, 2), -1, 1))


def test_repeat_of_a_body_that_calls_a_graph_many_times():
    def fn(x, w):
        layer = subgraph(lambda a, m: ops.tanh(a @ m), x, w)
        body = subgraph(lambda a, m: ops.call(layer, a, m)[0], x, w)
        return ops.repeat(body, 40, x, w)[0]
    check_gradients(fn, values(1, (2, 3), -1, 1), values(2, (3, 3), -0.6, 0.6))


def test_repeat_gradient_leaves_the_forward_graphs_unchanged():
    ir = popxl.Ir()
    with ir.main_graph:
        spec = popxl.TensorSpec((3,), popxl.float32)
        body = ir.create_graph(lambda s: ops.sin(s) * s, spec)
        graph = ir.create_graph(lambda x: ops.repeat(body, 5, x)[0], spec)
        body_text, graph_text = str(body), str(graph)
        info = autodiff(graph)
    assert (str(body), str(graph)) == (body_text, graph_text)
    assert [c.connection_type.value for c in info.expected_inputs] == ["FwdGrad", "Fwd"]


def test_repeat_of_a_body_with_host_io_cannot_be_differentiated():
    ir = popxl.Ir()
    with ir.main_graph:
        spec = popxl.TensorSpec((3,), popxl.float32)
        stream = popxl.d2h_stream((3,), popxl.float32, "out")

        def step(s):
            ops.host_store(stream, s)
            return ops.sin(s)
        body = ir.create_graph(step, spec)
        graph = ir.create_graph(lambda x: ops.repeat(body, 2, x)[0], spec)
        graphs_before = ir.graphs
        with pytest.raises(NotImplementedError, match="host_store"):
            autodiff(graph)
    assert ir.graphs == graphs_before


def test_repeat_of_a_body_writing_a_by_reference_input_cannot_be_differentiated():
    ir = popxl.Ir()
    with ir.main_graph:
        def step(s, counter: popxl.TensorByRef):
            ops.var_updates.accumulate_(counter, popxl.constant(np.ones(3, np.float32)))
            return ops.sin(s)
        spec = popxl.TensorSpec((3,), popxl.float32)
        body = ir.create_graph(step, spec, spec)
        graph = ir.create_graph(lambda x, c: ops.repeat(body, 2, x, c)[0], spec, spec)
        with pytest.raises(popart_exception, match=f"The graph {graph.id} contains a modifying op: repeat op"):
            autodiff(graph, grads_required=graph.inputs[:1])


# ----- conditional -----
@pytest.mark.parametrize("taken", [True, False])
def test_conditional_gradient_follows_the_branch_that_ran(taken):
    def fn(condition, x, w):
        then_branch = subgraph(lambda a, b: (ops.exp(a) * b, ops.argmax(a)), x, w)
        else_branch = subgraph(lambda b: (ops.sin(b) * b, ops.argmin(b)), w)
        return ops.conditional(condition, then_branch, else_branch, [x, w], [w])[0]
    x, w = values(1, (4,)), values(2, (4,))
    grads = check_gradients(fn, np.array(taken), x, w)
    assert np.any(grads[1] != 0) == taken


@settings(**SETTINGS)
@given(shape=nonscalar_shapes, taken=st.booleans(), seed=seeds)
def test_conditional_with_shared_inputs(shape, taken, seed):
    def fn(condition, x, w):
        then_branch = subgraph(lambda a, b: ops.tanh(a * b), x, w)
        else_branch = subgraph(lambda a, b: ops.relu(a) * b + a, x, w)
        return ops.conditional(condition, then_branch, else_branch, [x, w], [x, w])[0]
    check_gradients(fn, np.array(taken), values(seed, shape), values(seed + 1, shape))
