"""Errors while building an Ir: each names what was wrong and what was expected, and leaves the
Ir as it was."""
import numpy as np
import pytest

import popart
import popxl
import popxl.ops as ops


def snapshot(ir):
    """What building may change: graphs, their ops, inputs and outputs."""
    return [(g.name, g.ops, g.inputs, g.outputs, g.tensors) for g in ir.graphs]


def test_a_variable_in_a_subgraph_is_a_value_error():
    ir = popxl.Ir()
    sub = ir.create_empty_graph("sub")
    with ir.main_graph, sub:
        with pytest.raises(ValueError, match="variables can only be created in the main graph.*'sub'"):
            popxl.variable(np.ones(2, np.float32))
    assert sub.tensors == ()


def test_a_variable_made_inside_create_graph_discards_the_graph():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))

        def fn(t):
            return t + popxl.variable(np.ones(2, np.float32), name="w")

        with pytest.raises(ValueError, match="variables can only be created in the main graph"):
            ir.create_graph(fn, x)
    assert ir.graphs == (ir.main_graph,)
    assert ir.main_graph.variables == (x,)


def test_constants_may_be_created_in_any_graph():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.0, 2.0], np.float32))
        graph = ir.create_graph(lambda t: t + popxl.constant(np.array([10.0, 20.0], np.float32)), x)
        (y,) = ops.call(graph, x)
        stream = popxl.d2h_stream(y.shape, y.dtype)
        ops.host_store(stream, y)
    assert len(graph.constants) == 1
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[stream], [11.0, 22.0])


def test_a_tensor_of_another_graph_as_op_input_names_both_graphs():
    ir = popxl.Ir()
    with ir.main_graph:
        outer = popxl.variable(np.ones(2, np.float32), name="outer")

        def uses_outer(t):
            return t + outer

        with pytest.raises(ValueError) as error:
            ir.create_graph(uses_outer, outer)
    message = str(error.value)
    assert "'outer'" in message
    assert "belongs to graph 'main'" in message
    assert "added to graph 'test_a_tensor_of_another_graph_as_op_input_names_both_graphs.uses_outer'" \
        in message
    assert "graph_input" in message
    assert ir.graphs == (ir.main_graph,)


def test_a_subgraph_tensor_used_in_the_main_graph():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        graph = ir.create_graph(lambda t: t * 2, x)
        before = snapshot(ir)
        with pytest.raises(ValueError, match=rf"belongs to graph '{graph.name}' but the op is being "
                                             r"added to graph 'main'"):
            ops.negate(graph.outputs[0])
    assert snapshot(ir) == before


def test_a_tensor_of_another_ir_is_a_value_error():
    first, second = popxl.Ir(), popxl.Ir()
    with first.main_graph:
        a = popxl.variable(np.ones(2, np.float32), name="a")
    with second.main_graph:
        b = popxl.variable(np.ones(2, np.float32), name="b")
        with pytest.raises(ValueError, match="belongs to another Ir"):
            a + b
    assert second.main_graph.ops == ()


def test_entering_graphs_of_two_irs_at_once_is_an_error():
    first, second = popxl.Ir(), popxl.Ir()
    with first.main_graph:
        with pytest.raises(RuntimeError, match="another Ir"):
            with second.main_graph:
                pass
        assert popxl.gcg() is first.main_graph


def test_ops_take_tensors():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        with pytest.raises(TypeError, match="inputs must be Tensors"):
            ops.add(x, np.ones(2, np.float32))
    assert ir.main_graph.ops == ()


def test_the_main_graph_has_no_inputs():
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(ValueError, match="the main graph has no inputs"):
            popxl.graph_input((2,), popxl.float32)
    assert ir.main_graph.inputs == ()


def test_graph_output_must_be_a_tensor_of_the_graph():
    ir = popxl.Ir()
    sub = ir.create_empty_graph("sub")
    with ir.main_graph:
        outer = popxl.variable(np.ones(2, np.float32), name="outer")
        with sub:
            with pytest.raises(ValueError, match="belongs to graph 'main', not to 'sub'"):
                popxl.graph_output(outer)
            with pytest.raises(TypeError, match="must be Tensors"):
                popxl.graph_output(np.ones(2))
    assert sub.outputs == ()


# ----- call sites -----

def two_input_graph(ir):
    with ir.main_graph:
        x = popxl.variable(np.ones((2, 2), np.float32), name="x")
        graph = ir.create_graph(lambda a, b: a + b, x, x)
    return x, graph


def test_call_with_too_many_inputs():
    ir = popxl.Ir()
    x, graph = two_input_graph(ir)
    with ir.main_graph:
        before = snapshot(ir)
        with pytest.raises(ValueError, match=r"^Too many inputs have been provided\. .*3 > 2.*3 inputs given but "
                                             r"graph .* has only 2"):
            ops.call(graph, x, x, x)
    assert snapshot(ir) == before


def test_call_with_missing_inputs_lists_them():
    ir = popxl.Ir()
    x, graph = two_input_graph(ir)
    with ir.main_graph:
        before = snapshot(ir)
        with pytest.raises(ValueError, match=r"needs inputs that were not given:\n  b: float32\[2,2\]"):
            ops.call(graph, x)
    assert snapshot(ir) == before


def test_call_with_a_mismatched_input():
    ir = popxl.Ir()
    x, graph = two_input_graph(ir)
    with ir.main_graph:
        wrong = popxl.variable(np.ones((2, 2), np.int32), name="wrong")
        before = snapshot(ir)
        with pytest.raises(ValueError, match=r"graph input 'b' .* expects float32\[2,2\], but 'wrong' "
                                             r"is int32\[2,2\]"):
            ops.call(graph, x, wrong)
        with pytest.raises(popart.popart_exception):  # as PopART reports it
            ops.call(graph, x, wrong)
    assert snapshot(ir) == before


def test_call_with_a_bad_inputs_dict():
    ir = popxl.Ir()
    x, graph = two_input_graph(ir)
    with ir.main_graph:
        with pytest.raises(ValueError, match="inputs_dict key .* is not an input of graph"):
            ops.call(graph, x, inputs_dict={x: x})
        with pytest.raises(ValueError, match="is given twice"):
            ops.call(graph, x, x, inputs_dict={graph.inputs[0]: x})
        (y,) = ops.call(graph, x, inputs_dict={graph.inputs[1]: x})
    assert y.shape == (2, 2)


def test_a_graph_cannot_call_itself_while_being_built():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))

        def recursive(t):
            return ops.call(popxl.gcg(), t)

        with pytest.raises(ValueError, match="cannot call itself"):
            ir.create_graph(recursive, x)
    assert ir.graphs == (ir.main_graph,)


def test_conditional_needs_a_bool_scalar():
    ir = popxl.Ir()
    x, graph = two_input_graph(ir)
    with ir.main_graph:
        with pytest.raises(ValueError, match="single-element bool tensor"):
            ops.conditional(x, graph, graph, [x, x], [x, x])


def test_streams_check_what_they_carry():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        d2h = popxl.d2h_stream((3,), popxl.float32, name="out")
        h2d = popxl.h2d_stream((2,), popxl.float32, name="in")
        with pytest.raises(ValueError, match=r"host_store: tensor 'x' is float32\[2\] but stream 'out' "
                                             r"carries float32\[3\]"):
            ops.host_store(d2h, x)
        with pytest.raises(TypeError, match="needs a DeviceToHostStream"):
            ops.host_store(h2d, x)
        with pytest.raises(TypeError, match="needs a HostToDeviceStream"):
            ops.host_load(d2h)
    assert ir.main_graph.ops == ()
    assert ir.get_all_d2h_streams() == set()
