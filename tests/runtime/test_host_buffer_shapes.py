"""Which host array shapes a run takes for a stream, as popxl decides: the transfer dimension holds at
least ``num_host_transfers`` entries (the first are read), the replica dimension exactly the replicas,
and the rest is the stream's shape, or all 1 for a stream of one element."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops

TRANSFERS = 10


def doubling_program(shape, replicas=1):
    """Each of TRANSFERS steps loads x and stores 2 * x."""
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        x_h2d = popxl.h2d_stream(shape, popxl.float32, name="x")
        y_d2h = popxl.d2h_stream(shape, popxl.float32, name="y")

        def step():
            ops.host_store(y_d2h, ops.host_load(x_h2d) * 2)

        ops.repeat(ir.create_graph(step), TRANSFERS)
    ir.num_host_transfers = TRANSFERS
    return ir, x_h2d, y_d2h


@pytest.mark.parametrize("replicas, given", [
    (1, (10,)), (1, (10, 1)), (1, (10, 1, 1)), (1, (13,)), (1, (13, 1)),
    (2, (10, 2)), (2, (10, 2, 1)), (2, (11, 2, 1, 1)),
])
def test_a_scalar_stream_takes_the_shapes_popxl_takes(replicas, given):
    ir, x_h2d, y_d2h = doubling_program((), replicas)
    values = np.arange(np.prod(given), dtype=np.float32).reshape(given)
    full = (TRANSFERS, replicas) if replicas > 1 else (TRANSFERS,)
    expected = 2 * values[:TRANSFERS].reshape(full)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run({x_h2d: values})[y_d2h], expected)
        outputs = {y_d2h: np.zeros(given, np.float32)}  # output arrays follow the same rule
        session.run_with_outputs({x_h2d: values}, outputs)
    np.testing.assert_array_equal(outputs[y_d2h][:TRANSFERS].reshape(full), expected)
    assert not outputs[y_d2h][TRANSFERS:].any()


def test_a_stream_of_several_elements_takes_its_own_shape_after_the_transfers():
    ir, x_h2d, y_d2h = doubling_program((2,))
    values = np.arange(24, dtype=np.float32).reshape(12, 2)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run({x_h2d: values})[y_d2h], 2 * values[:TRANSFERS])


@pytest.mark.parametrize("shape, replicas, given, message", [
    ((), 1, (9,), "Dimension 0 (9) for the array provided for input stream x is not large enough.\n"
                  "It should be at least of size num_host_transfers = 10"),
    ((), 1, (1, 10), "Dimension 0 (1) for the array provided for input stream x is not large enough."),
    ((), 1, (), "Dimension 0 (a scalar) for the array provided for input stream x is not large enough."),
    ((), 1, (10, 2), "Shape mismatch for input stream x:\nStream shape = (), therefore expected full global batch "
                     "shape (10,). Got array shape = (10, 2)"),
    ((), 2, (10, 3), "Dimension 1 (3) for the array provided for input stream x is the wrong size.\n"
                     "It should be of size replication_factor = 2"),
    ((), 2, (10,), "Dimension 1 (missing) for the array provided for input stream x is the wrong size."),
    ((2,), 1, (10, 1), "Shape mismatch for input stream x:\nStream shape = (2,), therefore expected full global "
                       "batch shape (10, 2). Got array shape = (10, 1)"),
    ((2,), 2, (10, 2, 2, 1), "Got array shape = (10, 2, 2, 1)"),
])
def test_shapes_popxl_refuses_are_refused_and_nothing_runs(shape, replicas, given, message):
    ir, x_h2d, y_d2h = doubling_program(shape, replicas)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.create_host_outputs()
        with pytest.raises(ValueError) as error:
            session.run_with_outputs({x_h2d: np.ones(given, np.float32)}, outputs)
        assert message in str(error.value)
        assert session.run_count == 0 and not outputs[y_d2h].any()
        good = np.ones((TRANSFERS, *((replicas,) if replicas > 1 else ()), *shape), np.float32)
        np.testing.assert_array_equal(session.run({x_h2d: good})[y_d2h], 2 * good)


def test_an_output_array_with_too_few_transfers_is_refused():
    ir, x_h2d, y_d2h = doubling_program(())
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(ValueError, match=r"Dimension 0 \(4\) for the array provided for output stream y is not "
                                             "large enough"):
            session.run_with_outputs({x_h2d: np.ones(TRANSFERS, np.float32)}, {y_d2h: np.zeros(4, np.float32)})
        assert session.run_count == 0
