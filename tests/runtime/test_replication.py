"""Replicas, replica groups and collectives: every result equals the NumPy reduction over the group."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.runtime.replication.replicas import ReplicaExecutionError
from support.faulty_ops import exploding_op  # noqa: F401  (a fixture)

R = 4


def run_replicated(build, data, replicas=R, device="ipu_model"):
    """Build ``build(x) -> tensor`` over a per-replica input and return the per-replica outputs."""
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        stream = popxl.h2d_stream(data.shape[1:], popxl.dtype.as_dtype(data.dtype), name="x")
        y = build(ops.host_load(stream))
        out = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(out, y)
    with popxl.Session(ir, device) as session:
        return session.run({stream: data})[out]


def per_replica(shape, replicas=R, seed=0):
    return np.random.default_rng(seed).standard_normal((replicas, *shape)).astype(np.float32)


@pytest.mark.parametrize("op, reduce", [("add", np.sum), ("mean", np.mean), ("max", np.max),
                                        ("min", np.min), ("mul", np.prod)])
def test_all_reduce_over_all_replicas(op, reduce):
    data = per_replica((3, 2))
    result = run_replicated(lambda x: ops.collectives.replicated_all_reduce(x, op=op), data)
    for replica in range(R):
        np.testing.assert_array_equal(result[replica], reduce(data, axis=0))


@pytest.mark.parametrize("replicas", [3, 8, 16])
@pytest.mark.parametrize("op, reduce", [("add", np.sum), ("mean", np.mean)])
@pytest.mark.parametrize("dtype, shape", [(np.float32, (3, 300)), (np.float64, (3, 300)), (np.float32, (1,))])
def test_float_all_reduce_of_many_replicas_has_the_bits_of_numpys_reduction_of_the_stack(replicas, op, reduce, dtype,
                                                                                          shape):
    # Magnitudes far apart, so that any other order of the additions changes the last bits (NumPy adds
    # the rows of a stack in order, but single elements pairwise).
    rng = np.random.default_rng(replicas)
    data = (rng.standard_normal((replicas, *shape)) * 10.0 ** rng.integers(-6, 7, (replicas, *shape))).astype(dtype)
    result = run_replicated(lambda x: ops.collectives.replicated_all_reduce(x, op=op), data, replicas)
    expected = reduce(data, axis=0)
    for replica in range(replicas):
        assert result[replica].dtype == dtype
        assert result[replica].tobytes() == expected.tobytes()


@pytest.mark.parametrize("replicas, stride, group_size", [(4, 1, 2), (4, 2, 2), (8, 2, 4), (8, 4, 2), (8, 1, 8)])
def test_grouped_all_reduce_reduces_within_each_group_only(replicas, stride, group_size):
    data = per_replica((5,), replicas)

    def build(x):
        group = popxl.gir().replica_grouping(stride=stride, group_size=group_size)
        return ops.collectives.replicated_all_reduce(x, group=group)

    result = run_replicated(build, data, replicas)
    assignment = popxl.Ir(replication=replicas).replica_grouping(stride, group_size).assignment
    for replica in range(replicas):
        members = [r for r, g in enumerate(assignment) if g == assignment[replica]]
        np.testing.assert_array_equal(result[replica], np.sum(data[members], axis=0))


def test_in_place_all_reduce_updates_its_input():
    data = per_replica((2,))
    result = run_replicated(lambda x: ops.collectives.replicated_all_reduce_(x + 0, op="add"), data)
    np.testing.assert_array_equal(result, np.broadcast_to(data.sum(axis=0), data.shape))


def test_all_gather_concat_and_new_axis():
    data = per_replica((2, 3))
    concat = run_replicated(lambda x: ops.collectives.replicated_all_gather(x, axis=1), data)
    stacked = run_replicated(lambda x: ops.collectives.replicated_all_gather(x, output_shape="new_axis"), data)
    for replica in range(R):
        np.testing.assert_array_equal(concat[replica], np.concatenate(list(data), axis=1))
        np.testing.assert_array_equal(stacked[replica], data)


def test_reduce_scatter_gives_each_replica_its_padded_shard():
    data = per_replica((7,))  # 7 elements over 4 replicas: shards of 2, zero-padded
    result = run_replicated(lambda x: ops.collectives.replicated_reduce_scatter(x), data)
    padded = np.concatenate([data.sum(axis=0), np.zeros(1, np.float32)])
    for replica in range(R):
        np.testing.assert_array_equal(result[replica], padded[2 * replica: 2 * replica + 2])


def test_sharded_slice_then_gather_round_trips_to_the_original_shape():
    same = np.broadcast_to(per_replica((3, 3), replicas=1), (R, 3, 3)).copy()
    gather = lambda x: ops.collectives.replicated_all_gather(ops.collectives.replica_sharded_slice(x))
    np.testing.assert_array_equal(run_replicated(gather, same), same)
    # With different data each replica contributes its own shard (9 elements: shards of 3, padded).
    data = per_replica((3, 3))
    shards = [np.concatenate([data[r].reshape(-1), np.zeros(3, np.float32)])[3 * r: 3 * r + 3]
              for r in range(R)]
    expected = np.concatenate(shards)[:9].reshape(3, 3)
    for replica_result in run_replicated(gather, data):
        np.testing.assert_array_equal(replica_result, expected)


def test_replicated_slice_keeps_each_replicas_part():
    data = per_replica((8, 2))
    result = run_replicated(lambda x: ops.collectives.replicated_slice(x, axis=0), data)
    for replica in range(R):
        np.testing.assert_array_equal(result[replica], data[replica][2 * replica: 2 * replica + 2])


def test_replicated_slice_drops_an_axis_split_into_parts_of_length_one():
    data = per_replica((R, 5, 3))
    result = run_replicated(lambda x: ops.collectives.replicated_slice(x, axis=0), data)
    for replica in range(R):
        assert result[replica].shape == (5, 3)
        np.testing.assert_array_equal(result[replica], data[replica][replica])


def test_collectives_refuse_groupings_without_constant_stride():
    ir = popxl.Ir(replication=6)
    with ir.main_graph:
        x = popxl.variable(np.zeros(2, np.float32))
        group = ir.replica_grouping_from_assignments([0, 1, 0, 0, 1, 1])
        with pytest.raises(ValueError, match="constant stride"):
            ops.collectives.replicated_all_reduce(x, group=group)
        assert len(ir.main_graph.ops) == 0


def test_cpu_refuses_replication_and_names_the_devices_to_use():
    ir = popxl.Ir(replication=2)
    with pytest.raises(ValueError, match="'ipu_model' or 'ipu_hw'"):
        popxl.Session(ir, "cpu")


def test_grouped_variables_start_from_their_groups_data_and_read_back_per_group():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        group = ir.replica_grouping(stride=2, group_size=2)  # groups [0, 2] and [1, 3]
        v = popxl.variable(np.array([[1.0, 1.0], [10.0, 10.0]], np.float32), replica_grouping=group)
        everywhere = popxl.variable(np.zeros((2, 2), np.float32), replica_grouping=group,
                                    retrieval_mode="all_replicas", name="everywhere")
        index = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="replica_data"))
        ops.var_updates.accumulate_(v, index)
        ops.var_updates.accumulate_(everywhere, index)
    data = np.arange(8, dtype=np.float32).reshape(4, 2)
    with popxl.Session(ir, "ipu_model") as session:
        assert session.get_tensor_data(v).shape == (2, 2)
        session.run({ir.get_all_h2d_streams().pop(): data})
        one_per_group = session.get_tensor_data(v)
        all_replicas = session.get_tensor_data(everywhere)
    # one_per_group reads the first replica of each group: replica 0 for group 0, replica 1 for group 1.
    np.testing.assert_array_equal(one_per_group, np.array([[1.0, 1.0], [10.0, 10.0]]) + data[[0, 1]])
    np.testing.assert_array_equal(all_replicas, data)


def test_a_failure_in_replica_3_ends_the_run_names_replica_and_op_and_keeps_weights(exploding_op):
    from workbench.ops.registry import apply

    ir = popxl.Ir(replication=4)
    with ir.main_graph, popxl.in_sequence():
        w = popxl.variable(np.zeros(2, np.float32), name="w")
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        ops.var_updates.accumulate_(w, x)
        y = apply("test_explode", x)
        total = ops.collectives.replicated_all_reduce(y)
        out = popxl.d2h_stream(total.shape, total.dtype, name="total")
        ops.host_store(out, total)
    stream = ir.get_all_h2d_streams().pop()
    bad = np.ones((4, 2), np.float32)
    bad[3] = -1
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(ReplicaExecutionError, match=r"replica 3 failed in op .*test_explode") as caught:
            session.run({stream: bad})
        assert caught.value.replica == 3 and caught.value.op.type == "test_explode"
        np.testing.assert_array_equal(session.get_tensor_data(w), np.zeros(2))
        good = np.ones((4, 2), np.float32)
        np.testing.assert_array_equal(session.run({stream: good})[out], np.full((4, 2), 4.0))
        np.testing.assert_array_equal(session.get_tensor_data(w), np.ones(2))


def _branching_collectives(else_has_other_collective: bool):
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        flag = ops.host_load(popxl.h2d_stream([], popxl.bool, name="flag"))
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        then_graph = ir.create_graph(lambda t: ops.collectives.replicated_all_reduce(t), x)
        if else_has_other_collective:
            else_graph = ir.create_graph(lambda t: ops.collectives.replicated_all_reduce(t, op="max"), x)
        else:
            else_graph = ir.create_graph(lambda t: t * 2, x)
        (y,) = ops.conditional(flag, then_graph, else_graph, [x], [x])
        out = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(out, y)
    flags = np.array([True, True, True, False])
    return ir, {s.name: s for s in ir.get_all_h2d_streams()}, flags


@pytest.mark.parametrize("else_has_other_collective, message", [
    (False, "finished the run without reaching it"),
    (True, "reached different collectives"),
])
def test_replicas_that_miss_a_collective_raise_instead_of_hanging(else_has_other_collective, message):
    ir, streams, flags = _branching_collectives(else_has_other_collective)
    data = np.ones((4, 2), np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(RuntimeError, match=message):
            session.run({streams["flag"]: flags, streams["x"]: data})
        result = session.run({streams["flag"]: np.ones(4, bool), streams["x"]: data})
    np.testing.assert_array_equal(result[ir.get_all_d2h_streams().pop()], np.full((4, 2), 4.0))


def test_scalar_variables_of_several_groups_read_back_one_value_per_group():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        group = ir.replica_grouping(stride=1, group_size=2)  # groups [0, 1] and [2, 3]
        v = popxl.variable(np.array([3, 7], np.int32), replica_grouping=group, name="offset")
        everywhere = popxl.variable(np.array([0, 0], np.int32), replica_grouping=group,
                                    retrieval_mode="all_replicas", name="everywhere")
        ops.var_updates.copy_var_update_(v, v + 1)
        ops.var_updates.copy_var_update_(everywhere, v * 2)
    with popxl.Session(ir, "ipu_model") as session:
        assert session.get_tensor_data(v).shape == (2,)
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), np.array([4, 8]))
        np.testing.assert_array_equal(session.get_tensor_data(everywhere), np.array([6, 6, 14, 14]))
    np.testing.assert_array_equal(session.get_tensor_data(v), np.array([4, 8]))


@pytest.mark.parametrize("stride, group_size", [(1, 2), (2, 2), (1, 4), (1, 1)])
def test_grouped_variables_round_trip_through_write_and_read(stride, group_size):
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        group = ir.replica_grouping(stride=stride, group_size=group_size)
        shape = (group.num_groups, 3) if group.num_groups > 1 else (3,)
        v = popxl.variable(np.zeros(shape, np.float32), replica_grouping=group, name="v")
        seen = popxl.variable(np.zeros((group.num_groups, 3) if group.num_groups > 1 else (3,), np.float32),
                              replica_grouping=group, retrieval_mode="all_replicas", name="seen")
        ops.var_updates.copy_var_update_(seen, v)
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    with popxl.Session(ir, "ipu_model") as session:
        session.write_variable_data(v, values)
        np.testing.assert_array_equal(session.get_tensor_data(v), values)
        session.run()
        per_replica = session.get_tensor_data(seen)
    assert per_replica.shape == (4, 3)
    for replica, group_index in enumerate(group.assignment):
        expected = values[group_index] if group.num_groups > 1 else values
        np.testing.assert_array_equal(per_replica[replica], expected)
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(ValueError, match=r"has shape \(3, 3\), expected"):
            session.write_variable_data(v, np.zeros((3, 3), np.float32))
        np.testing.assert_array_equal(session.get_tensor_data(v), np.zeros(shape))


def test_replica_threads_end_when_the_session_detaches():
    import threading

    data = per_replica((2,))
    before = threading.active_count()
    run_replicated(lambda x: ops.collectives.replicated_all_reduce(x), data)
    for thread in threading.enumerate():
        if thread.name.startswith("replica"):
            thread.join(timeout=5)
    assert threading.active_count() <= before


def test_local_all_reduce_keeps_each_replicas_own_value():
    data = per_replica((3,))
    result = run_replicated(lambda x: ops.collectives.replicated_all_reduce(x, op="local"), data)
    np.testing.assert_array_equal(result, data)
