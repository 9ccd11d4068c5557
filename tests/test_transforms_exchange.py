"""merge_exchange, io_tile_exchange and decompose_sum: graph annotations that leave the numbers alone."""
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
    return [op for op in ir.main_graph.ops if op.type in ("host_load", "remote_load", "host_store")]


def test_merge_exchange_groups_the_transfers_made_inside_and_changes_no_numbers():
    ir, x_stream, out = build_exchange(merged_in_any_order)
    np.testing.assert_array_equal(run(ir, x_stream, out), [11.0, 22.0, 33.0])
    load, remote, store = transfers(ir)
    assert load.attrs["merge_exchange"] == remote.attrs["merge_exchange"] == 1
    assert "merge_exchange" not in store.attrs
    assert "merge_exchange=1" in str(load)


def test_each_merge_is_its_own_group_and_shows_in_the_export():
    ir = popxl.Ir()
    with ir.main_graph:
        streams = [popxl.h2d_stream((2,), popxl.float32, name=f"in{i}") for i in range(3)]
        with transforms.merge_exchange():
            first = [ops.host_load(s) for s in streams[:2]]
        with transforms.merge_exchange():
            second = ops.host_load(streams[2])
        total = first[0] + first[1] + second
    groups = [op.attrs.get("merge_exchange") for op in ir.main_graph.ops]
    assert groups == [1, 1, 2, None, None]
    exported = {op["type"] + str(i): op["attrs"].get("merge_exchange")
                for i, op in enumerate(to_json(ir)["graphs"][0]["ops"])}
    assert exported["host_load0"] == 1 and exported["host_load2"] == 2
    assert total.shape == (2,)


def test_merge_exchange_only_marks_ops_of_the_current_graph():
    ir = popxl.Ir()
    with ir.main_graph:
        stream = popxl.h2d_stream((2,), popxl.float32, name="x")
        with transforms.merge_exchange():
            graph = ir.create_graph(lambda: ops.host_load(stream) + 1.0)
            ops.call(graph)
    (inner,) = [op for op in graph.ops if op.type == "host_load"]
    assert "merge_exchange" not in inner.attrs


@contextmanager
def io_tile_exchange_in_an_ordered_block():
    with popxl.in_sequence(True), transforms.io_tile_exchange():
        yield


def test_io_tile_exchange_puts_the_transfers_on_io_tiles_and_merges_them():
    ir, x_stream, out = build_exchange(io_tile_exchange_in_an_ordered_block)
    np.testing.assert_array_equal(run(ir, x_stream, out), [11.0, 22.0, 33.0])
    load, remote, store = transfers(ir)
    assert load.tile_set == remote.tile_set == "io" and store.tile_set == "compute"
    assert load.attrs["merge_exchange"] == remote.attrs["merge_exchange"]
    assert load not in remote.after and remote not in load.after  # unordered inside in_sequence(True)


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
        with pytest.raises(RuntimeError, match=r"More than one Op remained after `io_tile_exchange`.*merge "
                                               r"into 2 exchanges"):
            with transforms.io_tile_exchange():
                ops.remote_store(buffer, 0, ops.host_load(stream))  # the store needs the load's result


def test_io_tile_exchange_does_not_count_init_ops():
    ir = popxl.Ir()
    with ir.main_graph:
        stream = popxl.h2d_stream((2,), popxl.float32, name="x")
        with transforms.io_tile_exchange():  # an init beside the one exchange: no RuntimeError
            ops.init((2,), popxl.float32)
            ops.host_load(stream)
    assert [(op.type, op.tile_set) for op in ir.main_graph.ops] == [("init", "io"), ("host_load", "io")]


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
