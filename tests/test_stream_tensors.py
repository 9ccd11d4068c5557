"""Host streams as popxl lists them: one handle tensor per stream among the main graph's tensors, wherever
the stream was made, while the values, the exports and the runs are those of the device tensors alone."""
import numpy as np

import popxl
import popxl.ops as ops
from workbench.export import to_json


def build_doubling():
    ir = popxl.Ir()
    body = ir.create_empty_graph("body")
    with ir.main_graph:
        with body:  # streams made in a subgraph's context still belong to the main graph
            x_stream = popxl.h2d_stream([3], popxl.float32, name="x")
            x = ops.host_load(x_stream, "x")
            popxl.graph_output(x * 2)
        y_stream = popxl.d2h_stream([3], popxl.float32, name="y")
        w = popxl.variable(np.ones(3, np.float32), name="w")
        doubled, = ops.call(body)
        ops.host_store(y_stream, doubled + w)
    return ir, body, x_stream, y_stream


def test_the_main_graph_lists_one_handle_per_stream_after_its_own_tensors():
    ir, body, x_stream, y_stream = build_doubling()
    main = ir.main_graph
    handles = main.tensors[len(main.device_tensors):]
    assert [(t.id, t.kind, t.spec) for t in handles] == [
        ("x", "stream", x_stream.spec), ("y", "stream", y_stream.spec)]
    assert main.device_tensors == tuple(t for t in main.tensors if t.kind != "stream")
    assert all(t.graph is main for t in handles) and all(t in main for t in handles)
    # A subgraph lists only its own tensors: the load's undefined target, the load, the constant 2
    # and the product.
    assert [t.name for t in body.tensors] == ["x_init", "x", "t", "mul"]
    assert body.tensors == body.device_tensors


def test_the_handles_answer_to_their_ids_through_the_pb_views():
    ir, _, x_stream, y_stream = build_doubling()
    pb_main = ir._pb_ir.getMainGraph()
    assert x_stream.tensor_id in pb_main and y_stream.tensor_id in pb_main
    assert "no_such_tensor" not in pb_main and 3 not in pb_main
    assert {s.tensor_id for s in ir.get_all_d2h_streams()} == {"y"}
    # A name shared by a stream and a tensor of the main graph finds the tensor first, then the handle.
    w = ir.main_graph.get_tensor("w")
    assert w.kind == "variable"


def test_exports_and_runs_see_the_device_tensors_only():
    ir, _, x_stream, y_stream = build_doubling()
    exported = {g["id"]: [t["id"] for t in g["tensors"]] for g in to_json(ir)["graphs"]}
    assert exported["main_graph"] == [t.id for t in ir.main_graph.device_tensors]
    assert "y" not in exported["main_graph"]
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({x_stream: np.array([1, 2, 3], np.float32)})
    np.testing.assert_array_equal(outputs[y_stream], np.array([1, 2, 3], np.float32) * 2 + 1)
