"""The call tree (who calls whom, how often) and the flattened schedule it unrolls into."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from support.programs import add_one, call_tree_program as build_program
from workbench.analysis import call_tree, flattened_schedule


def test_the_program_runs_as_the_call_tree_says():
    ir, graphs = build_program(repeat_count=5)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    # five increments in the loop, one more in the then-branch
    np.testing.assert_array_equal(outputs[graphs["z"]], np.full(2, 1.0 + 5 + 1, np.float32))


def test_runs_per_session_run_multiplies_repeat_counts_and_takes_branches():
    ir, graphs = build_program(repeat_count=5)
    tree = call_tree(ir)
    runs = {node.graph: (node.runs_per_session_run, node.through_branch) for node in tree.nodes}
    assert runs == {
        ir.main_graph: (1, False),
        graphs["body"]: (5, False),
        graphs["g"]: (5 + 1, True),  # five times in the loop, once if the then-branch is taken
        graphs["then"]: (1, True),
        graphs["other"]: (1, True),
        graphs["unused"]: (0, False),
    }
    assert [node.graph for node in tree.nodes] == list(ir.graphs)
    assert tree.node(graphs["body"]).op_count == 1
    assert tree.node(ir.main_graph).op_count == 3
    assert tree.node(graphs["g"]).label == "add_one"


def test_call_sites_are_edges_with_their_kind():
    ir, graphs = build_program(repeat_count=5)
    tree = call_tree(ir)
    edges = [(edge.caller, edge.callee, edge.kind, edge.repeat_count) for edge in tree.edges]
    assert edges == [
        (ir.main_graph, graphs["body"], "repeat", 5),
        (ir.main_graph, graphs["then"], "conditional-then", 1),
        (ir.main_graph, graphs["other"], "conditional-else", 1),
        (graphs["body"], graphs["g"], "call", 1),
        (graphs["then"], graphs["g"], "call", 1),
    ]
    repeat_op = ir.main_graph.ops[0]
    assert tree.edges[0].op is repeat_op and repeat_op.type == "repeat"


def test_nested_repeats_multiply():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        g = ir.create_graph(add_one, x)
        inner = ir.create_graph(lambda t: ops.repeat(g, 4, t), x)
        outer = ir.create_graph(lambda t: ops.repeat(inner, 3, t), x)
        ops.call(outer, x)
        ops.call(g, x)
    tree = call_tree(ir)
    assert tree.node(outer).runs_per_session_run == 1
    assert tree.node(inner).runs_per_session_run == 3
    assert tree.node(g).runs_per_session_run == 3 * 4 + 1


def test_to_networkx():
    ir, graphs = build_program(repeat_count=5)
    network = call_tree(ir).to_networkx()
    assert network.number_of_nodes() == 6 and network.number_of_edges() == 5
    assert network.nodes[graphs["g"]]["runs_per_session_run"] == 6
    assert network.nodes[graphs["g"]]["label"] == "add_one"
    (edge,) = network.get_edge_data(ir.main_graph, graphs["body"]).values()
    assert edge["kind"] == "repeat" and edge["repeat_count"] == 5


def test_code_loading_is_not_a_call():
    ir = popxl.Ir()
    g = ir.create_empty_graph("g")
    with ir.main_graph:
        ops.remote_code_load(g, destination="executable")
    tree = call_tree(ir)
    assert tree.edges == [] and tree.node(g).runs_per_session_run == 0


# ----- the flattened schedule -----
def test_flattened_schedule_expands_calls_repeats_and_both_branches():
    ir, graphs = build_program(repeat_count=5)
    flat = flattened_schedule(ir)
    repeat_op, conditional_op, store_op = ir.main_graph.ops
    (body_call,) = graphs["body"].ops
    (then_call,) = graphs["then"].ops
    main, g, body, then, other = ir.main_graph, graphs["g"], graphs["body"], graphs["then"], graphs["other"]
    rows = [(s.index, s.op.type, s.graph, s.depth, s.call_path, s.repeats, s.branches) for s in flat]
    assert rows == [
        (0, "repeat", main, 0, (), (), ()),
        (1, "call", body, 1, (repeat_op,), (5,), ()),
        (2, "add", g, 2, (repeat_op, body_call), (5,), ()),
        (3, "conditional", main, 0, (), (), ()),
        (4, "call", then, 1, (conditional_op,), (), ((conditional_op, "then"),)),
        (5, "add", g, 2, (conditional_op, then_call), (), ((conditional_op, "then"),)),
        (6, "mul", other, 1, (conditional_op,), (), ((conditional_op, "else"),)),
        (7, "host_store", main, 0, (), (), ()),
    ]
    assert [s.end for s in flat] == [2, 2, 2, 6, 5, 5, 6, 7]
    assert flat[2].repeat_count == 5 and flat[2].in_repeat and not flat[2].in_branch
    assert flat[6].in_branch and not flat[6].in_repeat and flat[6].repeat_count == 1
    assert [(f.kind, f.first, f.last) for f in flat.frames] == [
        ("main", 0, 7), ("repeat", 1, 2), ("call", 2, 2), ("then", 4, 5), ("call", 5, 5), ("else", 6, 6)]
    assert len(flat.frames_of(g)) == 2


def test_a_step_in_nested_repeats_runs_the_product_of_their_counts():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        g = ir.create_graph(add_one, x)
        inner = ir.create_graph(lambda t: ops.repeat(g, 4, t), x)
        ops.repeat(inner, 3, x)
    flat = flattened_schedule(ir)
    assert [(s.op.type, s.repeats, s.repeat_count) for s in flat] == [
        ("repeat", (), 1), ("repeat", (3,), 3), ("add", (3, 4), 12)]


def test_an_empty_graph_call_is_a_step_of_its_own():
    ir = popxl.Ir()
    empty = ir.create_empty_graph("empty")
    with ir.main_graph:
        ops.call(empty)
    flat = flattened_schedule(ir)
    assert len(flat) == 1 and flat[0].end == 0 and flat[0].is_call_site
    assert (flat.frames[1].first, flat.frames[1].last) == (1, 0)


def test_call_cycles_are_reported():
    ir = popxl.Ir()
    first = ir.create_empty_graph("first")
    second = ir.create_empty_graph("second")
    with first:
        ops.call(second)
    with second:
        ops.call(first)
    with ir.main_graph:
        ops.call(first)
    with pytest.raises(ValueError, match="cycle"):
        flattened_schedule(ir)
    with pytest.raises(ValueError, match="cycles"):
        call_tree(ir)
