"""The extension's graph view places real graphs from the layering the export ships (else lays them out with
ELK): on the MLP's backward graph, the training step with every call expanded and a 298-op backward graph, no
two node boxes or labels overlap, no edge passes through a node that is not one of its ends, and everything
lies inside the drawing's width. An ELK layout that takes too long falls back to plain layers. A 2,003-op graph
is placed and wrapped to its output (slow: it prints the times, which tests/benchmarks/bench_graph_layout.py
holds to their limits).
"""
import json
import re

import numpy as np
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


def test_the_transformers_main_graph_wraps_its_48_optimizer_ops_into_rows_that_fit_its_output(tmp_path):
    """Side by side, the 24 all-reduces and 24 updates of its optimizer made the drawing 4,542 px wide. In an
    output of 590 to 1,280 px the layers too wide wrap into rows (each all-reduce over the update it feeds):
    the drawing fits the canvas, still without overlaps or edges through boxes."""
    from real_programs import transformer

    document = transformer()[0]._repr_mimebundle_()[0][MIME_TYPE]
    path = tmp_path / "transformer.ir.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    cases = [{"path": str(path), "graph": "main_graph", "expandAll": False, "room": room}
             for room in (590, 630, 1240, 1280)]
    out = run_node_tests({"IPU_WB_GEOMETRY": json.dumps(cases)}, "test/geometry.test.mjs")
    for case in cases:
        name = f"geometry of main_graph at {case['room']} px in {path}"
        assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), out
    widths = {int(room): float(width) for room, width in re.findall(r"main_graph at (\d+) px: .*, ([\d.]+) × [\d.]+ px", out)}
    assert len(widths) == 4 and all(width <= room - 16 for room, width in widths.items()), widths
    print(widths)


def test_the_page_wraps_a_layer_into_rows_by_the_rule_of_the_python_side():
    from workbench.export.wrapping import wrap_rows

    rng = np.random.default_rng(0)
    cases = [{"widths": rng.integers(20, 400, size=int(rng.integers(0, 30))).tolist(), "room": int(room), "gap": gap}
             for room in rng.integers(100, 1300, size=40) for gap in (18, 24)]
    cases.append({"widths": [500, 20, 20], "room": 300, "gap": 24})  # a box wider than the room takes a row alone
    for case in cases:
        case["rows"] = wrap_rows(case["widths"], case["room"], case["gap"])
    assert cases[-1]["rows"] == [0, 1, 1]
    assert any(max(case["rows"], default=0) >= 3 for case in cases)
    out = run_node_tests({"IPU_WB_WRAP_ROWS": json.dumps(cases)}, "test/compose.test.mjs")
    assert re.search(r"^ok \d+ - the page wraps every layer into the rows the Python side gives$", out, re.M), out


def test_the_page_wraps_a_layered_picture_into_bands_by_the_rule_of_the_python_side():
    from workbench.export.wrapping import band_rows

    rng = np.random.default_rng(1)
    cases = []
    for _ in range(60):
        layers = [[f"{depth}.{index}" for index in range(int(rng.integers(1, 14)))] for depth in range(int(rng.integers(1, 6)))]
        widths = {item: int(rng.integers(40, 260)) for layer in layers for item in layer}
        predecessors = {item: [str(p) for p in rng.choice(above, size=int(rng.integers(0, 3)), replace=True)]
                        for above, layer in zip(layers, layers[1:]) for item in layer}
        room = int(rng.integers(200, 1400))
        rows, lefts = band_rows(layers, widths, predecessors, room, 18)
        cases.append({"layers": layers, "widths": widths, "predecessors": predecessors, "room": room, "gap": 18,
                      "rows": rows, "lefts": lefts})
    # 4 all-reduces, each feeding its own update (wider than it): each update wraps under its all-reduce
    chain = [["a0", "a1", "a2", "a3"], ["u0", "u1", "u2", "u3"]]
    widths = {**dict.fromkeys(chain[0], 90), **dict.fromkeys(chain[1], 100)}
    rows, lefts = band_rows(chain, widths, {f"u{i}": [f"a{i}"] for i in range(4)}, 230, 18)
    assert rows == {"a0": 0, "a1": 0, "u0": 1, "u1": 1, "a2": 2, "a3": 2, "u2": 3, "u3": 3}
    assert lefts == {"a0": 0, "a1": 118, "u0": 0, "u1": 118, "a2": 0, "a3": 118, "u2": 0, "u3": 118}
    assert sum(len(set(case["rows"].values())) > len(case["layers"]) for case in cases) >= 20  # most wrap
    out = run_node_tests({"IPU_WB_BAND_ROWS": json.dumps(cases)}, "test/compose.test.mjs")
    assert re.search(r"^ok \d+ - the page wraps every layered picture into the rows the Python side gives$", out, re.M), out


def test_a_layout_that_takes_too_long_falls_back_to_plain_layers():
    out = run_node_tests({}, "test/elk.test.mjs")
    for name in ("a layout that takes too long is given up and its worker stopped; the next starts a new one",
                 "a graph ELK does not lay out in time is placed in plain layers"):
        assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), name


def lay_out_a_2000_op_graph(tmp_path) -> tuple[list[tuple[float, int]], list[tuple[float, int]]]:
    """The 2,002-op backward graph of a 333-layer MLP laid out twice in a 630-px output, from the layering its
    export ships and by ELK without it: (seconds, width in px) of each layout, shipped then ELK's."""
    path, backward = export(tmp_path, 333)
    assert len(backward["ops"]) >= 1990  # about 2,000 ops
    document = json.loads(open(path).read())
    assert [g["graph"] for g in document["graph_layers"]["graphs"]] == [g["id"] for g in document["graphs"]]
    timed = {"path": path, "graph": BACKWARD, "room": 630}
    out = run_node_tests({"IPU_WB_TIMED": json.dumps(timed)}, "test/geometry.test.mjs")
    print(*re.findall(r"^# (?:first|second) layout.*$", out, re.M), sep="\n")
    shipped = re.findall(r"layout of \d+ ops, \d+ nodes: ([\d.]+) s by shipped, (\d+) px wide", out)
    del document["graph_layers"]
    path_elk = tmp_path / "without_layers.ir.json"
    path_elk.write_text(json.dumps(document), encoding="utf-8")
    out = run_node_tests({"IPU_WB_TIMED": json.dumps({**timed, "path": str(path_elk)})}, "test/geometry.test.mjs")
    print(*re.findall(r"^# (?:first|second) layout.*$", out, re.M), sep="\n")
    elk = re.findall(r"layout of \d+ ops, \d+ nodes: ([\d.]+) s by elk, (\d+) px wide", out)
    return [(float(t), int(w)) for t, w in shipped], [(float(t), int(w)) for t, w in elk]


@pytest.mark.slow
def test_a_2000_op_graph_is_placed_from_its_shipped_layering_and_wrapped_to_its_output(tmp_path):
    """The export ships the layering, so the page places a 2,000-op graph from it and wraps it to its output
    (ELK left it about 19,900 px wide); without the section, ELK lays it out. The times are printed;
    tests/benchmarks/bench_graph_layout.py holds them to their limits."""
    shipped, elk = lay_out_a_2000_op_graph(tmp_path)
    assert len(shipped) == 2 and all(width <= 630 - 16 for _, width in shipped), shipped
    assert len(elk) == 2 and all(width > 630 for _, width in elk), elk


@pytest.mark.slow
def test_a_large_wide_graph_is_drawn_first_and_wrapped_to_its_output_after(tmp_path):
    """Without a shipped layering (a document saved before it), wrapping a graph of a few hundred ops takes
    several more ELK layouts; the page shows ELK's first drawing (noting that it is wrapping) until the wrapped
    one, which fits the output, replaces it."""
    from real_programs import transformer

    document = transformer()[0]._repr_mimebundle_()[0][MIME_TYPE]
    del document["graph_layers"]
    path = tmp_path / "transformer.ir.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    case = {"path": str(path), "graph": "transformer.forward", "room": 630}
    out = run_node_tests({"IPU_WB_FIRST_PICTURE": json.dumps(case)}, "test/geometry.test.mjs")
    name = f"transformer.forward in {path} is drawn before its wide layers are wrapped to 630 px"
    assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), out
