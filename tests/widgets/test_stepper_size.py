"""The stepper at real size: the next op's inputs come first with their values, the other live tensors are
collapsed to their names and filterable, figures that change by a marker cross the comm as patches, and a
step of a pipelined transformer (546 ops, 2 replicas) sends at most 50 KB while the run stays in a graph."""
import json

import comm
import numpy as np
import pytest

import popxl
import workbench
from real_programs import transformer
from workbench.widgets.figure_canvas import FigureCanvas, figure_patch
from workbench.widgets.stepper_view import OTHER_NAMES_LISTED, LiveRow, table_html


@pytest.fixture
def comm_bytes(monkeypatch):
    """Bytes of every message the widgets send (no kernel here: its comms are stand-ins)."""
    sent = []

    def counting(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        sent.append(len(json.dumps(data, default=str)) + sum(len(bytes(b)) for b in buffers or ()))
    monkeypatch.setattr(comm.DummyComm, "publish_msg", counting)
    return sent


def rows(count, read=()):
    return [LiveRow(f"t{i}", "main", "float32[2]", i in read, ("[1. 2.]", "[3. 4.]")) for i in range(count)]


def test_the_next_ops_inputs_come_first_and_the_others_are_names_until_filtered():
    html = table_html(rows(100, read={7, 42}), 2, "", ["out"])
    read_part, others = html.split("<details>")
    assert read_part.count("<tr>") == 1 + 2 and "t7" in read_part and "t42" in read_part  # header + 2 rows
    assert "<b>made by the next op</b>: out" in read_part
    assert "98 other live tensors (type in the filter for their values)" in others
    assert "[1. 2.]" not in others and f"… {98 - OTHER_NAMES_LISTED} more" in others
    filtered = table_html(rows(100, read={7}), 2, "t9")
    assert "11 other live tensors matching 't9'" in filtered  # t9, t90..t99
    assert filtered.split("matching")[1].count("<tr>") == 1 + 11 and "[3. 4.]" in filtered


def test_a_figure_that_changes_a_little_is_sent_as_a_patch(comm_bytes):
    import plotly.graph_objects as go

    canvas = FigureCanvas(go.Figure(go.Scatter(x=list(range(500)), y=list(range(500)))))
    moved = go.Figure(go.Scatter(x=list(range(500)), y=list(range(500))))
    moved.add_shape(type="line", x0=3, x1=3, y0=0, y1=1)
    comm_bytes.clear()
    canvas.show(moved)
    assert canvas.figure["layout"]["shapes"][0]["x0"] == 3  # the kernel's copy is whole
    assert sum(comm_bytes) < 1000  # only the layout's shapes crossed
    assert figure_patch(canvas.figure, canvas.figure) == {"traces": {}, "layout": {}}
    assert figure_patch({"data": [{}]}, {"data": []}) is None


def test_a_step_of_a_pipelined_transformer_sends_at_most_50_kb(comm_bytes):
    ir, inputs = transformer()
    assert sum(len(g.ops) for g in ir.graphs) == 547 and ir.replication_factor == 2
    with popxl.Session(ir, "ipu_model") as session:
        wb = workbench.show(session, inputs, live=False)
        wb.widget.selected_index = wb.tabs.index("stepper")
        stepper = wb["stepper"]
        stepper.step()  # the load's init
        stepper.step()
        stepper.step()  # into the forward graph
        sizes = []
        for _ in range(8):
            comm_bytes.clear()
            stepper.step()
            sizes.append(sum(comm_bytes))
        assert stepper.stop.op.graph.name.endswith("forward")
    assert max(sizes) <= 50_000, sizes


def test_the_first_step_into_each_graph_of_a_900_op_transformer_sends_at_most_50_kb(comm_bytes):
    ir, inputs = transformer(layers=10)
    assert sum(len(g.ops) for g in ir.graphs) == 903
    grad_call = next(op for op in ir.main_graph.ops if op.type == "call" and op.called_graphs[0].name.endswith("_grad"))
    with popxl.Session(ir, "ipu_model") as session:
        wb = workbench.show(session, inputs, live=False)  # the model tab opens first, then the stepper's
        wb.widget.selected_index = wb.tabs.index("stepper")
        stepper, beside = wb["stepper"], wb["stepper"].views[0]
        sizes = {}
        for _ in range(40):  # into the forward graph, then through its first groups
            comm_bytes.clear()
            stepper.step()
            graph = stepper.stop.op.graph.label
            sizes.setdefault(graph, []).append(sum(comm_bytes))
        stepper.run_to(grad_call)
        comm_bytes.clear()
        stepper.step()  # into the gradient graph
        assert stepper.stop.op.graph.name.endswith("forward_grad")
        sizes["into the gradient graph"] = [sum(comm_bytes)]
        op = stepper.stop.op
        assert op.id in {box["key"] for box in beside.scene.boxes}  # the picture beside shows it
        assert wb["model"]._paused  # the model tab behind the stepper's sends nothing
    assert sizes.keys() >= {"main", "transformer.forward"}
    assert max(max(each) for each in sizes.values()) <= 50_000, sizes
