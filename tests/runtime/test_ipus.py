"""Several IPUs per replica: placement, copies between IPUs, and the IPUs a session needs."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.ir.device import Device


def test_a_two_stage_pipeline_inside_a_repeat_matches_numpy():
    steps = 4
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2, 3], popxl.float32, name="x")
        y_stream = popxl.d2h_stream([2, 2], popxl.float32, name="y")
        with popxl.ipu(0):
            w0 = popxl.variable(np.full((3, 3), 0.5, np.float32), name="w0")
        with popxl.ipu(1):
            w1 = popxl.variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w1")

        def step(a: popxl.Tensor, b: popxl.Tensor):
            with popxl.ipu(0):
                h = ops.relu(ops.host_load(x_stream) @ a)
            with popxl.ipu(1):
                y = ops.ipu_copy(h, 1) @ ops.ipu_copy(b, 1)
                ops.host_store(y_stream, y)

        with popxl.ipu(0):
            body = ir.create_graph(step, w0, w1.copy_to_ipu(0, 1))
        with popxl.ipu(0):
            ops.repeat(body, steps, w0, w1.copy_to_ipu(0, 1))
    ir.num_host_transfers = steps
    data = np.random.default_rng(1).standard_normal((steps, 2, 3)).astype(np.float32)
    with popxl.Session(ir, "ipu_hw") as session:
        result = session.run({x_stream: data})[y_stream]
    w0_np, w1_np = np.full((3, 3), 0.5, np.float32), np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(result, np.stack([np.maximum(d @ w0_np, 0) @ w1_np for d in data]))
    assert {op.ipu for op in body.ops} == {0, 1}


def test_using_a_tensor_on_another_ipu_names_both_ipus_and_adds_nothing():
    ir = popxl.Ir()
    with ir.main_graph:
        with popxl.ipu(1):
            a = popxl.variable(np.ones(2, np.float32), name="a")
        before = len(ir.main_graph.ops)
        with pytest.raises(ValueError, match=r"'a' lives on IPU 1 but the op runs on IPU 0"):
            ops.add(a, a)
        assert len(ir.main_graph.ops) == before
        with pytest.raises(ValueError, match="lives on IPU 1, not on the given source IPU 0"):
            ops.ipu_copy(a, 0, source=0)


def test_a_session_refuses_an_ir_needing_more_ipus_than_the_device_has():
    ir = popxl.Ir(replication=4)
    with ir.main_graph, popxl.ipu(1):
        popxl.variable(np.ones(2, np.float32))
    small_pod = Device("ipu_hw", num_ipus=4)
    with pytest.raises(ValueError, match=r"needs 8 IPUs \(2 per replica x 4 replicas\) but the 'ipu_hw' "
                                         r"device has 4"):
        popxl.Session(ir, small_pod)
    popxl.Session(ir, Device("ipu_hw", num_ipus=8))


def test_the_ipu_model_is_sized_from_the_ir_and_warns_rather_than_refuses_when_large():
    ir = popxl.Ir(replication=3)
    with ir.main_graph, popxl.ipu(1):
        popxl.variable(np.ones(2, np.float32))
    assert popxl.Session(ir, "ipu_model").device.num_ipus == 8  # 2 per replica x 3, to a power of two
    ir = popxl.Ir(replication=128)
    with ir.main_graph:
        x = popxl.variable(np.float32(1), name="x")
        stream = popxl.d2h_stream((), popxl.float32, name="out")
        ops.host_store(stream, ops.collectives.replicated_all_reduce(x))
    with pytest.warns(ResourceWarning, match="IPU model of 128 IPUs"):
        session = popxl.Session(ir, "ipu_model")
    with session:
        np.testing.assert_array_equal(session.run()[stream], np.full(128, 128.0))


def test_inputs_on_different_ipus_or_tile_sets_are_refused_in_popxls_words():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.ones(2, np.float32), name="a")
        with popxl.ipu(1):
            b = popxl.variable(np.ones(2, np.float32), name="b")
        with pytest.raises(ValueError, match=r"^The input tensors `a` and `b` are located on different IPUs: 0 != 1\."):
            ops.add(a, b)
        with popxl.io_tiles():
            c = ops.io_tile_copy(a)
        with pytest.raises(ValueError, match=r"^The input tensors `identity_a` and `\w+` are located on different tile sets: "
                                             r"compute != io\."):
            ops.mul(ops.identity(a), c)


def test_a_subgraph_input_meets_a_tensor_on_io_tiles_as_in_popxl():
    """PopART places a subgraph's input by its call sites; while the graph is being built it has none, so
    the input takes part in no tile-set check (an index computed on IO tiles plus an input index)."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.io_tiles():
        def offset(index):
            return popxl.constant(3, popxl.int32) * popxl.constant(2, popxl.int32) + index
        graph = ir.create_graph(offset, popxl.TensorSpec((), popxl.int32))
        (out,) = ops.call(graph, popxl.constant(4, popxl.int32))
        stream = popxl.d2h_stream((), popxl.int32, "out")
        ops.host_store(stream, out)
    with popxl.Session(ir, "ipu_model") as session:
        assert session.run()[stream] == 10
