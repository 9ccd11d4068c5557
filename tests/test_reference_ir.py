"""The Ir class as its reference describes it (replica groupings, num_host_transfers, id, streams)
and the graph-building context (nested graphs, gcg, in_sequence, name_scope, ipu)."""
import functools

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.analysis import schedule
from workbench.analysis.schedule import dependencies

# ----- replica groupings -----


@pytest.mark.parametrize("stride, group_size, assignment", [
    (1, 2, [0, 0, 1, 1, 2, 2, 3, 3]),
    (1, 4, [0, 0, 0, 0, 1, 1, 1, 1]),
    (2, 4, [0, 1, 0, 1, 0, 1, 0, 1]),
    (4, 2, [0, 1, 2, 3, 0, 1, 2, 3]),
    (2, 2, [0, 1, 0, 1, 2, 3, 2, 3]),
    (1, 8, [0] * 8),
    (1, 1, list(range(8))),
])
def test_replica_grouping_assignments_for_8_replicas(stride, group_size, assignment):
    ir = popxl.Ir(replication=8)
    grouping = ir.replica_grouping(stride, group_size)
    assert grouping.assignment == assignment
    assert grouping.group_size == group_size
    assert grouping.num_groups == 8 // group_size
    assert grouping.stride == stride
    assert grouping.is_const
    assert repr(grouping) == (f"ReplicaGrouping(num_replicas=8, stride={stride}, "
                              f"group_size={group_size}, num_groups={8 // group_size})")


def test_replica_grouping_defaults():
    ir = popxl.Ir(replication=8)
    assert ir.replica_grouping().assignment == [0] * 8
    assert ir.replica_grouping(stride=2).group_size == 4
    assert ir.replica_grouping(stride=2).assignment == [0, 1, 0, 1, 0, 1, 0, 1]
    assert popxl.Ir().replica_grouping().assignment == [0]


def test_replica_grouping_from_assignments_with_a_non_constant_stride():
    ir = popxl.Ir(replication=8)
    grouping = ir.replica_grouping_from_assignments([0, 0, 1, 1, 0, 0, 1, 1])
    assert grouping.assignment == [0, 0, 1, 1, 0, 0, 1, 1]
    assert grouping.num_groups == 2
    assert grouping.group_size == 4
    assert not grouping.is_const
    with pytest.raises(NotImplementedError, match="no constant stride"):
        grouping.stride
    assert repr(grouping) == "ReplicaGrouping(assignment=[0, 0, 1, 1, 0, 0, 1, 1])"


def test_a_non_constant_grouping_maps_onto_the_constant_grouping_that_refines_it():
    ir = popxl.Ir(replication=8)
    grouping = ir.replica_grouping_from_assignments([0, 0, 1, 1, 0, 0, 1, 1])
    # pairs of neighbours: the coarsest strided grouping whose groups each lie inside one of ours
    assert grouping.const_rg == ir.replica_grouping(1, 2)
    assert grouping.to_device_map == [0, 1, 0, 1]  # group of ours holding each const_rg group
    assert grouping.to_host_map == [0, 1]  # first const_rg group inside each of ours
    for const_group, members in enumerate(grouping.const_rg.groups()):
        assert {grouping.assignment[r] for r in members} == {grouping.to_device_map[const_group]}
    scattered = ir.replica_grouping_from_assignments([0, 1, 1, 0, 0, 1, 1, 0])
    assert scattered.const_rg == ir.replica_grouping(1, 1)
    assert scattered.to_device_map == scattered.assignment and scattered.to_host_map == [0, 1]
    constant = ir.replica_grouping(2, 4)
    assert constant.const_rg is constant
    assert constant.to_device_map is None and constant.to_host_map is None


def test_replica_grouping_from_constant_assignments_has_a_stride():
    ir = popxl.Ir(replication=8)
    grouping = ir.replica_grouping_from_assignments([0, 1, 0, 1, 0, 1, 0, 1])
    assert grouping.is_const and grouping.stride == 2 and grouping.group_size == 4
    assert grouping == ir.replica_grouping(2, 4)


@pytest.mark.parametrize("stride, group_size, transposed", [
    (1, 2, [0, 1, 0, 1, 0, 1, 0, 1]),
    (2, 4, [0, 0, 1, 1, 2, 2, 3, 3]),
    (4, 2, [0, 0, 0, 0, 1, 1, 1, 1]),
    (1, 8, list(range(8))),
    (2, 2, [0, 0, 1, 1, 0, 0, 1, 1]),
])
def test_replica_grouping_transpose(stride, group_size, transposed):
    """Group k of the transpose holds the k-th member of every group."""
    ir = popxl.Ir(replication=8)
    grouping = ir.replica_grouping(stride, group_size)
    assert grouping.transpose().assignment == transposed
    assert grouping.transpose().num_groups == group_size
    assert grouping.transpose().transpose() == grouping


def test_replica_grouping_equality():
    ir = popxl.Ir(replication=4)
    assert ir.replica_grouping(1, 2) == ir.replica_grouping_from_assignments([0, 0, 1, 1])
    assert ir.replica_grouping(1, 2) != ir.replica_grouping(2, 2)
    assert popxl.Ir(replication=4).replica_grouping(1, 2) != ir.replica_grouping(1, 2)
    assert hash(ir.replica_grouping(2, 2)) == hash(ir.replica_grouping(2, 2))
    with pytest.raises(TypeError, match="cannot compare"):
        ir.replica_grouping() == [0, 0, 0, 0]


@pytest.mark.parametrize("stride, group_size, error", [
    (3, None, ValueError),
    (0, None, ValueError),
    (16, None, ValueError),
    (1, 3, ValueError),
    (1, 16, ValueError),
    (1, 0, ValueError),
    (2, 8, ValueError),
    (4, 4, ValueError),
    (1.0, 2, TypeError),
    (1, "2", TypeError),
])
def test_replica_grouping_invalid_arguments(stride, group_size, error):
    ir = popxl.Ir(replication=8)
    with pytest.raises(error):
        ir.replica_grouping(stride, group_size)


@pytest.mark.parametrize("assignment, message", [
    ([0, 0, 1, 1], "4 entries but the Ir has 8 replicas"),
    ([1, 1, 1, 1, 0, 0, 0, 0], "increasing order"),
    ([0, 2, 0, 2, 1, 1, 1, 1], "increasing order"),
    ([0, 0, 0, 1, 1, 1, 1, 1], "same size"),
])
def test_replica_grouping_from_invalid_assignments(assignment, message):
    ir = popxl.Ir(replication=8)
    with pytest.raises(ValueError, match=message):
        ir.replica_grouping_from_assignments(assignment)


def test_replica_groupings_cannot_be_constructed_directly():
    with pytest.raises(RuntimeError, match="ir.replica_grouping"):
        popxl.ReplicaGrouping()


# ----- settings and identity -----

def test_replication_factor():
    assert popxl.Ir().replication_factor == 1
    assert popxl.Ir(replication=4).replication_factor == 4
    ir = popxl.Ir()
    ir.replication_factor = 2
    assert ir.replication_factor == 2 and ir.instance_replication_factor == 2
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="positive int"):
            ir.replication_factor = bad
    assert ir.replication_factor == 2


def test_replication_from_popdist(monkeypatch):
    monkeypatch.setenv("POPDIST_NUM_TOTAL_REPLICAS", "4")
    ir = popxl.Ir(replication="popdist")
    assert ir.replication_factor == 4 and ir.instance_replication_factor == 4
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "2")
    monkeypatch.setenv("PMI_SIZE", "2")
    monkeypatch.setenv("PMI_RANK", "1")
    ir = popxl.Ir(replication="popdist")
    assert ir.replication_factor == 4 and ir.instance_replication_factor == 2


def test_num_host_transfers():
    ir = popxl.Ir()
    assert ir.num_host_transfers == 1
    ir.num_host_transfers = 8
    assert ir.num_host_transfers == 8
    for bad in (0, -2, 2.0, "8", False):
        with pytest.raises(ValueError, match="positive int"):
            ir.num_host_transfers = bad
    assert ir.num_host_transfers == 8


def test_settings_are_fixed_once_a_session_owns_the_ir():
    ir = popxl.Ir()
    popxl.Session(ir, "ipu_model")
    with pytest.raises(RuntimeError, match="owned by a Session"):
        ir.num_host_transfers = 2
    with pytest.raises(RuntimeError, match="Session owns the Ir"):
        ir.replication_factor = 2
    assert ir.num_host_transfers == 1 and ir.replication_factor == 1


def test_ir_id_equality_and_hash():
    first, second = popxl.Ir(), popxl.Ir()
    assert isinstance(first.id, int)
    assert first.id != second.id
    assert first == first and first != second
    assert len({first, second, first}) == 2
    assert repr(first) == f"Ir[id={first.id}]"
    with pytest.raises(TypeError, match="cannot compare"):
        first == 1


def test_graphs_of_the_ir():
    ir = popxl.Ir()
    main = ir.main_graph
    assert main is ir.main_graph and main.is_main and main.name == ""
    empty = ir.create_empty_graph("body")
    second = ir.create_empty_graph("body")
    assert empty.name == "body" and second.name != "body"
    assert ir.graphs == (main, empty, second)
    assert empty.ir is ir and empty.main_graph is main
    with pytest.raises(RuntimeError, match="cannot be constructed directly"):
        popxl.Graph()


def test_get_all_streams_lists_only_streams_that_are_used():
    ir = popxl.Ir()
    with ir.main_graph:
        loaded = popxl.h2d_stream([2], popxl.float32, name="loaded")
        popxl.h2d_stream([2], popxl.float32, name="unused_in")
        loaded_in_subgraph = popxl.h2d_stream([2], popxl.float32, name="loaded_in_subgraph")
        stored = popxl.d2h_stream([2], popxl.float32, name="stored")
        popxl.d2h_stream([2], popxl.float32, name="unused_out")
        x = ops.host_load(loaded)

        def body():
            ops.host_store(stored, ops.host_load(loaded_in_subgraph))

        ops.call(ir.create_graph(body))
        ops.host_store(stored, x)
    assert ir.get_all_h2d_streams() == {loaded, loaded_in_subgraph}
    assert ir.get_all_d2h_streams() == {stored}
    data = {loaded: np.ones(2, np.float32), loaded_in_subgraph: np.zeros(2, np.float32)}
    with popxl.Session(ir, "ipu_model") as session:
        assert set(session.expected_inputs()) == {loaded, loaded_in_subgraph}
        assert list(session.run(data)) == [stored]


def test_stream_names_are_unique_and_streams_know_their_spec():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.h2d_stream([2, 3], popxl.int32, name="data")
        b = popxl.h2d_stream([2, 3], popxl.int32, name="data")
        c = popxl.d2h_stream([1], popxl.float16)
    assert a.name == "data" and b.name != "data"
    assert a.shape == (2, 3) and a.dtype is popxl.int32
    assert a.spec == popxl.TensorSpec((2, 3), popxl.int32)
    assert c.name == "d2h_stream"


# ----- the graph-building context -----

def test_nested_graph_contexts_and_gcg():
    ir = popxl.Ir()
    main = ir.main_graph
    sub = ir.create_empty_graph("sub")
    with main:
        assert popxl.gcg() is main and popxl.get_current_graph() is main
        assert popxl.gmg() is main and popxl.gir() is ir
        with sub:
            assert popxl.gcg() is sub
            assert popxl.gmg() is main
            t = popxl.graph_input([2], popxl.float32, "t")
            assert t.graph is sub
        assert popxl.gcg() is main
        u = popxl.variable(np.zeros(2, np.float32))
        assert u.graph is main


def test_no_current_graph_outside_a_context():
    with pytest.raises(RuntimeError, match="no graph is being built"):
        popxl.gcg()
    with pytest.raises(RuntimeError, match="no graph is being built"):
        popxl.variable(1.0)


def test_create_graph_builds_in_the_new_graph_and_restores_the_context():
    ir = popxl.Ir()
    seen = []
    with ir.main_graph:
        x = popxl.variable(np.zeros(2, np.float32))
        graph = ir.create_graph(lambda t: seen.append(popxl.gcg()) or t + 1, x)
        assert popxl.gcg() is ir.main_graph
    assert seen == [graph]


class Update:
    """A callable object, as a layer library passes its module instances to create_graph."""

    def __call__(self, w: popxl.TensorByRef, g: popxl.Tensor):
        ops.scaled_add_(w, g, b=-0.5)


@pytest.mark.parametrize("build", [Update(), functools.partial(Update.__call__, Update())], ids=["object", "partial"])
def test_tensor_by_ref_is_read_from_a_callable_objects_call_and_a_partials_function(build):
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.ones(2, np.float32), name="w")
        graph = ir.create_graph(build, w.spec, w.spec)
        ops.call(graph, w, popxl.constant(np.ones(2, np.float32)))
    assert graph.name == ("Update" if isinstance(build, Update) else "partial")
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(w), [0.5, 0.5])


def in_place_hazard(ordered):
    """``x += 1`` created before ``x * 2`` reads the original ``x``: only ``in_sequence`` makes
    the read see the update."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.0, 2.0], np.float32), name="x")
        one = popxl.constant(np.float32(1), name="one")
        with popxl.in_sequence(ordered):
            bumped = ops.add_(x, one)
            doubled = x * 2
        d2h = popxl.d2h_stream(doubled.shape, doubled.dtype, name="doubled")
        ops.host_store(d2h, doubled)
    return ir, bumped.producer, doubled.producer, d2h


def test_in_sequence_orders_ops_in_creation_order():
    ir, write, read, d2h = in_place_hazard(ordered=True)
    assert read.after == (write,)
    order = schedule(ir.main_graph)
    assert order.index(write) < order.index(read)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[d2h], [4.0, 6.0])


def test_without_in_sequence_a_reader_of_the_old_value_runs_before_the_write():
    ir, write, read, d2h = in_place_hazard(ordered=False)
    assert read.after == ()
    order = schedule(ir.main_graph)
    assert order.index(read) < order.index(write)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[d2h], [2.0, 4.0])


def test_in_sequence_refuses_none_in_popxls_words():
    with pytest.raises(TypeError, match="^`None` cannot be passed to in_sequence"):
        with popxl.in_sequence(None):
            pass


def test_in_sequence_false_nested_in_true():
    """The inner block is unordered within, but as a whole follows A and precedes D."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.0, 2.0], np.float32), name="x")
        one = popxl.constant(np.float32(1), name="one")
        with popxl.in_sequence(True):
            a = x * 3
            with popxl.in_sequence(False):
                b = ops.add_(x, one)
                c = x * 2
            d = x + 0
        streams = [popxl.d2h_stream([2], popxl.float32, name=n) for n in "acd"]
        for stream, t in zip(streams, (a, c, d)):
            ops.host_store(stream, t)
    op_a, op_b, op_c, op_d = (t.producer for t in (a, b, c, d))
    assert op_b.after == (op_a,) and op_c.after == (op_a,)
    assert set(op_d.after) == {op_a, op_b, op_c}
    deps = dependencies(ir.main_graph)
    index = {op: i for i, op in enumerate(ir.main_graph.ops)}
    assert index[op_b] not in deps[index[op_c]]
    order = schedule(ir.main_graph)
    positions = [order.index(op) for op in (op_a, op_c, op_b, op_d)]
    assert positions == sorted(positions)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    np.testing.assert_array_equal(outputs[streams[0]], [3.0, 6.0])
    np.testing.assert_array_equal(outputs[streams[1]], [2.0, 4.0])
    np.testing.assert_array_equal(outputs[streams[2]], [2.0, 3.0])


def test_in_sequence_pass_orders_nothing_and_restarts_the_sequence():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        with popxl.in_sequence():
            first = x + 1
            second = x + 2
            with popxl.in_sequence("pass"):
                assert popxl.context.get_current_context().in_sequence is None
                free = x + 3
            third = x + 4
            fourth = x + 5
        after_block = x + 6
    assert second.producer.after == (first.producer,)
    assert free.producer.after == ()
    assert third.producer.after == ()
    assert fourth.producer.after == (third.producer,)
    assert after_block.producer.after == ()


def test_in_sequence_rejects_other_modes():
    ir = popxl.Ir()
    for mode in (None, 1, "yes"):
        with pytest.raises(TypeError, match="in_sequence.* mode must be True, False or 'pass'"):
            with ir.main_graph, popxl.in_sequence(mode):
                pass
    assert popxl.context.get_current_context().in_sequence is None


def test_in_sequence_may_be_entered_before_the_graph():
    ir = popxl.Ir()
    with popxl.in_sequence(), ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        first = x + 1
        second = x + 2
    assert second.producer.after == (first.producer,)


def test_in_sequence_orders_each_graph_built_inside_it():
    """The mode applies to ops created in any graph; each graph keeps its own order."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        x = popxl.variable(np.ones(2, np.float32))
        first = x + 1
        graph = ir.create_graph(lambda t: (t + 1, t * 2), x)
        second = x + 2
    add, mul = graph.ops
    assert add.after == () and mul.after == (add,)
    assert second.producer.after == (first.producer,)


def test_in_sequence_orders_in_place_updates_inside_subgraphs():
    def read_after_write(t):
        ops.add_(t, popxl.constant(np.float32(1)))
        return t * 2

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.0, 2.0], np.float32))
        unordered = ir.create_graph(read_after_write, x)
        with popxl.in_sequence():
            ordered = ir.create_graph(read_after_write, x)
        (a,) = ops.call(unordered, x)
        (b,) = ops.call(ordered, x)
        streams = [popxl.d2h_stream([2], popxl.float32, name=n) for n in "ab"]
        ops.host_store(streams[0], a)
        ops.host_store(streams[1], b)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    np.testing.assert_array_equal(outputs[streams[0]], [2.0, 4.0])
    np.testing.assert_array_equal(outputs[streams[1]], [4.0, 6.0])


def test_name_scope_prefixes_ops_and_tensors():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        with popxl.name_scope("layer1"):
            y = x + 1
            with popxl.name_scope("inner"):
                z = y * 2
                w = popxl.variable(np.ones(2, np.float32), name="w")
        v = z - 1
    assert y.name.startswith("layer1/") and y.producer.name.startswith("layer1/")
    assert z.name.startswith("layer1/inner/") and z.producer.name.startswith("layer1/inner/")
    assert w.name == "layer1/inner/w"
    assert "/" not in v.name and "/" not in v.producer.name
    assert x.name == "x"


def test_ipu_placement_is_recorded_on_ops_and_tensors():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        with popxl.ipu(1):
            w = popxl.variable(np.ones(2, np.float32), name="w")
            y = x.copy_to_ipu(1, 0) + w
            with popxl.ipu(2):
                z = ops.ipu_copy(y, 2) * 2
            u = z.copy_to_ipu(1) + 1
        v = ops.ipu_copy(u, 0) - 1
        with pytest.raises(ValueError, match="lives on IPU 1 but the op runs on IPU 0"):
            u - 1
    assert x.ipu == 0 and w.ipu == 1
    assert (y.producer.ipu, y.ipu) == (1, 1)
    assert (z.producer.ipu, z.ipu) == (2, 2)
    assert (u.producer.ipu, v.producer.ipu) == (1, 0)
    with pytest.raises(ValueError, match="non-negative int"):
        with popxl.ipu(-1):
            pass


def test_a_session_needs_enough_ipus_for_the_placement():
    ir = popxl.Ir(replication=2)
    with ir.main_graph, popxl.ipu(3):
        popxl.variable(np.ones(2, np.float32)) + 1
    session = popxl.Session(ir, "ipu_model")
    assert session.device.num_ipus >= 8
    cpu_ir = popxl.Ir()
    with cpu_ir.main_graph, popxl.ipu(1):
        popxl.variable(np.ones(2, np.float32)) + 1
    with pytest.raises(ValueError, match="needs 2 IPUs"):
        popxl.Session(cpu_ir, "cpu")


def test_ensure_tensor_makes_a_constant_of_the_tensors_dtype_as_dunder_operators_do():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.int32(1))
        b = popxl.variable(np.float32(2))
        assert a._ensure_tensor(b) is b
        three = a._ensure_tensor(3.7)
        assert isinstance(three, popxl.tensor.Constant) and three.dtype == popxl.int32
        assert a._ensure_tensor(3, popxl.float16).dtype == popxl.float16
        with pytest.raises(ValueError, match="empty value"):
            a._ensure_tensor([])
