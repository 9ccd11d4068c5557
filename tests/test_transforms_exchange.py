"""merge_exchange, io_tile_exchange and decompose_sum: graph rewrites that leave the numbers alone."""
from contextlib import contextmanager

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from popxl import transforms
from workbench.export import to_json


def build_exchange(context, extra_compute: bool = False):
    """Load x from the host and a row from a remote buffer inside ``context``, add them outside."""
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream((3,), popxl.float32, name="x")
        out = popxl.d2h_stream((3,), popxl.float32, name="out")
        buffer = popxl.remote_buffer((3,), popxl.float32, entries=2)
        popxl.remote_variable(np.array([10.0, 20.0, 30.0], np.float32), buffer, offset=1, name="stored")
        with context():
            x = ops.host_load(x_stream)
            row = ops.remote_load(buffer, 1)
            if extra_compute:
                x = x * 2.0
        ops.host_store(out, x + row)
    return ir, x_stream, out


@contextmanager
def merged_in_any_order():
    with popxl.in_sequence(False), transforms.merge_exchange():
        yield


def run(ir, x_stream, out):
    with popxl.Session(ir, "ipu_model") as session:
        return session.run({x_stream: np.array([1.0, 2.0, 3.0], np.float32)})[out]


def transfers(ir):
    return [op for op in ir.main_graph.ops if op.type in ("host_load", "remote_load", "host_store", "multi_exchange")]


def test_merge_exchange_makes_the_transfers_made_inside_one_multi_exchange_and_changes_no_numbers():
    ir, x_stream, out = build_exchange(merged_in_any_order)
    np.testing.assert_array_equal(run(ir, x_stream, out), [11.0, 22.0, 33.0])
    merged, store = transfers(ir)
    assert [(d.type, d.inputs, d.outputs) for d in merged.attrs["descriptors"]] == [
        ("host_load", 1, 1), ("remote_load", 2, 1)]
    x, row = merged.outputs
    assert (x.name, row.name) == ("x", "remote_load") and x.producer is row.producer is merged
    assert [op.type for op in ir.main_graph.ops] == ["init", "init", "multi_exchange", "add", "host_store"]
    assert ir.get_all_h2d_streams() == {x_stream}
    assert "descriptors=(host_load.2 (host_load), remote_load" in str(merged)
    (view,) = [v for v in ir.main_graph._pb_graph.getOps() if v.opType() == "MultiExchange"]
    assert [t.id for t in view.output.tensors()] == ["x", "remote_load"]


def test_each_merge_is_its_own_op_and_shows_in_the_export():
    ir = popxl.Ir()
    with ir.main_graph:
        streams = [popxl.h2d_stream((2,), popxl.float32, name=f"in{i}") for i in range(3)]
        with transforms.merge_exchange():
            first = [ops.host_load(s) for s in streams[:2]]
        with transforms.merge_exchange():  # one transfer alone stays as it is
            second = ops.host_load(streams[2])
        total = first[0] + first[1] + second
    assert [op.type for op in ir.main_graph.ops] == ["init", "init", "multi_exchange", "init", "host_load", "add",
                                                      "add"]
    exported = [op["type"] for op in to_json(ir)["graphs"][0]["ops"]]
    assert exported == [op.type for op in ir.main_graph.ops]
    with popxl.Session(ir, "ipu_model") as session:
        data = {s: np.full(2, i + 1, np.float32) for i, s in enumerate(streams)}
        out = session.run(data)
    assert total.shape == (2,) and out == {}


def test_merge_exchange_only_merges_ops_of_the_current_graph():
    ir = popxl.Ir()
    with ir.main_graph:
        streams = [popxl.h2d_stream((2,), popxl.float32, name=f"x{i}") for i in range(2)]
        with transforms.merge_exchange():
            graph = ir.create_graph(lambda: ops.host_load(streams[0]) + ops.host_load(streams[1]))
            ops.call(graph)
    assert [op.type for op in graph.ops] == ["init", "host_load", "init", "host_load", "add"]


def test_transfers_that_need_each_others_results_are_not_merged():
    ir = popxl.Ir()
    with ir.main_graph:
        stream = popxl.h2d_stream((2,), popxl.float32, name="x")
        buffer = popxl.remote_buffer((2,), popxl.float32)
        with transforms.merge_exchange():
            ops.remote_store(buffer, 0, ops.host_load(stream))
    assert [op.type for op in ir.main_graph.ops] == ["init", "host_load", "remote_store"]


def test_a_merged_remote_store_is_restored_when_a_run_fails():
    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=1)
        stored = popxl.remote_variable(np.array([1.0, 2.0], np.float32), buffer, offset=0, name="stored")
        stream = popxl.h2d_stream((2,), popxl.float32, name="x")
        index = popxl.h2d_stream((), popxl.int32, name="index")
        with popxl.in_sequence(False), transforms.merge_exchange():
            x = ops.host_load(stream)
            ops.remote_store(buffer, 0, popxl.constant(np.array([5.0, 6.0], np.float32)))
        loaded = ops.remote_load(buffer, ops.host_load(index))  # an entry out of range fails at run time
        out = popxl.d2h_stream(loaded.shape, loaded.dtype, name="out")
        ops.host_store(out, loaded + x)
    assert [op.type for op in ir.main_graph.ops][:3] == ["init", "multi_exchange", "init"]
    with popxl.Session(ir, "ipu_model") as session:
        x_data = np.array([3.0, 4.0], np.float32)
        with pytest.raises(Exception, match="remote_load"):
            session.run({stream: x_data, index: np.array(5, np.int32)})
        np.testing.assert_array_equal(session.get_tensor_data(stored), [1.0, 2.0])
        result = session.run({stream: x_data, index: np.array(0, np.int32)})
        np.testing.assert_array_equal(result[out], [8.0, 10.0])
        np.testing.assert_array_equal(session.get_tensor_data(stored), [5.0, 6.0])


@contextmanager
def io_tile_exchange_in_an_ordered_block():
    with popxl.in_sequence(True), transforms.io_tile_exchange():
        yield


def test_io_tile_exchange_puts_the_transfers_on_io_tiles_and_merges_them():
    ir, x_stream, out = build_exchange(io_tile_exchange_in_an_ordered_block)
    np.testing.assert_array_equal(run(ir, x_stream, out), [11.0, 22.0, 33.0])
    merged, store = transfers(ir)
    assert merged.type == "multi_exchange" and merged.tile_set == "io" and store.tile_set == "compute"
    assert [op.tile_set for op in ir.main_graph.ops if op.type == "init"] == ["io", "io"]


def test_io_tile_exchange_refuses_compute_that_would_stop_the_overlap():
    with pytest.raises(RuntimeError, match=r"More than one Op remained after `io_tile_exchange`.*\n.*mul"):
        build_exchange(transforms.io_tile_exchange, extra_compute=True)


def test_io_tile_exchange_without_verification_allows_compute():
    ir, x_stream, out = build_exchange(lambda: transforms.io_tile_exchange(verify_overlap=False),
                                       extra_compute=True)
    np.testing.assert_array_equal(run(ir, x_stream, out), [12.0, 24.0, 36.0])


def test_io_tile_exchange_refuses_transfers_that_cannot_merge_into_one():
    ir = popxl.Ir()
    with ir.main_graph:
        stream = popxl.h2d_stream((2,), popxl.float32, name="x")
        buffer = popxl.remote_buffer((2,), popxl.float32)
        with pytest.raises(RuntimeError, match=r"More than one Op remained after `io_tile_exchange`.*\n"
                                               r"   host_load.2 \(host_load\)\n   remote_store.3 \(remote_store\)"):
            with transforms.io_tile_exchange():
                ops.remote_store(buffer, 0, ops.host_load(stream))  # the store needs the load's result


def test_remote_loads_on_io_tiles_at_an_offset_from_compute_tiles_merge_and_load_their_rows():
    """As in batch serialisation: the row index is a graph input on compute tiles, the loads run on IO tiles."""
    ir = popxl.Ir()
    ir._pb_ir.getSessionOptions().numIOTiles = 32
    with ir.main_graph:
        weights = popxl.remote_buffer((2,), popxl.float32, entries=2)
        biases = popxl.remote_buffer((2,), popxl.float32, entries=2)
        for row in (0, 1):
            popxl.remote_variable(np.array([1.0, 2.0], np.float32) + 2 * row, weights, row, name=f"w{row}")
            popxl.remote_variable(np.array([10.0, 20.0], np.float32) * (1 + 2 * row), biases, row, name=f"b{row}")

        def load_row(index: popxl.Tensor):
            with popxl.io_tiles(), transforms.merge_exchange(), popxl.in_sequence(False):
                w, b = ops.remote_load(weights, index), ops.remote_load(biases, index)
            return ops.io_tile_copy(w) + ops.io_tile_copy(b)

        graph = ir.create_graph(load_row, popxl.constant(0, popxl.int32))
        (row,) = ops.call(graph, popxl.variable(1, popxl.int32, name="index"))
        out = popxl.d2h_stream((2,), popxl.float32, name="out")
        ops.host_store(out, row)
    assert [op.type for op in graph.ops if op.type != "init"][:1] == ["multi_exchange"]
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[out], [3.0 + 30.0, 4.0 + 60.0])


def test_io_tile_exchange_does_not_count_init_ops():
    ir = popxl.Ir()
    with ir.main_graph:
        stream = popxl.h2d_stream((2,), popxl.float32, name="x")
        with transforms.io_tile_exchange():  # an init beside the one exchange: no RuntimeError
            ops.init((2,), popxl.float32)
            ops.host_load(stream)
    assert [(op.type, op.tile_set) for op in ir.main_graph.ops] == [("init", "io"), ("init", "io"),
                                                                     ("host_load", "io")]


def test_decompose_sum_returns_the_graph_unchanged():
    ir = popxl.Ir()
    with ir.main_graph:
        parts = [popxl.variable(np.full(2, i, np.float32)) for i in range(4)]
        total = parts[0] + parts[1] + parts[2] + parts[3]
        out = popxl.d2h_stream((2,), popxl.float32, name="out")
        ops.host_store(out, total)
    before = [str(op) for op in ir.main_graph.ops]
    assert transforms.decompose_sum(ir.main_graph) is ir.main_graph
    assert [str(op) for op in ir.main_graph.ops] == before
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run({})[out], [6.0, 6.0])
    with pytest.raises(TypeError, match="decompose_sum: expected a popxl.Graph"):
        transforms.decompose_sum(ir)
