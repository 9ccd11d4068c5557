"""The listings of the Session chapter (12.1-12.7), completed and run, with their numbers checked.

The counters ``weights_from_host_count`` and ``weights_to_host_count`` make every host/device
transfer visible, so the comments of listings 12.5 and 12.6 become assertions.
"""
import numpy as np
import pytest

import popxl
import popxl.ops as ops


def addition_ir():
    """The model of listings 12.2 and 12.3: two inputs of shape [1] added together."""
    ir = popxl.Ir()
    with ir.main_graph:
        a_h2d = popxl.h2d_stream([1], popxl.float32, name="input0_stream")
        b_h2d = popxl.h2d_stream([1], popxl.float32, name="input1_stream")
        o = ops.add(ops.host_load(a_h2d, "a"), ops.host_load(b_h2d, "b"))
        o_d2h = popxl.d2h_stream(o.shape, o.dtype, name="output_stream")
        ops.host_store(o_d2h, o)
    return ir, a_h2d, b_h2d, o_d2h


def variable_plus_constant_ir(update_in_place=False):
    """Variable ``a`` = 3 and constant ``b`` = 1 (listing 12.4); ``o = a + b`` is stored.

    With ``update_in_place`` the graph also writes ``a + b`` back into ``a``, so every run changes
    the variable on the device (which makes host/device transfers observable in the values).
    """
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        a = popxl.variable(3, dtype=popxl.int32, name="a")
        b = popxl.constant(1, dtype=popxl.int32, name="b")
        o = a + b
        if update_in_place:
            ops.var_updates.copy_var_update_(a, o)
        o_d2h = popxl.d2h_stream(o.shape, o.dtype, name="output_stream")
        ops.host_store(o_d2h, o)
    return ir, a, b, o_d2h


def test_12_1_session_construction_and_run_without_inputs():
    ir, a, b, o_d2h = variable_plus_constant_ir()
    ir.num_host_transfers = 1
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    assert list(outputs) == [o_d2h]
    np.testing.assert_array_equal(outputs[o_d2h], np.array(4, np.int32))
    assert outputs[o_d2h].dtype == np.int32


def test_12_1_the_session_owns_the_ir():
    ir, a, b, o_d2h = variable_plus_constant_ir()
    session = popxl.Session(ir, "ipu_model")
    assert session.ir is ir
    with pytest.raises(RuntimeError, match="owned by a Session"):
        with ir.main_graph:
            popxl.variable(1.0)


def test_12_2_run_with_inputs():
    ir, a_h2d, b_h2d, o_d2h = addition_ir()
    session = popxl.Session(ir, "ipu_model")
    data_a = np.array([1.5], np.float32)
    data_b = np.array([2.25], np.float32)
    inputs = {a_h2d: data_a, b_h2d: data_b}
    with session:
        outputs = session.run(inputs)
    np.testing.assert_array_equal(outputs[o_d2h], data_a + data_b)
    assert outputs[o_d2h].shape == (1,)


def test_12_3_run_with_outputs_writes_into_the_given_arrays():
    ir, a_h2d, b_h2d, o_d2h = addition_ir()
    session = popxl.Session(ir, "ipu_model")
    data_a = np.array([1.5], np.float32)
    data_b = np.array([-4.0], np.float32)
    run_output = {o_d2h: np.empty(shape=[1]).astype(np.float32)}
    given = run_output[o_d2h]
    with session:
        session.run_with_outputs({a_h2d: data_a, b_h2d: data_b}, run_output)
    assert run_output[o_d2h] is given
    np.testing.assert_array_equal(given, data_a + data_b)


def test_12_3_create_host_outputs_gives_the_arrays_run_fills():
    ir, a_h2d, b_h2d, o_d2h = addition_ir()
    session = popxl.Session(ir, "ipu_model")
    outputs = session.create_host_outputs()
    assert list(outputs) == [o_d2h]
    assert outputs[o_d2h].shape == (1,) and outputs[o_d2h].dtype == np.float32
    with session:
        session.run_with_outputs({a_h2d: np.ones(1, np.float32), b_h2d: np.ones(1, np.float32)}, outputs)
    np.testing.assert_array_equal(outputs[o_d2h], [2.0])


def test_12_4_getting_and_setting_tensor_data():
    ir, a, b, o_d2h = variable_plus_constant_ir()
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
        np.testing.assert_array_equal(outputs[o_d2h], 4)

        a_data = session.get_tensor_data(a)
        b_data = session.get_tensor_data(b)
        assert a_data == np.array(3)
        assert b_data == np.array(1)

        session.write_variable_data(a, np.array(5).astype(np.int32))
        assert session.get_tensor_data(a) == np.array(5)
        # The device has the new value too: the next run adds the constant to 5.
        np.testing.assert_array_equal(session.run()[o_d2h], 6)


def test_12_4_get_tensors_data_and_write_variables_data():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.array([1.0, 2.0], np.float32), name="a")
        c = popxl.variable(np.array([[3]], np.int32), name="c")
        k = popxl.constant(np.array([7.0], np.float32), name="k")
    with popxl.Session(ir, "ipu_model") as session:
        datas = session.get_tensors_data([a, c, k])
        assert set(datas) == {a, c, k}
        np.testing.assert_array_equal(datas[a], [1.0, 2.0])
        np.testing.assert_array_equal(datas[c], [[3]])
        np.testing.assert_array_equal(datas[k], [7.0])
        transfers = session.weights_from_host_count
        session.write_variables_data({a: np.array([5.0, 6.0], np.float32), c: np.array([[9]], np.int32)})
        # Both writes reach the device in one transfer.
        assert session.weights_from_host_count == transfers + 1
        np.testing.assert_array_equal(session.get_tensor_data(a), [5.0, 6.0])
        np.testing.assert_array_equal(session.get_tensor_data(c), [[9]])


def counters(session):
    return session.weights_from_host_count, session.weights_to_host_count


def test_12_5_exactly_when_host_device_transfers_occur():
    """Listing 12.5, line by line. Each run adds the constant 1 to ``a`` on the device."""
    ir, a, b, o_d2h = variable_plus_constant_ir(update_in_place=True)
    some_new_np_data = np.array(10, np.int32)

    session = popxl.Session(ir, "ipu_model")
    assert counters(session) == (0, 0)

    # Allowed when detached, device weights will be updated on next context enter
    session.write_variable_data(a, some_new_np_data)
    assert counters(session) == (0, 0)
    assert session.get_tensor_data(a) == 10

    with session:
        assert counters(session) == (1, 0)
        # No weights_to_host as no `run` has invalidated the host weights yet
        a_data = session.get_tensor_data(a)
        assert counters(session) == (1, 0)
        assert a_data == 10

        outputs = session.run()
        assert counters(session) == (1, 0)
        assert outputs[o_d2h] == 11

        # No weights_to_host, is constant
        b_data = session.get_tensor_data(b)
        assert counters(session) == (1, 0)
        assert b_data == 1
        # Causes weights_to_host as host weights currently out-of-sync
        datas = session.get_tensors_data([a, b])
        assert counters(session) == (1, 1)
        assert datas[a] == 11 and datas[b] == 1

        # Performs weights_from_host
        session.write_variable_data(a, np.array(20, np.int32))
        assert counters(session) == (2, 1)

        # No weights_to_host, write_variable_data did not invalidate
        a_data = session.get_tensor_data(a)
        assert counters(session) == (2, 1)
        assert a_data == 20

        outputs = session.run()
        assert counters(session) == (2, 1)
        assert outputs[o_d2h] == 21

    # Leave context, causes detach and weights_to_host
    assert counters(session) == (2, 2)
    assert not session.is_attached

    # No weights_to_host as detached. Latest weights were already fetched due to
    # leaving context
    tensor_datas = session.get_tensors_data([a, b])
    assert counters(session) == (2, 2)
    assert tensor_datas[a] == 21 and tensor_datas[b] == 1


def test_12_5_detached_reads_return_the_host_values_without_transfers():
    ir, a, b, o_d2h = variable_plus_constant_ir(update_in_place=True)
    session = popxl.Session(ir, "ipu_model", weights_to_host_on_exit=False)
    with session:
        assert session.run()[o_d2h] == 4
    # Nothing was copied back on exit, so the host still holds the initial value.
    assert counters(session) == (1, 0)
    assert session.get_tensor_data(a) == 3
    assert counters(session) == (1, 0)
    # Constants never need the device.
    assert session.get_tensor_data(b) == 1


def test_12_5_the_device_keeps_its_values_between_runs():
    ir, a, b, o_d2h = variable_plus_constant_ir(update_in_place=True)
    with popxl.Session(ir, "ipu_model") as session:
        results = [int(session.run()[o_d2h]) for _ in range(3)]
        assert counters(session) == (1, 0)
    assert results == [4, 5, 6]
    assert session.get_tensor_data(a) == 6
    # Re-entering sends the host values (6) to the device again.
    with session:
        assert session.run()[o_d2h] == 7
    assert counters(session) == (2, 2)


def test_12_6_nested_session_contexts():
    ir, a, b, o_d2h = variable_plus_constant_ir(update_in_place=True)
    # Enter Ctxt 1, causes attach, weights_from_host
    with popxl.Session(ir, "ipu_model") as session:
        # Attach, weights_from_host
        assert session.is_attached
        assert counters(session) == (1, 0)

        # Enter Ctxt 2, still attached, no weights_from_host again
        with session:
            assert session.is_attached
            assert counters(session) == (1, 0)
            session.run()

        # Exit Ctxt 2, no detach or weights_to_host, as attached on enter
        assert session.is_attached
        assert counters(session) == (1, 0)

    # Exit Ctxt 1, causes detach and weights_to_host as detached on enter
    assert not session.is_attached
    assert counters(session) == (1, 1)
    assert session.get_tensor_data(a) == 4


def test_12_6_an_exception_leaves_the_context_detached_without_weights_to_host():
    ir, a, b, o_d2h = variable_plus_constant_ir(update_in_place=True)
    session = popxl.Session(ir, "ipu_model")
    with pytest.raises(KeyError):
        with session:
            session.run()
            raise KeyError("stop")
    assert not session.is_attached
    assert counters(session) == (1, 0)


class Linear(popxl.Module):
    """The layer of listing 12.7: loads its own input from a stream and stores its output."""

    def __init__(self, x_h2d_, y_d2h_):
        self.x_h2d = x_h2d_
        self.y_d2h = y_d2h_
        self.W = None
        self.b = None

    def build(self, x, out_features, bias=True):
        x = ops.host_load(self.x_h2d, "x")
        self.W = popxl.graph_input((x.shape[-1], out_features), popxl.float32, "W")
        y = x @ self.W
        if bias:
            self.b = popxl.graph_input((out_features,), popxl.float32, "b")
            y = y + self.b
        ops.host_store(self.y_d2h, y)
        return y


def test_12_7_num_host_transfers_with_a_repeat_op():
    repeat_count = 8
    ir = popxl.Ir()
    main = ir.main_graph
    with main:
        x_h2d = popxl.h2d_stream([2, 2], popxl.float32, name="x_stream")
        y_d2h = popxl.d2h_stream([2, 2], popxl.float32, name="y_stream")
        W_data = np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32)
        b_data = np.array([0.25, -3.0], np.float32)
        W = popxl.variable(W_data, name="W")
        b = popxl.variable(b_data, name="b")
        x = ops.init([2, 2], popxl.float32, "init")
        linear = Linear(x_h2d, y_d2h)
        linear_graph = ir.create_graph(linear, x, out_features=2)
        (o,) = ops.repeat(linear_graph, repeat_count, x, inputs_dict={linear.W: W, linear.b: b})
        o_d2h = popxl.d2h_stream(o.shape, o.dtype, name="o_stream")
        ops.host_store(o_d2h, o)
    ir.num_host_transfers = repeat_count

    assert [t.name for t in linear_graph.inputs] == ["x", "W", "b"]
    x_data = np.random.default_rng(0).random([repeat_count, 2, 2]).astype(np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        assert session.expected_inputs() == [x_h2d]
        outputs = session.run({x_h2d: x_data})

    expected = np.stack([x_data[i] @ W_data + b_data for i in range(repeat_count)])
    assert outputs[y_d2h].shape == (repeat_count, 2, 2)
    np.testing.assert_allclose(outputs[y_d2h], expected, rtol=1e-6)
    # The main graph stores once per run: the repeat's result goes to slice 0.
    np.testing.assert_allclose(outputs[o_d2h][0], expected[-1], rtol=1e-6)


def test_12_7_each_run_consumes_all_transfers_again():
    """Two host_loads per iteration of a 4-times repeat: 8 transfers of one stream per run."""
    ir = popxl.Ir()
    with ir.main_graph:
        x_h2d = popxl.h2d_stream([3], popxl.float32, name="x")
        total = popxl.variable(np.zeros(3, np.float32), name="total")

        def body(acc):
            first = ops.host_load(x_h2d)
            second = ops.host_load(x_h2d)
            return acc + first * second

        graph = ir.create_graph(body, total)
        (result,) = ops.repeat(graph, 4, total)
        ops.var_updates.copy_var_update_(total, result)
    ir.num_host_transfers = 8

    rng = np.random.default_rng(1)
    runs = [rng.standard_normal([8, 3]).astype(np.float32) for _ in range(2)]
    expected = np.zeros(3, np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        for data in runs:
            session.run({x_h2d: data})
            for i in range(4):
                expected = expected + data[2 * i] * data[2 * i + 1]
    np.testing.assert_allclose(session.get_tensor_data(total), expected, rtol=1e-5)


def test_12_5_input_shape_with_transfers_and_replicas():
    """The [num_host_transfers, replication_factor, *shape] layout of section 12.5: 7 transfers
    (a load and a store in each of 7 iterations) for 2 replicas of a (5, 9, 9) tensor."""
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x_h2d = popxl.h2d_stream([5, 9, 9], popxl.float32, name="x")
        y_d2h = popxl.d2h_stream([5, 9, 9], popxl.float32, name="y")

        def step():
            ops.host_store(y_d2h, ops.host_load(x_h2d) * 2)

        ops.repeat(ir.create_graph(step), 7)
    ir.num_host_transfers = 7
    data = np.random.default_rng(2).random((7, 2, 5, 9, 9)).astype(np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        assert session.create_host_outputs()[y_d2h].shape == (7, 2, 5, 9, 9)
        outputs = session.run({x_h2d: data})
    np.testing.assert_array_equal(outputs[y_d2h], data * 2)


def test_12_4_a_single_load_consumes_only_the_first_transfer():
    """The main graph runs once per ``run``: one host_load reads transfer 0 and the other
    transfers of the buffer are not consumed."""
    ir = popxl.Ir()
    with ir.main_graph:
        x_h2d = popxl.h2d_stream([2], popxl.float32, name="x")
        y = ops.host_load(x_h2d) + 1
        y_d2h = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_d2h, y)
    ir.num_host_transfers = 3
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({x_h2d: data})
    assert outputs[y_d2h].shape == (3, 2)
    np.testing.assert_array_equal(outputs[y_d2h][0], [1.0, 2.0])


def test_12_5_writing_one_variable_keeps_the_device_values_of_the_others():
    """After a run the host copy is stale: writing ``a`` first fetches the device weights, so the
    weights_from_host that follows does not put back an old value of ``c``."""
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.array([1.0], np.float32), name="a")
        c = popxl.variable(np.array([0.0], np.float32), name="c")
        ops.var_updates.accumulate_(c, a)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        session.run()
        assert counters(session) == (1, 0)
        session.write_variable_data(a, np.array([10.0], np.float32))
        assert counters(session) == (2, 1)
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(c), [12.0])
        np.testing.assert_array_equal(session.get_tensor_data(a), [10.0])


def test_12_4_returned_data_is_a_copy():
    ir, a, b, o_d2h = variable_plus_constant_ir()
    with popxl.Session(ir, "ipu_model") as session:
        data = session.get_tensor_data(a)
        data[...] = 100
        constant = session.get_tensor_data(b)
        constant_is_safe = not np.shares_memory(constant, b.data)
        assert session.get_tensor_data(a) == 3
        assert session.run()[o_d2h] == 4
    assert constant_is_safe


def test_12_4_write_variable_data_takes_a_python_number():
    ir, a, b, o_d2h = variable_plus_constant_ir()
    with popxl.Session(ir, "ipu_model") as session:
        session.write_variable_data(a, 41)
        assert session.get_tensor_data(a).dtype == np.int32
        assert session.run()[o_d2h] == 42


class TorchLike:
    """Stands in for a torch tensor that requires grad: NumPy may not read it until it is detached."""

    __module__ = "torch"

    def __init__(self, array, requires_grad=True):
        self.array, self.requires_grad = np.asarray(array), requires_grad

    def __array__(self, *args, **kwargs):
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad")
        return self.array

    def detach(self):
        return TorchLike(self.array, False)

    def cpu(self):
        return self

    def numpy(self):
        return np.asarray(self)


def test_torch_tensors_that_require_grad_are_detached_wherever_host_data_goes_in():
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(TorchLike(np.ones(2, np.float32)), name="w")
        c = popxl.constant(TorchLike(np.full(2, 10.0, np.float32)), name="c")
        x_stream = popxl.h2d_stream((2,), popxl.float32, name="x")
        out = popxl.d2h_stream((2,), popxl.float32, name="out")
        ops.host_store(out, ops.host_load(x_stream) + w + c)
    with popxl.Session(ir, "ipu_model") as session:
        session.write_variable_data(w, TorchLike(np.full(2, 2.0, np.float32)))
        result = session.run({x_stream: TorchLike(np.array([1.0, 3.0], np.float32))})[out]
    np.testing.assert_array_equal(result, [13.0, 15.0])


def test_a_memmap_is_a_variables_host_storage_and_receives_the_device_values(tmp_path):
    data = np.memmap(tmp_path / "w.bin", np.float32, "w+", shape=(2, 3))
    data[...] = np.arange(6, dtype=np.float32).reshape(2, 3)
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(data, name="w")
        ops.var_updates.accumulate_(w, popxl.constant(np.ones((2, 3), np.float32)))
        assert w.host_data is data  # not copied
        with pytest.raises(ValueError, match="must already be in C-ordered and aligned form"):
            popxl.variable(data.T, name="transposed")
        wide = np.memmap(tmp_path / "wide.bin", np.float64, "w+", shape=(2,))
        with pytest.raises(ValueError, match="the dtype None is not supported, as it requires downcasting the "
                                             "array's float64 into a new array: map the file with dtype float32"):
            popxl.variable(wide, name="wide")
        popxl.variable(wide, name="kept", downcast=False)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        session.weights_to_host()
        np.testing.assert_array_equal(data, np.arange(6).reshape(2, 3) + 1)
    data.flush()
    np.testing.assert_array_equal(np.fromfile(tmp_path / "w.bin", np.float32), np.arange(6) + 1)


def test_reading_a_memmap_variable_gives_its_memmap_with_the_device_values(tmp_path):
    data = np.memmap(tmp_path / "w.bin", np.float32, "w+", shape=(3,))
    data[...] = [1.0, 2.0, 3.0]
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(data, name="w")
        plain = popxl.variable(np.zeros(3, np.float32), name="plain")
        ops.var_updates.accumulate_(w, popxl.constant(np.full(3, 10.0, np.float32)))
    assert w._memmap_arr is data and plain._memmap_arr is None
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        read = session.get_tensor_data(w)
        assert read is data  # the file is the host's copy, as popxl returns it
        np.testing.assert_array_equal(read, [11.0, 12.0, 13.0])
        copy = session.get_tensor_data(plain)
        copy[...] = 5.0  # an in-memory variable's value is a copy: writing it changes nothing
        np.testing.assert_array_equal(session.get_tensor_data(plain), 0.0)


def test_a_read_only_memmap_variable_runs_but_is_never_written_back(tmp_path):
    np.save(tmp_path / "w.npy", np.array([1.0, 2.0], np.float32))
    data = np.load(tmp_path / "w.npy", mmap_mode="r")
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        w = popxl.variable(data, name="w")
        ops.var_updates.accumulate_(w, popxl.constant(np.array([10.0, 10.0], np.float32)))
        out = popxl.d2h_stream((2,), popxl.float32, name="out")
        ops.host_store(out, w)
    session = popxl.Session(ir, "ipu_model")
    with session:
        np.testing.assert_array_equal(session.run()[out], [11.0, 12.0])
        with pytest.raises(ValueError, match=r"Writing data from device to host is not possible as the `ir` "
                                             r"contains a read-only memmap: variable\(s\) 'w'"):
            session.get_tensor_data(w)
        np.testing.assert_array_equal(session.run()[out], [21.0, 22.0])
    # leaving the session writes nothing back, as popxl turns weights_to_host_on_exit off
    assert session.weights_to_host_count == 0
    np.testing.assert_array_equal(np.load(tmp_path / "w.npy"), [1.0, 2.0])


def test_weights_on_host_says_whether_reading_variables_needs_weights_to_host():
    ir, a, b, o_d2h = variable_plus_constant_ir(update_in_place=True)
    session = popxl.Session(ir, "ipu_model")
    assert session.weights_on_host
    with session:
        assert session.weights_on_host
        session.run()
        assert not session.weights_on_host
        session.get_tensor_data(a)
        assert session.weights_on_host and counters(session) == (1, 1)
        session.run()
    assert session.weights_on_host
