"""Remote buffers and variables in Streaming Memory, and variables sharded over replicas."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops


def store_output(t, name="out"):
    stream = popxl.d2h_stream(t.shape, t.dtype, name=name)
    ops.host_store(stream, t)
    return stream


def test_remote_variable_is_loaded_updated_and_stored_back():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        buffer = popxl.remote_buffer((), popxl.int32, entries=1)
        x = popxl.remote_variable(np.array(1, np.int32), buffer, 0, name="x")
        loaded = ops.remote_load(buffer, 0)
        ops.remote_store(buffer, 0, loaded + 2)
    with popxl.Session(ir, "ipu_model") as session:
        assert session.get_tensor_data(x) == 1
        session.run()
        assert session.get_tensor_data(x) == 3
        session.run()
    assert session.get_tensor_data(x) == 5


def test_remote_variables_with_replica_groups_start_from_their_groups_data():
    ir = popxl.Ir(replication=4)
    with ir.main_graph, popxl.in_sequence():
        group = ir.replica_grouping(group_size=2)  # groups [0, 1] and [2, 3]
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=2)
        host = np.array([[1.0, 2.0], [10.0, 20.0]], np.float32)
        v = popxl.remote_variable(host, buffer, 1, replica_grouping=group, name="v")
        ops.remote_store(buffer, 1, ops.remote_load(buffer, 1) + 1)
        out = store_output(ops.remote_load(buffer, 1))
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()[out]
        np.testing.assert_array_equal(session.get_tensor_data(v), host + 1)
    np.testing.assert_array_equal(result, np.stack([host[0], host[0], host[1], host[1]]) + 1)


def test_replica_sharded_variable_gathers_back_to_the_full_tensor():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        v1 = popxl.variable(np.array([1.0, 2.0], np.float32), name="v1")
        v2, shard = popxl.replica_sharded_variable(np.array([3.0, 4.0], np.float32), name="v2")
        assert shard.shape == (1,) and shard.meta_shape == (2,)
        out = store_output(v1 + ops.collectives.replicated_all_gather(shard))
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()[out]
        np.testing.assert_array_equal(session.get_tensor_data(v2), [3.0, 4.0])
    np.testing.assert_array_equal(result, [[4.0, 6.0], [4.0, 6.0]])


def test_updating_shards_updates_the_whole_variable_with_padding():
    ir = popxl.Ir(replication=2)
    with ir.main_graph, popxl.in_sequence():
        data = np.arange(5, dtype=np.float32)  # 5 elements: shards of 3, the last one padded
        v, shard = popxl.replica_sharded_variable(data, name="v")
        ops.var_updates.copy_var_update_(shard, shard * 10)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), data * 10)
        session.write_variable_data(v, np.ones(5, np.float32))
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), np.full(5, 10.0))


def test_a_sharded_variable_keeps_in_place_updates_across_runs_like_an_on_chip_variable():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        data = np.arange(5 * 3 * 7 * 7, dtype=np.float32).reshape(5, 3, 7, 7)
        v, shard = popxl.replica_sharded_variable(data, name="v")
        ops.var_updates.accumulate_(shard, popxl.constant(np.ones(shard.shape, np.float32)))
    # popxl's shapes: the full variable has the data's shape, the shard is flat and padded.
    assert v.shape == (5, 3, 7, 7) and shard.shape == (184,) and shard.meta_shape == (5, 3, 7, 7)
    assert list(ir.main_graph.variables) == [v] and shard.name == "v_rts"
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), data + 2)
        session.run()
    np.testing.assert_array_equal(session.get_tensor_data(v), data + 3)
    with session:  # the shard is loaded again from the host values when weights go to the device
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), data + 4)


def test_a_tensor_offset_chooses_the_entry_at_run_time():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=3)
        for entry in range(3):
            popxl.remote_variable(np.full(2, entry, np.float32), buffer, entry, name=f"e{entry}")
        index = ops.host_load(popxl.h2d_stream((), popxl.int32, name="index"))
        out = store_output(ops.remote_load(buffer, index))
    stream = ir.get_all_h2d_streams().pop()
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run({stream: np.int32(2)})[out], [2.0, 2.0])
        with pytest.raises(RuntimeError, match="offset 3 is outside the 3 entries"):
            session.run({stream: np.int32(3)})
        np.testing.assert_array_equal(session.run({stream: np.int32(1)})[out], [1.0, 1.0])


def test_bad_remote_arguments_are_refused_clearly():
    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=2)
        with pytest.raises(ValueError, match=r"offset must be an int in 0..1"):
            ops.remote_load(buffer, 2)
        with pytest.raises(ValueError, match=r"^Tensor t does not match buffer\. The tensor is float32\[3\]"):
            ops.remote_store(buffer, 0, popxl.variable(np.zeros(3, np.float32)))
        with pytest.raises(ValueError, match="outside the 2 entries"):
            popxl.remote_variable(np.zeros(2, np.float32), buffer, 2, name="wrong")
        assert "wrong" not in [t.name for t in ir.main_graph.tensors]
        with pytest.raises(ValueError, match=r"^Entries must be a non-zero, positive integer\. Got 0$"):
            popxl.remote_buffer((2,), popxl.float32, entries=0)
    with pytest.raises(ValueError, match="'cpu' device does not support remote buffers; use 'ipu_model'"):
        popxl.Session(ir, "cpu")


def test_a_remote_variable_that_does_not_fill_an_entry_is_refused_by_the_session():
    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=1)
        popxl.remote_variable(np.zeros(3, np.float32), buffer, 0, name="wrong")  # popxl compares nothing here
    with pytest.raises(ValueError, match=r"^Tensor wrong does not match buffer\. .* hold 2"):
        popxl.Session(ir, "ipu_model")


def test_grouped_remote_variables_take_the_group_axis_from_the_data():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        group = ir.replica_grouping(group_size=2)
        data = np.arange(10, dtype=np.float32).reshape(2, 5)
        buffer = popxl.remote_buffer((5,), popxl.float32)
        w = popxl.remote_variable(data, buffer, 0, replica_grouping=group, name="w")
        v, shard = popxl.replica_sharded_variable(data, replica_grouping=group, retrieval_mode="all_replicas",
                                                  name="v")
        ops.var_updates.accumulate_(shard, popxl.constant(np.ones(shard.shape, np.float32)))
    assert w.shape == (5,) and v.shape == (5,) and v.shape_on_host == (2, 5) and shard.shape == (3,)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(w), data)
        np.testing.assert_array_equal(session.get_tensor_data(v), data[[0, 0, 1, 1]] + 1)


def test_any_remote_buffer_holding_one_shard_serves_a_remote_sharded_variable():
    replicas, n = 4, 10
    ir = popxl.Ir(replication=replicas)
    data = np.arange(n, dtype=np.float32)
    with ir.main_graph, popxl.in_sequence():
        buffer = popxl.remote_buffer((-(-n // replicas),), popxl.float32, 1)
        v = popxl.remote_replica_sharded_variable(data, buffer, 0, name="v")
        shard = ops.remote_load(buffer, 0)
        ops.remote_store(buffer, 0, shard * 2)
    assert v.shape == (n,) and buffer.meta_shape == (n,)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), data * 2)
    odd_ir = popxl.Ir(replication=replicas)
    with odd_ir.main_graph:  # popxl compares nothing here: 2 elements are no shard of 10 over 4 replicas
        odd = popxl.remote_replica_sharded_variable(np.zeros(n, np.float32), popxl.remote_buffer((2,), popxl.float32),
                                                    0, name="odd")
    assert odd.shape == (n,)
    with pytest.raises(ValueError, match=r"^Tensor odd does not match buffer\. The variable needs 3 elements on "
                                         r"each replica \(float32\[10\] in 4 shards\) but .* hold 2"):
        popxl.Session(odd_ir, "ipu_model")


def test_replica_sharded_buffer_shards_over_at_most_the_group():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        group = ir.replica_grouping(group_size=2)
        with pytest.raises(ValueError, match=r"sharding group size \(4\) must be less than or equal to the "
                                             r"replica group size \(2\)"):
            popxl.replica_sharded_buffer((2, 8), popxl.float32, group, shard_over=4)
        buffer = popxl.replica_sharded_buffer((2, 8), popxl.float32, group)
    assert buffer.tensor_shape == (4,) and buffer.meta_shape == (8,)


def test_a_remote_buffer_keeps_its_shape_and_dtype_and_knows_its_ir():
    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=3)
    for name, value in (("tensor_shape", (3,)), ("tensor_dtype", popxl.int32)):
        with pytest.raises(AttributeError, match=f"^can't set attribute '{name}'$"):
            setattr(buffer, name, value)
    assert (buffer.tensor_shape, buffer.tensor_dtype, buffer._current_ir) == ((2,), popxl.float32, ir)


def test_remote_buffer_ids_start_at_1():
    with popxl.Ir().main_graph:
        ids = [popxl.remote_buffer((2,), popxl.float32).remote_buffer_id for _ in range(2)]
    assert ids == [1, 2]


def test_a_loop_without_inputs_that_stores_into_a_remote_buffer_is_undone_when_the_run_fails():
    ir = popxl.Ir(replication=2)
    with ir.main_graph, popxl.in_sequence():
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=1)
        counter = popxl.remote_variable(np.zeros(2, np.float32), buffer, 0, name="counter")

        def count():
            ops.remote_store(buffer, 0, ops.remote_load(buffer, 0) + 1.0)
        ops.repeat(ir.create_graph(count), 3)
        index = ops.host_load(popxl.h2d_stream([], popxl.int32, name="index"))
        store_output(ops.remote_load(buffer, index))
    index_stream = ir.get_all_h2d_streams().pop()
    with popxl.Session(ir, "ipu_model") as session:
        session.run({index_stream: np.zeros(2, np.int32)})
        np.testing.assert_array_equal(session.get_tensor_data(counter), np.full(2, 3.0))
        with pytest.raises(Exception, match="outside"):
            session.run({index_stream: np.array([0, 5], np.int32)})  # replica 1 loads no entry 5
        np.testing.assert_array_equal(session.get_tensor_data(counter), np.full(2, 3.0))


def test_remote_load_and_store_take_data_on_io_tiles_with_an_offset_on_compute_tiles():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=2)
        v = popxl.variable(np.array([1.0, 2.0], np.float32), name="v")
        index = popxl.variable(np.array(0, np.int32), name="i") + 1  # computed on compute tiles
        with popxl.io_tiles():
            on_io = ops.io_tile_copy(v)
            ops.remote_store(buffer, index, on_io)
            loaded = ops.remote_load(buffer, index)
        assert (index.tile_set, on_io.tile_set, loaded.tile_set) == ("compute", "io", "io")
        out = store_output(ops.io_tile_copy(loaded) * 3)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[out], [3.0, 6.0])
