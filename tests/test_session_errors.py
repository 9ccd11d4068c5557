"""Session errors: each message says what was wrong and what was expected, and after each error
nothing has changed: the variables keep their values and the next valid run works."""
import re

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.analysis import InvalidIrError

W_START = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
X = np.full((2, 3), 0.5, np.float32)


def accumulating_model():
    """Each run adds the input to ``w`` and stores the new ``w``."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        x_h2d = popxl.h2d_stream([2, 3], popxl.float32, name="x")
        w = popxl.variable(W_START, name="w")
        ops.var_updates.accumulate_(w, ops.host_load(x_h2d))
        w_d2h = popxl.d2h_stream(w.shape, w.dtype, name="w_out")
        ops.host_store(w_d2h, w)
    return ir, x_h2d, w, w_d2h


@pytest.fixture
def attached():
    ir, x_h2d, w, w_d2h = accumulating_model()
    with popxl.Session(ir, "ipu_model") as session:
        yield session, x_h2d, w, w_d2h


def assert_unchanged_then_runs(session, x_h2d, w, w_d2h, w_value=W_START):
    """Nothing changed: ``w`` still holds ``w_value``, and a valid run adds X to it."""
    runs = session.run_count
    np.testing.assert_array_equal(session.get_tensor_data(w), w_value)
    outputs = session.run({x_h2d: X})
    np.testing.assert_array_equal(outputs[w_d2h], w_value + X)
    assert session.run_count == runs + 1


def test_run_outside_the_context():
    ir, x_h2d, w, w_d2h = accumulating_model()
    session = popxl.Session(ir, "ipu_model")
    for attempt in (lambda: session.run({x_h2d: X}),
                    lambda: session.run_with_outputs({x_h2d: X}, session.create_host_outputs()),
                    session.weights_from_host, session.weights_to_host):
        with pytest.raises(ValueError, match="attached to its device: call it inside `with session:`"):
            attempt()
    assert session.run_count == 0
    assert (session.weights_from_host_count, session.weights_to_host_count) == (0, 0)
    with session:
        assert_unchanged_then_runs(session, x_h2d, w, w_d2h)


def test_run_after_leaving_the_context():
    ir, x_h2d, w, w_d2h = accumulating_model()
    with popxl.Session(ir, "ipu_model") as session:
        session.run({x_h2d: X})
    with pytest.raises(ValueError, match="inside `with session:`"):
        session.run({x_h2d: X})
    np.testing.assert_array_equal(session.get_tensor_data(w), W_START + X)


def test_missing_input_stream(attached):
    session, x_h2d, w, w_d2h = attached
    for given in (None, {}):
        with pytest.raises(ValueError, match=r"missing inputs for stream\(s\) 'x'. Expected exactly the "
                                             r"streams 'x'"):
            session.run(given)
    assert_unchanged_then_runs(*attached)


def test_unknown_input_key(attached):
    session, x_h2d, w, w_d2h = attached
    other = popxl.Ir()
    with other.main_graph:
        stranger = popxl.h2d_stream([2, 3], popxl.float32, name="stranger")
    with pytest.raises(ValueError, match=r"unexpected key\(s\) 'stranger'"):
        session.run({x_h2d: X, stranger: X})
    with pytest.raises(ValueError, match=r"unexpected key\(s\) 'x'. Expected exactly the streams 'x'"):
        session.run({"x": X})
    assert_unchanged_then_runs(*attached)


@pytest.mark.parametrize("shape", [(3, 2), (6,), (1, 2, 3), (2, 3, 1), ()])
def test_wrong_input_shape(attached, shape):
    session, x_h2d, w, w_d2h = attached
    with pytest.raises(ValueError) as error:
        session.run({x_h2d: np.zeros(shape, np.float32)})
    assert str(error.value) == ("Shape mismatch for input stream x:\nStream shape = (2, 3), therefore expected "
                                f"full global batch shape (2, 3). Got array shape = {shape}")
    assert_unchanged_then_runs(*attached)


def test_input_shape_with_transfers_and_replicas_names_the_layout():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x_h2d = popxl.h2d_stream([3], popxl.float32, name="x")

        def step():
            ops.host_load(x_h2d)

        ops.repeat(ir.create_graph(step), 4)
    ir.num_host_transfers = 4
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(ValueError, match=r"Dimension 0 \(2\) for the array provided for input stream x is not "
                                             r"large enough.\nIt should be at least of size num_host_transfers = 4"):
            session.run({x_h2d: np.zeros((2, 4, 3), np.float32)})
        session.run({x_h2d: np.zeros((4, 2, 3), np.float32)})


def test_float64_input_is_narrowed_to_float32(attached):
    session, x_h2d, w, w_d2h = attached
    outputs = session.run({x_h2d: X.astype(np.float64)})
    np.testing.assert_array_equal(outputs[w_d2h], W_START + X)
    assert outputs[w_d2h].dtype == np.float32


def test_float64_input_without_downcast_is_an_error(attached):
    session, x_h2d, w, w_d2h = attached
    with pytest.raises(TypeError, match="stream 'x' has dtype float64, expected float32"):
        session.run({x_h2d: X.astype(np.float64)}, downcast_inputs=False)
    assert_unchanged_then_runs(*attached)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.float16, np.bool_])
def test_wrong_input_dtype(attached, dtype):
    session, x_h2d, w, w_d2h = attached
    with pytest.raises(TypeError, match=rf"stream 'x' has dtype {np.dtype(dtype)}, expected float32"):
        session.run({x_h2d: np.zeros((2, 3), dtype)})
    assert_unchanged_then_runs(*attached)


def test_an_int64_input_narrows_to_an_int32_stream_only():
    ir = popxl.Ir()
    with ir.main_graph:
        i_h2d = popxl.h2d_stream([2], popxl.int32, name="i")
        i = ops.host_load(i_h2d)
        i_d2h = popxl.d2h_stream(i.shape, i.dtype, name="i_out")
        ops.host_store(i_d2h, i)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({i_h2d: np.array([3, -4], np.int64)})
        np.testing.assert_array_equal(outputs[i_d2h], [3, -4])
        assert outputs[i_d2h].dtype == np.int32
        with pytest.raises(TypeError, match="has dtype float64, expected int32"):
            session.run({i_h2d: np.array([3.0, 4.0])})


@pytest.mark.parametrize("shape", [(3, 2), (1,), (2, 3, 1)])
def test_run_with_outputs_of_the_wrong_shape(attached, shape):
    session, x_h2d, w, w_d2h = attached
    outputs = {w_d2h: np.zeros(shape, np.float32)}
    with pytest.raises(ValueError, match=rf"Shape mismatch for output stream w_out:\nStream shape = \(2, 3\), "
                                         rf".* Got array shape = {re.escape(str(shape))}"):
        session.run_with_outputs({x_h2d: X}, outputs)
    np.testing.assert_array_equal(outputs[w_d2h], 0)
    assert_unchanged_then_runs(*attached)


def test_run_with_outputs_of_the_wrong_dtype_or_streams(attached):
    session, x_h2d, w, w_d2h = attached
    with pytest.raises(TypeError, match="stream 'w_out' has dtype float64, expected float32"):
        session.run_with_outputs({x_h2d: X}, {w_d2h: np.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"missing outputs for stream\(s\) 'w_out'"):
        session.run_with_outputs({x_h2d: X}, {})
    with pytest.raises(TypeError, match=r"output for stream 'w_out' must be a NumPy array of shape "
                                        r"\(2, 3\), got list"):
        session.run_with_outputs({x_h2d: X}, {w_d2h: [[0.0] * 3] * 2})
    assert_unchanged_then_runs(*attached)


def test_run_with_outputs_writes_into_a_slice_of_a_larger_array(attached):
    session, x_h2d, w, w_d2h = attached
    history = np.zeros((3, 2, 3), np.float32)
    for step in range(3):
        session.run_with_outputs({x_h2d: X}, {w_d2h: history[step]})
    np.testing.assert_array_equal(history, [W_START + X, W_START + 2 * X, W_START + 3 * X])


def test_get_tensor_data_of_a_non_variable(attached):
    session, x_h2d, w, w_d2h = attached
    intermediate = next(op for op in session.ir.main_graph.ops if op.type == "host_load").outputs[0]
    with pytest.raises(TypeError, match=r"^Tensor\[x float32\[\S*\]\] is not of type Constant or Variable\. "
                                        r"get_tensor_data is not supported for this type\."):
        session.get_tensor_data(intermediate)
    with pytest.raises(TypeError, match=r"is not of type Constant or Variable.*It is ndarray"):
        session.get_tensors_data([w, W_START])
    assert_unchanged_then_runs(*attached)


def test_get_tensor_data_of_another_ir(attached):
    session, x_h2d, w, w_d2h = attached
    other = popxl.Ir()
    with other.main_graph:
        stranger = popxl.variable(W_START, name="stranger")
    with pytest.raises(ValueError, match="belongs to .* not to this session's"):
        session.get_tensor_data(stranger)
    with pytest.raises(ValueError, match="belongs to .* not to this session's"):
        session.write_variable_data(stranger, W_START)
    assert_unchanged_then_runs(*attached)


@pytest.mark.parametrize("data, error, message", [
    (W_START.astype(np.float64), TypeError, "has dtype float64, expected float32"),
    (W_START.astype(np.int32), TypeError, "has dtype int32, expected float32"),
    (W_START.T.copy(), ValueError, r"has shape \(3, 2\), expected \(2, 3\)"),
    (W_START[0], ValueError, r"has shape \(3,\), expected \(2, 3\)"),
])
def test_write_variable_data_with_the_wrong_dtype_or_shape(attached, data, error, message):
    session, x_h2d, w, w_d2h = attached
    transfers = session.weights_from_host_count
    with pytest.raises(error, match=rf"data for variable 'w' {message}"):
        session.write_variable_data(w, data)
    assert session.weights_from_host_count == transfers
    assert_unchanged_then_runs(*attached)


def test_write_variables_data_checks_everything_before_writing_anything():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.zeros(2, np.float32), name="a")
        b = popxl.variable(np.zeros(3, np.int32), name="b")
        k = popxl.constant(np.zeros(2, np.float32), name="k")
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(ValueError, match="variable 'b' has shape"):
            session.write_variables_data({a: np.ones(2, np.float32), b: np.ones(2, np.int32)})
        with pytest.raises(TypeError, match=r"^Tensor k is not of type Variable\. write_variable_data is not "
                                            r"supported for this type\. \(It is a tensor of kind 'constant'\.\)"):
            session.write_variables_data({a: np.ones(2, np.float32), k: np.ones(2, np.float32)})
        np.testing.assert_array_equal(session.get_tensor_data(a), [0.0, 0.0])
        np.testing.assert_array_equal(session.get_tensor_data(k), [0.0, 0.0])


def test_building_on_the_ir_after_a_session_owns_it():
    ir, x_h2d, w, w_d2h = accumulating_model()
    session = popxl.Session(ir, "ipu_model")
    before = [(g, g.ops, g.tensors) for g in ir.graphs]
    attempts = {
        "variable": lambda: popxl.variable(1.0),
        "constant": lambda: popxl.constant(1.0),
        "op": lambda: w + 1,
        "host_store": lambda: ops.host_store(w_d2h, w),
        "h2d_stream": lambda: popxl.h2d_stream([1], popxl.float32),
        "create_graph": lambda: ir.create_graph(lambda: None),
        "create_empty_graph": lambda: ir.create_empty_graph(),
        "remote_buffer": lambda: popxl.remote_buffer((2,), popxl.float32),
    }
    with ir.main_graph:
        for what, attempt in attempts.items():
            with pytest.raises(RuntimeError, match="owned by a Session and can no longer be changed"):
                attempt()
                pytest.fail(f"{what} changed an Ir that a Session owns")
    with pytest.raises(RuntimeError, match="owned by a Session"):
        ir.num_host_transfers = 2
    assert [(g, g.ops, g.tensors) for g in ir.graphs] == before
    with session:
        assert_unchanged_then_runs(session, x_h2d, w, w_d2h)


def replicated_counter():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        v = popxl.variable(np.array([1.0, 2.0], np.float32), name="v")
        ops.var_updates.accumulate_(v, popxl.constant(np.array([1.0, 1.0], np.float32)))
    return ir, v


def test_cpu_device_cannot_replicate():
    ir, v = replicated_counter()
    with pytest.raises(ValueError, match=r"the 'cpu' device does not support replication.*"
                                         r"replication_factor=2.*use 'ipu_model' or 'ipu_hw'"):
        popxl.Session(ir, "cpu")
    # The Ir was not taken: the simulated IPU model runs it.
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
    np.testing.assert_array_equal(session.get_tensor_data(v), [2.0, 3.0])
    assert popxl.Session(replicated_counter()[0], "ipu_hw").device.kind == "ipu_hw"


def test_cpu_device_has_no_remote_buffers():
    ir = popxl.Ir()
    with ir.main_graph:
        popxl.remote_buffer((2,), popxl.float32)
    with pytest.raises(ValueError, match="'cpu' device does not support remote buffers; use 'ipu_model'"):
        popxl.Session(ir, "cpu")


@pytest.mark.parametrize("name", ["gpu", "IPU_MODEL", ""])
def test_unknown_device_name(name):
    ir, *_ = accumulating_model()
    with pytest.raises(ValueError, match=rf"unknown device '{name}'; expected one of ipu_hw, ipu_model, cpu"):
        popxl.Session(ir, name)
    # The Ir was not taken: a Session on a valid device still works.
    assert popxl.Session(ir, "cpu").ir is ir


def test_session_needs_an_ir():
    with pytest.raises(TypeError, match="Session needs a popxl.Ir, got str"):
        popxl.Session("ir", "cpu")


# ----- invalid IRs are refused when the Session is made -----

def assert_refused_and_still_buildable(ir, *patterns):
    with pytest.raises(InvalidIrError) as error:
        popxl.Session(ir, "ipu_model")
    for pattern in patterns:
        assert pattern in str(error.value), str(error.value)
    assert ir._owner is None
    with ir.main_graph:
        popxl.constant(0.0)


def test_a_graph_that_calls_itself_through_another():
    ir = popxl.Ir()
    ping, pong = ir.create_empty_graph("ping"), ir.create_empty_graph("pong")
    with ir.main_graph:
        with ping:
            ping_call = ops.call_with_info(pong).op
        with pong:
            pong_call = ops.call_with_info(ping).op
        main_call = ops.call_with_info(ping).op
    assert_refused_and_still_buildable(ir, f"op {pong_call.name} (call in graph 'pong') closes a cycle",
                                       "(main -> ping -> pong -> ping)")
    assert main_call.graph is ir.main_graph and ping_call.graph is ping


def test_a_call_that_leaves_an_input_unconnected():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        graph = ir.create_graph(lambda a, b: a + b, x, x)
        call = ops.call_with_info(graph, x, check_inputs=False).op
    assert_refused_and_still_buildable(
        ir, f"op {call.name} (call of '{graph.name}') leaves graph input 'b' (float32[2]) unconnected")


def test_a_call_site_made_stale_by_a_new_graph_input():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        graph = ir.create_graph(lambda a: a * 2, x)
        call = ops.call_with_info(graph, x).op
        with graph:
            popxl.graph_input((3,), popxl.int32, "late")
    assert_refused_and_still_buildable(
        ir, f"op {call.name} (call of '{graph.name}') leaves graph input 'late' (int32[3]) unconnected")


def test_a_call_site_made_stale_by_a_new_graph_output():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        graph = ir.create_graph(lambda a: a * 2, x)
        call = ops.call_with_info(graph, x).op
        with graph:
            popxl.graph_output(popxl.constant(np.zeros((4,), np.float16)))
    assert_refused_and_still_buildable(
        ir, f"op {call.name} (call of '{graph.name}') has outputs ['float32[2]'] but the graph returns "
            "['float32[2]', 'float16[4]']")


def test_a_call_with_unchecked_inputs_of_the_wrong_shape():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        wide = popxl.variable(np.ones(3, np.float32), name="wide")
        graph = ir.create_graph(lambda a: a * 2, x)
        call = ops.call_with_info(graph, wide, check_inputs=False).op
    assert_refused_and_still_buildable(
        ir, f"op {call.name} (call of '{graph.name}') passes 'wide' (float32[3]) to graph input 'a', "
            "which expects float32[2]")


def test_writing_an_all_replicas_variable_of_grouped_replicas_is_not_supported():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        shared = popxl.variable(np.zeros(2, np.float32), name="shared", retrieval_mode="all_replicas")
        own = popxl.variable(np.zeros((2, 2), np.float32), name="own", retrieval_mode="all_replicas",
                             replica_grouping=ir.replica_grouping(group_size=1))
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(NotImplementedError, match="'shared' with retrieval_mode 'all_replicas'"):
            session.write_variable_data(shared, np.ones((2, 2), np.float32))
        np.testing.assert_array_equal(session.get_tensor_data(shared), np.zeros((2, 2)))
        # One replica per group: each replica's value is its group's, so writing is allowed.
        session.write_variable_data(own, np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
        np.testing.assert_array_equal(session.get_tensor_data(own), [[1.0, 2.0], [3.0, 4.0]])
