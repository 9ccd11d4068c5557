"""The tensor-parallel all-reduce: an identity forward (identical inputs) or an identity gradient (identical
gradients), once PopART's OpToIdentity pattern has run; refused by a Session before it has."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.ir.errors import popart_exception
from workbench.ops.identical_all_reduce import identical_all_reduce

REPLICAS = 4
DATA = np.arange(REPLICAS * 3, dtype=np.float32).reshape(REPLICAS, 3)


def run_forward_and_gradient(identical_inputs, identical_grad_inputs, apply_pattern=True):
    """Per replica: y = all_reduce(x) and, from a separate call, the gradient of y with respect to x
    given gradient DATA (each replica its own row)."""
    ir = popxl.Ir(replication=REPLICAS)
    with ir.main_graph:
        x_h2d = popxl.h2d_stream((3,), popxl.float32, name="x")
        x = ops.host_load(x_h2d)
        graph = ir.create_graph(lambda t: identical_all_reduce(t, identical_inputs=identical_inputs,
                                                                identical_grad_inputs=identical_grad_inputs), x)
        (y,) = ops.call(graph, x)
        grad_graph = popxl.transforms.autodiff(graph).graph
        (dx,) = ops.call(grad_graph, x)
        y_d2h, dx_d2h = popxl.d2h_stream((3,), popxl.float32, name="y"), popxl.d2h_stream((3,), popxl.float32,
                                                                                             name="dx")
        ops.host_store(y_d2h, y)
        ops.host_store(dx_d2h, dx)
    if apply_pattern:
        for pb_graph in ir._pb_ir.getAllGraphs():
            ir._pb_ir.applyPreAliasPatterns(pb_graph)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({x_h2d: DATA})
    return outputs[y_d2h], outputs[dx_d2h]


SUMMED = np.broadcast_to(DATA.sum(axis=0), DATA.shape)


@pytest.mark.parametrize("identical_inputs, identical_grad_inputs, forward, gradient", [
    (True, False, DATA, SUMMED),  # identity forward, all-reduced gradient
    (False, True, SUMMED, DATA),  # all-reduced forward, identity gradient
    (False, False, SUMMED, SUMMED),
])
def test_forward_and_gradient_match_numpy(identical_inputs, identical_grad_inputs, forward, gradient):
    y, dx = run_forward_and_gradient(identical_inputs, identical_grad_inputs)
    np.testing.assert_array_equal(y, forward)
    np.testing.assert_array_equal(dx, gradient)


@pytest.mark.parametrize("identical_inputs, identical_grad_inputs", [(True, False), (False, True)])
def test_a_session_refuses_an_identity_all_reduce_before_the_pattern_ran(identical_inputs, identical_grad_inputs):
    with pytest.raises(popart_exception, match="OpToIdentity pattern"):
        run_forward_and_gradient(identical_inputs, identical_grad_inputs, apply_pattern=False)


def test_only_add_and_mean_have_an_identity_to_stand_for():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        with pytest.raises(ValueError, match="op must be 'add' or 'mean'.*got 'max'"):
            identical_all_reduce(x, "max", identical_inputs=True)
    assert not ir.main_graph.ops
