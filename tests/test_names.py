"""Tensor, graph and stream names: popxl's `name`, `name_1`, `name_2`... given the first that is free."""
import numpy as np

import popxl
import popxl.ops as ops
from workbench.ir.names import Namespace
from workbench.transforms.graph_edits import rename


def test_repeated_ops_take_numbered_names_in_order():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        outs = [ops.add(x, x) for _ in range(4)]
    assert [t.name for t in outs] == ["add", "add_1", "add_2", "add_3"]


def test_a_name_the_user_took_is_skipped():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        first = ops.add(x, x)
        taken = popxl.variable(np.ones(2, np.float32), name="add_2")
        later = [ops.add(x, x) for _ in range(3)]
    assert first.name == "add" and taken.name == "add_2"
    assert [t.name for t in later] == ["add_1", "add_3", "add_4"]


def test_name_scopes_number_their_names_apart():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        with popxl.name_scope("layer"):
            a, b = ops.add(x, x), ops.add(x, x)
        c = ops.add(x, x)
    assert [a.name, b.name, c.name] == ["layer/add", "layer/add_1", "add"]


def test_a_freed_name_is_given_again_as_a_search_from_the_start_would():
    names = Namespace()
    for _ in range(4):
        names[names.fresh("t")] = None
    assert list(names) == ["t", "t_1", "t_2", "t_3"]
    del names["t_1"]
    assert names.fresh("t") == "t_1"
    names["t_1"] = None
    names.pop("t")
    assert names.fresh("t") == "t"
    names["t"] = None
    assert names.fresh("t") == "t_4"


def test_a_fresh_name_nobody_took_is_offered_again():
    names = Namespace()
    assert names.fresh("t") == "t" and names.fresh("t") == "t"


def test_a_name_with_a_number_of_its_own_is_its_own_base():
    names = Namespace(t_1=None)
    assert names.fresh("t_1") == "t_1_1"
    assert names.fresh("t") == "t"
    names["t"] = None
    assert names.fresh("t") == "t_2"
    names.pop("t_1_1", None)
    assert names.fresh("t") == "t_2"


def test_renaming_a_tensor_frees_its_old_name():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        first, second = ops.add(x, x), ops.add(x, x)
        rename(first, "sum")
        third = ops.add(x, x)
    assert [first.name, second.name, third.name] == ["sum", "add_1", "add"]


def test_graph_and_stream_names_are_numbered_too():
    ir = popxl.Ir()
    graphs = [ir.create_empty_graph("body") for _ in range(3)]
    with ir.main_graph:
        streams = [popxl.h2d_stream([2], popxl.float32, name="x") for _ in range(3)]
    assert [g.name for g in graphs] == ["body", "body_1", "body_2"]
    assert [s.name for s in streams] == ["x", "x_1", "x_2"]


def test_a_discarded_graph_frees_its_name():
    ir = popxl.Ir()
    ir.create_empty_graph("body")
    second = ir.create_empty_graph("body")
    ir._discard_graph(second)
    assert ir.create_empty_graph("body").name == "body_1"
