"""popxl's ``Session._validate_run_inputs`` and ``_validate_run_outputs``: the stream and shape checks of a
run, made without running (upstream code calls them to check its buffers)."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops


def _session(transfers: int, replicas: int):
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        body = ir.create_empty_graph("body")
        x_stream = popxl.h2d_stream((3,), popxl.float32, name="x")
        y_stream = popxl.d2h_stream((3,), popxl.float32, name="y")
        with body, popxl.in_sequence():
            ops.host_store(y_stream, ops.host_load(x_stream, "x") * 2)
        ops.repeat(body, transfers)
    ir.num_host_transfers = transfers
    return popxl.Session(ir, "ipu_model"), x_stream, y_stream


def test_arrays_of_the_host_shape_pass_and_run_gives_the_same_result():
    session, x, y = _session(4, 2)
    data = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    outputs = {y: np.zeros((4, 2, 3), np.float32)}
    session._validate_run_inputs({x: data})
    session._validate_run_outputs(outputs)
    assert session._expected_outputs() == [y]
    with session:
        session.run_with_outputs({x: data}, outputs)
    np.testing.assert_array_equal(outputs[y], data * 2)


def test_wrong_dimensions_are_named_as_popxl_names_them():
    session, x, y = _session(4, 2)
    with pytest.raises(ValueError, match=r"Dimension 0 \(3\) .* input stream x is not large enough"):
        session._validate_run_inputs({x: np.zeros((3, 2, 3), np.float32)})
    with pytest.raises(ValueError, match=r"Dimension 1 \(1\) .* output stream y is the wrong size"):
        session._validate_run_outputs({y: np.zeros((4, 1, 3), np.float32)})
    with pytest.raises(ValueError, match=r"Shape mismatch for input stream x"):
        session._validate_run_inputs({x: np.zeros((4, 2, 5), np.float32)})


def test_missing_streams_are_refused_and_nothing_runs():
    session, x, y = _session(1, 1)
    with pytest.raises(ValueError, match="missing inputs for stream"):
        session._validate_run_inputs({})
    with pytest.raises(ValueError, match="missing outputs for stream"):
        session._validate_run_outputs({})
    assert session.run_count == 0
