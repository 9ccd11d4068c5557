"""conditional_with_info: a conditional's call-site view, and in-place updates made visible."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.ops.conditional_info import ConditionalSiteInfo


def build(flag: bool):
    """then: a + b; else: 10 * c. Returns the Ir, the site info, the branch graphs and the parents."""
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.float32(1), name="a")
        b = popxl.variable(np.float32(2), name="b")
        c = popxl.variable(np.float32(3), name="c")
        then_graph = ir.create_graph(lambda x, y: x + y, a, b)
        else_graph = ir.create_graph(lambda z: z * 10.0, c)
        cond = popxl.constant(flag)
        info = ops.conditional_with_info(cond, then_graph, else_graph, then_inputs=[a, b], else_inputs=[c])
        out = popxl.d2h_stream((), popxl.float32, name="out")
        ops.host_store(out, info.outputs[0])
    return ir, info, (then_graph, else_graph), (cond, a, b, c), out


@pytest.mark.parametrize("flag, expected", [(True, 3.0), (False, 30.0)])
def test_conditional_with_info_runs_the_selected_branch(flag, expected):
    ir, info, *_, out = build(flag)
    assert isinstance(info, ConditionalSiteInfo)
    with popxl.Session(ir, "ipu_model") as session:
        assert session.run({})[out] == expected


def test_index_mappings_name_the_branch():
    _, info, (then_graph, else_graph), (cond, a, b, c), _ = build(True)
    assert info.called_graph == (then_graph, else_graph)
    assert info.inputs == (cond, a, b, c)
    assert [info.graph_to_parent_input_index(i) for i in range(2)] == [1, 2]
    assert info.graph_to_parent_input_index(0, then_branch=False) == 3
    assert [info.parent_to_graph_input_index(i) for i in (1, 2, 3)] == [0, 1, 0]
    assert [info.is_parent_index_in_then_branch(i) for i in (1, 2, 3)] == [True, True, False]
    assert info.graph_to_parent_output_index(0, then_branch=False) == 0
    assert info.parent_to_graph_output_index(0) == 0
    with pytest.raises(IndexError, match="Invalid graph output index 3 of the conditional \\(else branch\\)"):
        info.graph_to_parent_output_index(3, then_branch=False)
    with pytest.raises(IndexError, match="Invalid parent output index 3"):
        info.parent_to_graph_output_index(3)
    with pytest.raises(IndexError, match="0 is the condition"):
        info.is_parent_index_in_then_branch(0)
    with pytest.raises(IndexError, match="Invalid graph input index 1 of the else branch"):
        info.graph_to_parent_input_index(1, then_branch=False)


def test_tensors_map_between_parent_and_branches():
    _, info, (then_graph, else_graph), (cond, a, b, c), _ = build(True)
    assert info.graph_to_parent(then_graph.inputs[1]) is b
    assert info.graph_to_parent(else_graph.inputs[0]) is c
    assert info.graph_to_parent(else_graph.outputs[0]) is info.outputs[0]
    assert info.parent_to_graph(c) is else_graph.inputs[0]
    assert info.parent_to_graph(a) is then_graph.inputs[0]
    with pytest.raises(ValueError, match="not a parent graph input"):
        info.parent_to_graph(cond)


def test_set_parent_input_modified_makes_a_branch_write_visible():
    ir = popxl.Ir()
    with ir.main_graph:
        counter = popxl.variable(np.float32(5), name="counter")

        def bump(t):
            ops.var_updates.accumulate_(t, popxl.constant(np.float32(1)))
            return t + 0

        then_graph = ir.create_graph(bump, counter)
        else_graph = ir.create_graph(lambda t: t * 1.0, counter)
        with popxl.in_sequence():
            plain = ops.conditional_with_info(popxl.constant(True), then_graph, else_graph, [counter], [counter])
            marked = ops.conditional_with_info(popxl.constant(True), then_graph, else_graph, [counter], [counter])
            marked.set_parent_input_modified(counter)
    assert plain.op.modified == () and marked.op.modified == (1, 2)
    with popxl.Session(ir, "ipu_model") as session:
        session.run({})
        assert session.get_tensor_data(counter) == 6.0  # only the marked call's write reaches the parent


def test_one_call_binding_record_describes_every_call_site():
    from workbench.ops.call_binding import call_binding, call_bindings

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        y = popxl.variable(np.zeros(2, np.float32), name="y")
        cond = popxl.constant(True)
        then_graph = ir.create_graph(lambda a, b: a + b, x, y)
        else_graph = ir.create_graph(lambda a: a * 2, x)
        (out,) = ops.conditional(cond, then_graph, else_graph, then_inputs_dict={then_graph.inputs[1]: y,
                                                                                  then_graph.inputs[0]: x},
                                 else_inputs=[y])
        (called,) = ops.call(else_graph, x)
    then_binding, else_binding = call_bindings(out.producer)
    assert (then_binding.kind, then_binding.label, then_binding.first) == ("then", "conditional-then", 1)
    assert dict(then_binding.pairs()) == {y: then_graph.inputs[1], x: then_graph.inputs[0]}
    assert (else_binding.kind, else_binding.label, else_binding.first, else_binding.parents) == \
        ("else", "conditional-else", 3, (y,))
    assert else_binding.parent_of(else_graph.inputs[0]) is y
    assert call_binding(out.producer, "else") == else_binding
    (call,) = call_bindings(called.producer)
    assert (call.kind, call.graph, call.parents, call.op_input_index(0)) == ("call", else_graph, (x,), 0)
    assert call_bindings(then_graph.ops[0]) == ()  # an add calls nothing
