"""The IR's single-op edits (``workbench.ir.op_edits``): copy an op unconnected, connect and disconnect its
tensors, replace a graph output, and the call placement that pipelined programs rely on."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.ir import TensorSpec, op_edits


def test_a_copied_op_connected_in_another_graph_runs_there_and_the_original_can_go():
    data = np.array([1.0, -2.0], np.float32)
    ir = popxl.Ir()
    with ir.main_graph, popxl.name_scope("layer"):
        x = popxl.variable(data, name="x")
        original = ops.negate(x)
    graph = ir.create_empty_graph("moved")
    with graph:
        inner = popxl.graph_input((2,), popxl.float32, "x")
    seen = []
    ir.events.subscribe(lambda kind, payload: seen.append(kind))
    negate = original.producer
    copy = op_edits.clone_op(negate, graph)
    assert (copy.type, copy.inputs, copy.outputs, copy.graph) == ("negate", (), (), graph)
    assert copy.name.startswith("layer/negate.") and copy.name != negate.name
    op_edits.connect_input(copy, 0, inner)
    out = op_edits.add_output(copy, 0, "y", TensorSpec((2,), popxl.float32))
    with graph:
        popxl.graph_output(out)
    op_edits.disconnect_inputs(negate)
    op_edits.disconnect_outputs(negate)
    assert x.consumers == [] and original.producer is None and inner.consumers == [copy]
    assert x in ir.main_graph.tensors and original not in ir.main_graph.tensors  # read by nothing: dropped
    assert seen.count("op_changed") == 4 and "op_added" in seen
    with ir.main_graph:
        (result,) = ops.call(graph, x)
        stream = popxl.d2h_stream((2,), popxl.float32, "out")
        ops.host_store(stream, result)
    ir.main_graph._pb_graph.eraseOp(ir.main_graph._pb_graph.getOps()[0].id)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[stream], -data)


def test_single_op_edits_refuse_what_would_break_the_graph():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        y = ops.exp(x)
        other = ir.create_graph(lambda t: t + 1.0, x)
    exp = y.producer
    with pytest.raises(ValueError, match="cannot read tensor 'x' of graph"):
        op_edits.connect_input(other.outputs[0].producer, 0, x)
    with pytest.raises(IndexError, match="input 3 can only be connected after"):
        op_edits.connect_input(exp, 3, x)
    with pytest.raises(IndexError, match="a new output takes index 1"):
        op_edits.add_output(exp, 0, "z", y.spec)
    with pytest.raises(ValueError, match="already produced by op"):
        op_edits.connect_output(exp, 1, y)
    with pytest.raises(ValueError, match="cannot take its place"):
        op_edits.set_graph_output(other, 0, _int_tensor(other))
    assert exp.inputs == (x,) and exp.outputs == (y,)


def _int_tensor(graph):
    with graph:
        return popxl.graph_input((2,), popxl.int32, "wrong")


def test_a_call_runs_where_its_inputs_live_and_returns_outputs_where_they_are_made():
    data = np.array([1.0, 2.0], np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        with popxl.ipu(1):
            x = popxl.variable(data, name="x")
            graph = ir.create_graph(lambda t: ops.ipu_copy(t * 2.0, 0), x)
        (result,) = ops.call(graph, x)  # made outside `popxl.ipu(1)`: it runs on IPU 1, where x lives
        stream = popxl.d2h_stream((2,), popxl.float32, "out")
        ops.host_store(stream, result + 1.0)
    call = result.producer
    assert (call.ipu, result.ipu) == (1, 0)
    with popxl.Session(ir, "ipu_hw") as session:
        np.testing.assert_array_equal(session.run()[stream], data * 2 + 1)


def test_a_graph_input_nothing_reads_yet_takes_the_ipu_of_the_tensor_passed_to_it():
    ir = popxl.Ir()
    with ir.main_graph:
        with popxl.ipu(1):
            x = popxl.variable(np.ones(2, np.float32), name="x")
        carry = ir.create_graph(lambda t: t, x)  # its input is made on IPU 0
        assert carry.inputs[0].ipu == 0
        (out,) = ops.repeat(carry, 3, x)
    assert carry.inputs[0].ipu == 1 and out.ipu == 1
    with pytest.raises(ValueError, match="no graph input"):
        op_edits.place_input(x, 0)


def test_an_op_made_earlier_can_be_ordered_by_the_open_in_sequence_block():
    from popxl.context import get_current_context

    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.zeros(2, np.float32))
        late = ops.var_updates.accumulate_(v, popxl.constant(np.ones(2, np.float32))).producer
        with popxl.in_sequence(True):
            early = ops.var_updates.accumulator_scale_(v, 3.0).producer
            get_current_context()._add_in_sequence_topocons(late)
    assert late.after == (early,)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), [1.0, 1.0])


def test_a_constant_passed_by_reference_is_refused_only_where_the_graph_writes_it():
    from workbench.analysis import InvalidIrError

    data = np.array([1.0, 2.0], np.float32)
    for writes in (False, True):
        ir = popxl.Ir()
        with ir.main_graph:
            c = popxl.constant(data, name="c")
            graph = ir.create_empty_graph("reads" if not writes else "writes")
            with graph:
                t = popxl.graph_input((2,), popxl.float32, "t", by_ref=True)
                result = ops.var_updates.accumulate_(t, t) if writes else t * 3.0
                popxl.graph_output(result)
            (out,) = ops.call(graph, c)
            stream = popxl.d2h_stream((2,), popxl.float32, "out")
            ops.host_store(stream, out)
        if writes:
            with pytest.raises(InvalidIrError, match="writes constant 'c' in place"):
                popxl.Session(ir, "ipu_model")
        else:
            with popxl.Session(ir, "ipu_model") as session:
                np.testing.assert_array_equal(session.run()[stream], 3 * data)


def test_a_call_takes_each_input_where_it_runs_or_where_its_graph_takes_it_and_nowhere_else():
    s_data, t_data = np.array([2.0, 3.0], np.float32), np.array([5.0, 7.0], np.float32)
    ir = popxl.Ir()
    spec = popxl.TensorSpec((2,), popxl.float32)
    with ir.main_graph:
        with popxl.ipu(1):
            graph = ir.create_graph(lambda s, t: s * t, spec, spec)
            t = popxl.variable(t_data, name="t")
        with popxl.ipu(2):
            elsewhere = popxl.variable(t_data, name="elsewhere")
        s = popxl.variable(s_data, name="s")
        with pytest.raises(ValueError, match="'elsewhere' lives on IPU 2 but the op runs on IPU 0"):
            ops.call(graph, s, elsewhere)
        (product,) = ops.call(graph, s, t)  # s where the call runs (IPU 0), t where the graph takes it
        stream = popxl.d2h_stream((2,), popxl.float32, "out")
        ops.host_store(stream, product)
    with popxl.Session(ir, "ipu_hw") as session:
        np.testing.assert_array_equal(session.run()[stream], s_data * t_data)
