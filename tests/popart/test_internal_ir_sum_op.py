"""PopART's Sum of many tensors, made as code written for PopART makes it (``createConnectedOp_SumOp``), and
``popxl.transforms.decompose_sum``, which turns it into zeros and one add per tensor."""
import numpy as np
import pytest

import popart._internal.ir as _ir
import popxl
import popxl.ops as ops
from support.popart_sum import sum_of

RNG = np.random.default_rng(11)
VALUES = [RNG.normal(size=shape).astype(np.float32) for shape in ((2, 3), (3,), (2, 3), (1, 3))]


def summed(decomposed: bool):
    ir = popxl.Ir()
    with ir.main_graph:
        tensors = [popxl.variable(v, name=f"v{i}") for i, v in enumerate(VALUES)]
        total = sum_of(*tensors)
        doubled = total + total
        stream = popxl.d2h_stream(doubled.shape, doubled.dtype, "doubled")
        ops.host_store(stream, doubled)
    if decomposed:
        popxl.transforms.decompose_sum(ir.main_graph)
    with popxl.Session(ir, "ipu_model") as session:
        value = session.run()[stream]
    return ir, total, value


def test_a_sum_of_many_tensors_broadcasts_and_adds_them():
    ir, total, value = summed(decomposed=False)
    (op,) = [op for op in ir.main_graph._pb_graph.getOps() if isinstance(op, _ir.op.SumOp)]
    assert op.opType() == "Sum" and total.shape == (2, 3)
    np.testing.assert_allclose(value, 2 * sum(VALUES), rtol=1e-6)


def test_decompose_sum_makes_an_init_and_one_add_per_tensor_with_the_same_numbers():
    ir, total, value = summed(decomposed=True)
    types = [op.opType() for op in ir.main_graph._pb_graph.getOps()]
    assert "Sum" not in types and types.count("Init") == 1 and types.count("Add") == len(VALUES) + 1
    assert ir.main_graph.get_tensor(total.id).producer.type == "add"  # the sum's tensor id is kept
    _, _, undecomposed = summed(decomposed=False)
    np.testing.assert_array_equal(value, undecomposed)


def test_autodiff_gives_each_tensor_of_a_sum_the_gradient_summed_to_its_shape():
    ir = popxl.Ir()
    spec = [popxl.TensorSpec(v.shape, popxl.float32) for v in VALUES]
    with ir.main_graph:
        graph = ir.create_graph(lambda *ts: sum_of(*ts), *spec)
        grad = popxl.transforms.autodiff(graph)
        seed = popxl.constant(np.ones((2, 3), np.float32))
        grads = ops.call(grad.graph, seed)
        streams = [popxl.d2h_stream(g.shape, g.dtype, f"g{i}") for i, g in enumerate(grads)]
        for stream, g in zip(streams, grads):
            ops.host_store(stream, g)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()
    # A (2, 3) tensor gets the seed itself; a (3,) or (1, 3) one the seed summed over the two rows.
    expected = {(2, 3): np.ones((2, 3)), (3,): np.full(3, 2.0), (1, 3): np.full((1, 3), 2.0)}
    for stream, value in zip(streams, VALUES):
        np.testing.assert_array_equal(result[stream], expected[value.shape])


def test_a_sum_op_names_its_inputs_from_zero():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(VALUES[0], name="a")
        with pytest.raises(ValueError, match="SumOp: inputs are numbered 0..n-1"):
            ir.main_graph._pb_graph.createConnectedOp_SumOp({1: a.id}, {0: "out"}, None, None)
