"""Ir, Graph and Session display in notebooks as the JSON export under the extension's MIME type."""
import json

import numpy as np
import popxl
import popxl.ops as ops
from IPython.core.formatters import DisplayFormatter

from workbench.analysis import code_size, tensor_liveness
from workbench.export import to_json
from workbench.export.liveness_json import liveness_json
from workbench.export.mime import MIME_TYPE


def scale_program():
    """x (from the host) * w (a variable) -> y (to the host), with a called subgraph adding one."""
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([4], popxl.float32, name="x")
        w = popxl.variable(np.ones(4, np.float32), name="w")
        x = ops.host_load(x_stream)
        add_one = ir.create_graph(lambda a: a + 1, x)
        (y,) = ops.call(add_one, x * w)
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
    return ir, add_one, x_stream, y_stream


def test_an_ir_offers_its_json_and_plain_text():
    ir, _, _, _ = scale_program()
    data, metadata = ir._repr_mimebundle_()
    assert data["text/plain"] == repr(ir)
    document = data[MIME_TYPE]
    assert MIME_TYPE == "application/vnd.ipu-workbench.ir+json"
    assert {key: value for key, value in document.items() if key != "liveness"} == to_json(ir, grouped=True)
    assert document["liveness"] == liveness_json(ir)
    assert metadata == {MIME_TYPE: {"view": "model", "graph": "main_graph"}}
    json.dumps(data, allow_nan=False)


def test_ipython_displays_both_types():
    ir, add_one, _, _ = scale_program()
    for shown in (ir, add_one):
        data, metadata = DisplayFormatter().format(shown)
        assert set(data) == {"text/plain", MIME_TYPE}
        assert data["text/plain"] == repr(shown)
    assert metadata[MIME_TYPE]["graph"] == add_one.id


def test_a_graph_opens_the_whole_ir_on_itself():
    ir, add_one, _, _ = scale_program()
    data, metadata = add_one._repr_mimebundle_()
    assert data["text/plain"] == f"Graph[{add_one.label} ir={ir.id} ops=1]"
    assert [graph["id"] for graph in data[MIME_TYPE]["graphs"]] == ["main_graph", add_one.id]
    assert metadata == {MIME_TYPE: {"view": "model", "graph": add_one.id}}


def test_a_session_opens_the_memory_chart_with_its_device():
    ir, _, x_stream, y_stream = scale_program()
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({x_stream: np.arange(4, dtype=np.float32)})
        data, metadata = session._repr_mimebundle_()
    np.testing.assert_array_equal(outputs[y_stream], np.arange(4, dtype=np.float32) + 1)
    assert data["text/plain"] == f"Session[ir={ir.id} device=ipu_model]"
    assert metadata == {MIME_TYPE: {"view": "memory", "graph": "main_graph",
                                    "device": {"kind": "ipu_model", "tile_bytes_per_ipu": 1472 * 624 * 1024}}}
    ipu = data[MIME_TYPE]["liveness"]["ipus"][0]
    peak = session.memory_report.ipu(0)
    assert (ipu["peak_step"], ipu["peak_bytes"]) == (peak.peak_step, peak.peak_bytes)


def test_liveness_counts_bytes_per_step():
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([4], popxl.float32, name="x")
        w = popxl.variable(np.ones(4, np.float32), name="w")
        x = ops.host_load(x_stream)
        y = x * w
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    section = liveness_json(ir)
    assert section["version"] == 1 and section["error"] is None
    assert section["steps"] == [{"op": "init.1", "graph": "main_graph", "depth": 0},
                                {"op": "host_load.2", "graph": "main_graph", "depth": 0},
                                {"op": "mul.3", "graph": "main_graph", "depth": 0},
                                {"op": "host_store.4", "graph": "main_graph", "depth": 0}]
    (ipu,) = section["ipus"]
    code = code_size.graph_code_bytes(ir.main_graph)[0]
    # The load's target lives from its init to the load; x from its load to the multiply, y from the
    # multiply to the store: 16 bytes each.
    assert ipu == {"ipu": 0, "variables": 16, "constants": 0, "intermediates": [16, 32, 32, 16],
                   "code": [code] * 4, "peak_step": 1, "peak_bytes": 16 + 32 + code}


def test_liveness_follows_calls_into_subgraphs():
    ir, add_one, _, _ = scale_program()
    section = liveness_json(ir)
    assert [(step["op"].rsplit(".", 1)[0], step["depth"]) for step in section["steps"]] == [
        ("init", 0), ("host_load", 0), ("mul", 0), ("call", 0), (f"{add_one.name}/add", 1), ("host_store", 0)]
    analysis = tensor_liveness(ir)
    assert section["ipus"][0]["intermediates"] == [analysis.at(i).intermediates for i in range(6)]
    assert section["ipus"][0]["code"] == [analysis.at(i).code for i in range(6)]


def test_a_program_that_cannot_be_flattened_still_displays():
    ir = popxl.Ir()
    ping, pong = ir.create_empty_graph("ping"), ir.create_empty_graph("pong")
    with ir.main_graph:
        with ping:
            ops.call(pong)
        with pong:
            ops.call(ping)
        ops.call(ping)
    data, _ = ir._repr_mimebundle_()
    section = data[MIME_TYPE]["liveness"]
    assert section["steps"] == [] and section["ipus"] == []
    assert "calls itself" in section["error"]
    assert [graph["label"] for graph in data[MIME_TYPE]["graphs"]] == ["main", "ping", "pong"]


def test_to_json_adds_liveness_only_when_asked():
    ir, _, _, _ = scale_program()
    assert "liveness" not in to_json(ir)
    assert to_json(ir, liveness=True)["liveness"] == liveness_json(ir)


def test_the_display_of_a_large_ir_leaves_the_liveness_section_out_and_says_why():
    from real_programs import wide_program
    from workbench.export.mime import LIVENESS_DISPLAY_OPS

    large = wide_program(blocks=31)
    assert sum(len(graph.ops) for graph in large.graphs) > LIVENESS_DISPLAY_OPS
    data, metadata = large._repr_mimebundle_()
    assert "liveness" not in data[MIME_TYPE] and "grouped" in data[MIME_TYPE]
    assert metadata[MIME_TYPE]["liveness_left_out"].startswith("3,102 ops: the memory chart")
    small = wide_program(blocks=2)
    data, metadata = small._repr_mimebundle_()
    assert "liveness" in data[MIME_TYPE] and "liveness_left_out" not in metadata[MIME_TYPE]
