"""The extension's graph view lays real graphs out with ELK: on the MLP's backward graph, the training step with
every call expanded and a 298-op backward graph, no two node boxes or labels overlap, no edge passes through a
node that is not one of its ends, and everything lies inside the drawing's width. A layout that takes too long
falls back to plain layers. A 2,003-op graph is laid out in reasonable time (slow: it prints the times).
"""
import json
import re

import pytest

from support.programs import mlp_training
from test_documents import run_node_tests
from workbench.export.mime import MIME_TYPE

BACKWARD = "mlp_training.forward_grad"


def export(tmp_path, layers: int):
    """The MLP of `layers` layers exported to a file, and the id of its backward graph."""
    document = mlp_training(layers=layers)[0]._repr_mimebundle_()[0][MIME_TYPE]
    (backward,) = [g for g in document["graphs"] if g["name"].endswith("forward_grad")]
    path = tmp_path / f"mlp{layers}.ir.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path), backward


def test_real_graphs_are_drawn_without_overlaps_or_edges_through_nodes(tmp_path):
    mlp, backward = export(tmp_path, 5)
    big, big_backward = export(tmp_path, 49)
    assert backward["id"] == BACKWARD and len(backward["ops"]) >= 30
    assert 290 <= len(big_backward["ops"]) <= 310
    cases = [{"path": mlp, "graph": BACKWARD, "expandAll": False},
             {"path": mlp, "graph": "main_graph", "expandAll": True},
             {"path": big, "graph": BACKWARD, "expandAll": False}]
    out = run_node_tests({"IPU_WB_GEOMETRY": json.dumps(cases)}, "test/geometry.test.mjs")
    for case in cases:
        name = f"geometry of {case['graph']}{' expanded' if case['expandAll'] else ''} in {case['path']}"
        assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), out
    for name in ("the sample, every call expanded, is drawn by ELK without overlaps or edges through nodes",
                 "edges bend around nodes: the routes have bends, drawn rounded"):
        assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), name


def test_a_layout_that_takes_too_long_falls_back_to_plain_layers():
    out = run_node_tests({}, "test/elk.test.mjs")
    for name in ("a layout that takes too long is given up and its worker stopped; the next starts a new one",
                 "a graph ELK does not lay out in time is placed in plain layers"):
        assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), name


@pytest.mark.slow
def test_a_2000_op_graph_is_laid_out_by_elk_in_reasonable_time(tmp_path):
    path, backward = export(tmp_path, 333)
    assert len(backward["ops"]) >= 1990  # about 2,000 ops, within ELK_MAX_NODES boxes of ops and values
    out = run_node_tests({"IPU_WB_TIMED": json.dumps({"path": path, "graph": BACKWARD})}, "test/geometry.test.mjs")
    times = [float(s) for s in re.findall(r"layout of \d+ ops, \d+ nodes: ([\d.]+) s by elk", out)]
    print(*re.findall(r"^# (?:first|second) layout.*$", out, re.M), sep="\n")
    assert len(times) == 2 and max(times) < 30, out
