"""Which ops a diff calls one op: a key (type and name less its counter) is not enough, what the two ops read
must agree. A forward graph against its gradient graph shares scopes and op types but no op; an op renamed
that reads the same tensors, or one whose attribute changed after a layer was added before it, is still one."""
import numpy as np

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff
from workbench.export import to_json
from workbench.export.graph_diff import graph_diff
from workbench.widgets import DiffView


def scoped_forward_and_gradient():
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.ones((3, 3), np.float32), name="w")

        def forward(x, w):
            for layer in range(2):
                with popxl.name_scope(f"layer{layer}"):
                    x = ops.relu(x @ w)
                    x = ops.sin(x) * x
            return ops.mean(x)

        graph = ir.create_graph(forward, w, w)
        gradient = autodiff(graph).graph
    return ir, graph, gradient


def test_a_forward_graph_and_its_gradient_graph_share_no_op():
    """The gradient graph reuses the forward's scopes and op types (``layer0/matmul``, ``layer0/mul``): before,
    its matmuls and muls were paired with the forward's as "same" or "changed"; they read other tensors."""
    ir, forward, gradient = scoped_forward_and_gradient()
    diff = DiffView(ir, ir, graph=forward, after_graph=gradient).diff
    paired = [row for row in diff.rows if row.before is not None and row.after is not None]
    assert not [row for row in paired if row.before["type"] != row.after["type"]]
    assert paired == []
    assert diff.count("removed") == len(forward.ops) and diff.count("added") == len(gradient.ops)
    shared_keys = {(op.type, op.name.rsplit(".", 1)[0]) for op in forward.ops} & \
        {(op.type, op.name.rsplit(".", 1)[0]) for op in gradient.ops}
    assert ("matmul", "layer0/matmul") in shared_keys  # what made the old pairing pair them


def renamed(scope: str, axis: int = 1) -> popxl.Ir:
    """relu then softmax over ``axis``; the relu inside name scope ``scope`` (none where empty)."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((4, 4), np.float32), name="x")
        if scope:
            with popxl.name_scope(scope):
                h = ops.relu(x)
        else:
            h = ops.relu(x)
        ops.softmax(ops.exp(h), axis=axis)
    return ir


def test_an_op_renamed_that_reads_the_same_tensors_is_one_op_and_says_its_name_changed():
    diff = graph_diff(to_json(renamed(""))["graphs"][0], to_json(renamed("activation"))["graphs"][0])
    assert [row.status for row in diff.rows] == ["changed", "same", "same"]
    (change,) = diff.rows[0].changes
    assert change.startswith("name: relu.") and "→ activation/relu." in change
    assert diff.rows[0].before["type"] == diff.rows[0].after["type"] == "relu"


def test_an_op_whose_input_is_now_made_by_a_new_op_still_pairs_where_its_name_is_its_own():
    """Before: x -> relu -> exp -> softmax; after: a sin between exp and softmax, and softmax over another axis.
    The softmax reads a new op's output, but it is the graph's only softmax: one op, changed."""
    def program(extra: bool, axis: int) -> dict:
        ir = popxl.Ir()
        with ir.main_graph:
            h = ops.exp(ops.relu(popxl.variable(np.ones((4, 4), np.float32), name="x")))
            ops.softmax(ops.sin(h) if extra else h, axis=axis)
        return to_json(ir)["graphs"][0]

    diff = graph_diff(program(False, 1), program(True, 0))
    assert [row.status for row in diff.rows] == ["same", "same", "added", "changed"]
    assert diff.rows[-1].changes == ["axis: 1 → 0"]


def test_alike_layers_pair_where_they_read_alike():
    """Three layers of matmul and relu against two: the layer that went is one of the three (its matmul and
    relu), and each op left pairs with the op reading what it reads."""
    def layers(count: int) -> dict:
        ir = popxl.Ir()
        with ir.main_graph:
            x = popxl.variable(np.ones((4, 4), np.float32), name="x")
            w = popxl.variable(np.eye(4, dtype=np.float32), name="w")
            for _ in range(count):
                x = ops.relu(x @ w)
        return to_json(ir)["graphs"][0]

    diff = graph_diff(layers(3), layers(2))
    assert sorted(row.before["type"] for row in diff.rows if row.status == "removed") == ["matmul", "relu"]
    assert diff.count("added") == 0 and diff.count("same") == 4
