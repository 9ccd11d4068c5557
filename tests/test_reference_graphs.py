"""The listings of the Graphs chapter (9.1-9.6) completed and run, and the calling conventions
they rest on: pass-by-value, by-reference inputs, repeat's loop-carried inputs and conditional."""
from typing import List

import numpy as np
import pytest

import popxl
import popxl.ops as ops


def run_and_fetch(ir, inputs=None):
    with popxl.Session(ir, "ipu_model") as session:
        return session.run(inputs or {}), session


def store(t, name):
    stream = popxl.d2h_stream(t.shape, t.dtype, name=name)
    ops.host_store(stream, t)
    return stream


def test_9_1_create_and_call_a_graph():
    def increment_fn(x: popxl.Tensor):
        return x + np.ones(x.shape, x.dtype.as_numpy())

    ir = popxl.Ir()
    main = ir.main_graph
    with main:
        input = popxl.h2d_stream([2, 2], popxl.float32, name="input_stream")
        x = ops.host_load(input, "x")
        increment_graph = ir.create_graph(increment_fn, x)
        (o,) = ops.call(increment_graph, x)
        o_d2h = store(o, "o")

    assert len(increment_graph.inputs) == 1 and len(increment_graph.outputs) == 1
    assert increment_graph.inputs[0].spec == x.spec
    assert main.called_graphs == (increment_graph,)
    data = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    outputs, _ = run_and_fetch(ir, {input: data})
    np.testing.assert_array_equal(outputs[o_d2h], data + 1)


def test_9_2_one_function_makes_several_graphs():
    def matmul_fn(x: popxl.Tensor, w: popxl.Tensor):
        return x @ w

    ir = popxl.Ir()
    with ir.main_graph:
        input = popxl.h2d_stream([2, 2], popxl.float32, name="input_stream")
        x = ops.host_load(input, "x")
        w1 = popxl.variable(np.ones(x.shape, x.dtype.as_numpy()), name="w1")
        w2 = popxl.variable(np.ones(x.shape[-1], x.dtype.as_numpy()), name="w2")
        matmul_graph1 = ir.create_graph(matmul_fn, x, w1)
        matmul_graph2 = ir.create_graph(matmul_fn, x, w2)
        (o1,) = ops.call(matmul_graph1, x, w1)
        (o2,) = ops.call(matmul_graph2, x, w2)
        o1_d2h, o2_d2h = store(o1, "o1"), store(o2, "o2")

    assert matmul_graph1 is not matmul_graph2
    assert matmul_graph1.name != matmul_graph2.name
    assert [t.shape for t in matmul_graph1.inputs] == [(2, 2), (2, 2)]
    assert [t.shape for t in matmul_graph2.inputs] == [(2, 2), (2,)]
    assert o1.shape == (2, 2) and o2.shape == (2,)
    data = np.array([[1.0, 2.0], [3.0, 5.0]], np.float32)
    outputs, _ = run_and_fetch(ir, {input: data})
    np.testing.assert_array_equal(outputs[o1_d2h], data @ np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(outputs[o2_d2h], data @ np.ones(2, np.float32))


def test_9_3_a_graph_called_twice_with_different_inputs():
    def increment_fn(x: popxl.Tensor):
        value = popxl.graph_input(x.shape, x.dtype, "value")
        return x + value

    ir = popxl.Ir()
    with ir.main_graph:
        input = popxl.h2d_stream([2, 2], popxl.float32, name="input_stream")
        x = ops.host_load(input, "x")
        increment_graph = ir.create_graph(increment_fn, x)
        value1 = popxl.variable(np.ones(x.shape, x.dtype.as_numpy()), name="value1")
        value2 = popxl.variable(2 * np.ones(x.shape, x.dtype.as_numpy()), name="value2")
        (o,) = ops.call(increment_graph, x, value1)
        (o,) = ops.call(increment_graph, o, value2)
        o_d2h = store(o, "o")

    assert [t.name for t in increment_graph.inputs] == ["x", "value"]
    data = np.array([[0.5, 1.0], [-1.0, 7.0]], np.float32)
    outputs, _ = run_and_fetch(ir, {input: data})
    np.testing.assert_array_equal(outputs[o_d2h], data + 3)


def increment_in_place_fn(x: popxl.Tensor):
    value = popxl.graph_input(x.shape, x.dtype, "value")
    ops.var_updates.copy_var_update_(x, x + value)


def build_9_4(mark_modified):
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        x = popxl.variable(1)
        value1 = popxl.constant(1)
        increment_graph = ir.create_graph(increment_in_place_fn, x)
        info = ops.call_with_info(increment_graph, x, value1)
        if mark_modified:
            info.set_parent_input_modified(x)
        o_d2h = store(x, "output_stream")
    return ir, x, info, o_d2h


def test_9_4_call_with_info_and_set_parent_input_modified():
    ir, x, info, o_d2h = build_9_4(mark_modified=True)
    assert x.dtype == popxl.int32
    outputs, session = run_and_fetch(ir)
    assert outputs[o_d2h] == 2
    assert session.get_tensor_data(x) == 2


def test_9_4_without_set_parent_input_modified_the_update_stays_in_the_call():
    ir, x, info, o_d2h = build_9_4(mark_modified=False)
    outputs, session = run_and_fetch(ir)
    assert outputs[o_d2h] == 1
    assert session.get_tensor_data(x) == 1


def test_9_4_call_site_info():
    ir, x, info, o_d2h = build_9_4(mark_modified=True)
    graph = info.called_graph
    value1 = info.parent_input(1)
    assert info.inputs == (x, value1)
    assert info.outputs == ()
    assert info.parent_input(0) is x
    assert info.parent_to_graph(x) is graph.inputs[0]
    assert info.parent_to_graph(value1) is graph.inputs[1]
    assert info.graph_to_parent(graph.inputs[1]) is value1
    assert info.graph_to_parent_input_index(1) == 1
    assert info.parent_to_graph_input_index(0) == 0
    with ir.main_graph:
        unrelated = popxl.constant(0, name="unrelated")
    with pytest.raises(ValueError, match="not an input of this call site"):
        info.set_parent_input_modified(unrelated)


def test_9_5_repeat_increments_twice():
    def increment_fn(x: popxl.Tensor, value: popxl.Tensor):
        return x + value

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones([2, 2], np.float32), name="x")
        value = popxl.variable(np.ones(x.shape, x.dtype.as_numpy()), name="value")
        increment_graph = ir.create_graph(increment_fn, x, value)
        (o,) = ops.repeat(increment_graph, 2, x, value)
        o_d2h = store(o, "o")

    outputs, session = run_and_fetch(ir)
    np.testing.assert_array_equal(outputs[o_d2h], np.full((2, 2), 3.0, np.float32))
    # The variables themselves are inputs by value: unchanged.
    np.testing.assert_array_equal(session.get_tensor_data(x), np.ones((2, 2), np.float32))


class Linear(popxl.Module):
    def __init__(self):
        self.W = None
        self.b = None

    def build(self, x: popxl.Tensor, out_features: int, bias: bool = True):
        self.W = popxl.graph_input((x.shape[-1], out_features), popxl.float32, "W")
        y = x @ self.W
        if bias:
            self.b = popxl.graph_input((out_features,), popxl.float32, "b")
            y = y + self.b
        return y


def test_9_6_repeat_with_inputs_dict():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones([2, 2], np.float32), name="x")
        W = popxl.variable(np.ones([2, 2], np.float32), name="W")
        b = popxl.variable(np.ones([2], np.float32), name="b")
        linear = Linear()
        linear_graph = ir.create_graph(linear, x, out_features=2)
        (o,) = ops.repeat(linear_graph, 2, x, inputs_dict={linear.W: W, linear.b: b})
        o_d2h = store(o, "o")

    assert linear_graph.inputs == (linear_graph.inputs[0], linear.W, linear.b)
    outputs, _ = run_and_fetch(ir)
    np.testing.assert_array_equal(outputs[o_d2h], np.full((2, 2), 7.0, np.float32))


def test_9_6_repeat_matches_a_numpy_loop():
    rng = np.random.default_rng(3)
    x_data, W_data, b_data = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (3, 3), (3,)))
    ir = popxl.Ir()
    with ir.main_graph:
        x, W, b = popxl.variable(x_data), popxl.variable(W_data), popxl.variable(b_data)
        linear = Linear()
        graph = ir.create_graph(linear, x, out_features=3)
        (o,) = ops.repeat(graph, 5, x, inputs_dict={linear.W: W, linear.b: b})
        o_d2h = store(o, "o")
    outputs, _ = run_and_fetch(ir)
    expected = x_data
    for _ in range(5):
        expected = expected @ W_data + b_data
    np.testing.assert_allclose(outputs[o_d2h], expected, rtol=1e-5)


# ----- pass by value and by reference -----

def add_one_in_place(x: popxl.Tensor):
    x += 1


def add_one_in_place_by_ref(x: popxl.TensorByRef):
    x += 1


def add_one_in_place_to_each(xs: List[popxl.TensorByRef]):
    for x in xs:
        x += 1


def add_one_in_place_graph_input():
    x = popxl.graph_input([2], popxl.float32, "x", by_ref=True)
    x += 1


def call_and_read(build_graph, count=1):
    """Call the graph made by ``build_graph(ir, v)`` on variable ``v`` = [1, 2] and read ``v`` back
    both through a host_store after the call and from the session."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        v = popxl.variable(np.array([1.0, 2.0], np.float32), name="v")
        graph = build_graph(ir, v)
        for _ in range(count):
            ops.call(graph, v)
        v_d2h = store(v, "v_after")
    outputs, session = run_and_fetch(ir)
    return outputs[v_d2h], session.get_tensor_data(v), graph


def test_inputs_are_passed_by_value():
    stored, final, graph = call_and_read(lambda ir, v: ir.create_graph(add_one_in_place, v))
    np.testing.assert_array_equal(stored, [1.0, 2.0])
    np.testing.assert_array_equal(final, [1.0, 2.0])
    assert graph._by_ref_inputs == set()


def test_tensor_by_ref_inputs_are_updated_in_the_parent():
    stored, final, graph = call_and_read(lambda ir, v: ir.create_graph(add_one_in_place_by_ref, v), 2)
    np.testing.assert_array_equal(stored, [3.0, 4.0])
    np.testing.assert_array_equal(final, [3.0, 4.0])
    assert graph._by_ref_inputs == {graph.inputs[0]}


def test_list_of_tensor_by_ref():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.array([1.0], np.float32), name="a")
        b = popxl.variable(np.array([5.0], np.float32), name="b")
        graph = ir.create_graph(add_one_in_place_to_each, [a, b])
        ops.call(graph, [a, b])
    assert graph._by_ref_inputs == set(graph.inputs)
    _, session = run_and_fetch(ir)
    np.testing.assert_array_equal(session.get_tensor_data(a), [2.0])
    np.testing.assert_array_equal(session.get_tensor_data(b), [6.0])


def test_graph_input_by_ref():
    stored, final, graph = call_and_read(lambda ir, v: ir.create_graph(add_one_in_place_graph_input))
    np.testing.assert_array_equal(stored, [2.0, 3.0])
    np.testing.assert_array_equal(final, [2.0, 3.0])


def add_ten_in_place_then_double(x: popxl.Tensor):
    x += 10
    return x * 2


def test_pass_by_value_keeps_the_parent_value_for_later_readers():
    """The call's copy is what the subgraph writes: ops after the call still see the old value."""
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.array([1.0, 2.0], np.float32), name="v")
        graph = ir.create_graph(add_ten_in_place_then_double, v)
        (doubled,) = ops.call(graph, v)
        total = v + doubled
        total_d2h = store(total, "total")
    outputs, _ = run_and_fetch(ir)
    np.testing.assert_array_equal(outputs[total_d2h], [1.0 + 22.0, 2.0 + 24.0])


def test_outputs_are_new_parent_tensors():
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.array([4.0], np.float32), name="v")
        graph = ir.create_graph(lambda x: x, v)
        (out,) = ops.call(graph, v)
        out += 1
        v_d2h, out_d2h = store(v, "v"), store(out, "out")
    assert out is not v and out.graph is ir.main_graph
    outputs, _ = run_and_fetch(ir)
    np.testing.assert_array_equal(outputs[out_d2h], [5.0])
    np.testing.assert_array_equal(outputs[v_d2h], [4.0])


# ----- repeat -----

def test_repeat_with_more_inputs_than_outputs():
    """Outputs 0..M-1 feed inputs 0..M-1; the other inputs keep their values every iteration."""
    def body(a, b, scale, shift):
        return a * scale + shift, b + a

    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.array([1.0, 2.0], np.float32), name="a")
        b = popxl.variable(np.array([0.0, 0.0], np.float32), name="b")
        scale = popxl.constant(np.array([2.0, 3.0], np.float32), name="scale")
        shift = popxl.constant(np.array([1.0, -1.0], np.float32), name="shift")
        graph = ir.create_graph(body, a, b, scale, shift)
        a_out, b_out = ops.repeat(graph, 3, a, b, scale, shift)
        a_d2h, b_d2h = store(a_out, "a"), store(b_out, "b")
    outputs, _ = run_and_fetch(ir)
    a_np, b_np = np.array([1.0, 2.0], np.float32), np.zeros(2, np.float32)
    for _ in range(3):
        a_np, b_np = a_np * [2.0, 3.0] + [1.0, -1.0], b_np + a_np
    np.testing.assert_array_equal(outputs[a_d2h], a_np)
    np.testing.assert_array_equal(outputs[b_d2h], b_np)


def test_repeat_outputs_must_match_the_inputs_they_feed():
    def body(counter, x):
        return x * 2

    ir = popxl.Ir()
    with ir.main_graph:
        counter = popxl.variable(np.array([0], np.int32), name="counter")
        x = popxl.variable(np.array([1.5], np.float32), name="x")
        graph = ir.create_graph(body, counter, x)
        with pytest.raises(ValueError, match="must match input 0"):
            ops.repeat(graph, 4, counter, x)


def test_repeat_by_ref_counter():
    def body(x, counter: popxl.TensorByRef):
        counter += 1
        return x * 2

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.5], np.float32), name="x")
        counter = popxl.variable(np.array([0], np.int32), name="counter")
        graph = ir.create_graph(body, x, counter)
        (y,) = ops.repeat(graph, 4, x, counter)
        y_d2h = store(y, "y")
    outputs, session = run_and_fetch(ir)
    np.testing.assert_array_equal(outputs[y_d2h], [1.5 * 16])
    np.testing.assert_array_equal(session.get_tensor_data(counter), [4])
    np.testing.assert_array_equal(session.get_tensor_data(x), [1.5])


@pytest.mark.parametrize("count", [0, -1, 2.0, True])
def test_repeat_count_must_be_a_positive_int(count):
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        graph = ir.create_graph(lambda t: t + 1, x)
        ops_before = len(ir.main_graph.ops)
        with pytest.raises(ValueError, match=r"^Repeat count must be an int greater than 0\. Repeat count: "):
            ops.repeat(graph, count, x)
    assert len(ir.main_graph.ops) == ops_before


def test_repeat_needs_at_least_as_many_inputs_as_outputs():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        graph = ir.create_graph(lambda t: (t + 1, t + 2), x)
        with pytest.raises(ValueError, match=r"^To repeat the subgraph \(\S+\) the number of inputs must be greater "
                                             r"than or equal to the number of outputs\. 1 < 2\..*2 outputs but only 1"):
            ops.repeat(graph, 2, x)


def test_repeat_with_info():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.0], np.float32))
        graph = ir.create_graph(lambda t: t * 3, x)
        info = ops.repeat_with_info(graph, 3, x)
        o_d2h = store(info.outputs[0], "o")
    assert info.called_graph is graph
    assert info.op.attrs["repeat_count"] == 3
    outputs, _ = run_and_fetch(ir)
    np.testing.assert_array_equal(outputs[o_d2h], [27.0])


# ----- conditional -----

def build_conditional():
    ir = popxl.Ir()
    with ir.main_graph:
        cond_h2d = popxl.h2d_stream([], popxl.bool, name="cond")
        x_h2d = popxl.h2d_stream([3], popxl.float32, name="x")
        cond, x = ops.host_load(cond_h2d), ops.host_load(x_h2d)
        then_graph = ir.create_graph(lambda t: t * 2, x)
        else_graph = ir.create_graph(lambda t, u: t - u, x, x)
        (o,) = ops.conditional(cond, then_graph, else_graph, then_inputs=[x], else_inputs=[x, x + 1])
        o_d2h = store(o, "o")
    return ir, cond_h2d, x_h2d, o_d2h


@pytest.mark.parametrize("flag", [True, False])
def test_conditional_runs_the_branch_the_condition_selects(flag):
    ir, cond_h2d, x_h2d, o_d2h = build_conditional()
    data = np.array([1.0, -2.0, 3.5], np.float32)
    outputs, _ = run_and_fetch(ir, {cond_h2d: np.array(flag), x_h2d: data})
    expected = data * 2 if flag else data - (data + 1)
    np.testing.assert_array_equal(outputs[o_d2h], expected)


def test_conditional_both_branches_in_one_session():
    ir, cond_h2d, x_h2d, o_d2h = build_conditional()
    data = np.array([1.0, 2.0, 3.0], np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        taken = session.run({cond_h2d: np.array(True), x_h2d: data})[o_d2h]
        not_taken = session.run({cond_h2d: np.array(False), x_h2d: data})[o_d2h]
    np.testing.assert_array_equal(taken, data * 2)
    np.testing.assert_array_equal(not_taken, [-1.0, -1.0, -1.0])


def test_conditional_by_ref_input_is_updated_only_when_its_branch_runs():
    def bump(v: popxl.TensorByRef):
        v += 1

    def nothing(v: popxl.TensorByRef):
        pass

    ir = popxl.Ir()
    with ir.main_graph:
        cond_h2d = popxl.h2d_stream([], popxl.bool, name="cond")
        v = popxl.variable(np.array([0.0], np.float32), name="v")
        ops.conditional(ops.host_load(cond_h2d), ir.create_graph(bump, v), ir.create_graph(nothing, v),
                        then_inputs=[v], else_inputs=[v])
    with popxl.Session(ir, "ipu_model") as session:
        for flag in (True, False, True, True):
            session.run({cond_h2d: np.array(flag)})
    np.testing.assert_array_equal(session.get_tensor_data(v), [3.0])


def test_conditional_branches_must_have_the_same_outputs():
    ir = popxl.Ir()
    with ir.main_graph:
        cond = popxl.variable(True, popxl.bool)
        x = popxl.variable(np.ones(2, np.float32))
        then_graph = ir.create_graph(lambda t: t, x)
        else_graph = ir.create_graph(lambda t: (t, t), x)
        with pytest.raises(ValueError, match="same outputs"):
            ops.conditional(cond, then_graph, else_graph, [x], [x])
        with pytest.raises(ValueError, match="single-element bool"):
            ops.conditional(x, then_graph, then_graph, [x], [x])


def test_a_graph_may_return_a_constant_and_callers_get_their_own_copy():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda: popxl.constant(np.array([1.0, 2.0], np.float32)))
        (first,) = ops.call(graph)
        first += 1
        (second,) = ops.call(graph)
        first_d2h, second_d2h = store(first, "first"), store(second, "second")
    with popxl.Session(ir, "ipu_model") as session:
        for _ in range(2):
            outputs = session.run()
            np.testing.assert_array_equal(outputs[first_d2h], [2.0, 3.0])
            np.testing.assert_array_equal(outputs[second_d2h], [1.0, 2.0])


def test_one_parent_passed_by_reference_and_by_value():
    """The by-value input is a copy taken at the call: the write through the reference does not
    show through it."""
    def bump_and_read(a: popxl.TensorByRef, b):
        a += 10
        return b * 1

    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.array([1.0], np.float32), name="v")
        graph = ir.create_graph(bump_and_read, v, v)
        (read,) = ops.call(graph, v, v)
        read_d2h = store(read, "read")
    outputs, session = run_and_fetch(ir)
    np.testing.assert_array_equal(outputs[read_d2h], [1.0])
    np.testing.assert_array_equal(session.get_tensor_data(v), [11.0])


def test_repeat_carries_a_copy_of_an_output_that_aliases_another_input():
    """Iteration outputs are copied into the next iteration's inputs: writing input 0 in place
    must not write into ``w``, whose tensor the body returns as output 0."""
    def body(x, w):
        x += 1
        return w

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([0.0], np.float32), name="x")
        w = popxl.variable(np.array([5.0], np.float32), name="w")
        (o,) = ops.repeat(ir.create_graph(body, x, w), 3, x, w)
        o_d2h = store(o, "o")
    outputs, session = run_and_fetch(ir)
    np.testing.assert_array_equal(outputs[o_d2h], [5.0])
    np.testing.assert_array_equal(session.get_tensor_data(w), [5.0])
    np.testing.assert_array_equal(session.get_tensor_data(x), [0.0])


def test_repeat_body_writing_its_input_after_returning_a_constant():
    def body(x):
        x += 1
        return popxl.constant(np.array([7.0], np.float32))

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([0.0], np.float32), name="x")
        (o,) = ops.repeat(ir.create_graph(body, x), 3, x)
        o_d2h = store(o, "o")
    with popxl.Session(ir, "ipu_model") as session:
        for _ in range(2):
            np.testing.assert_array_equal(session.run()[o_d2h], [7.0])
