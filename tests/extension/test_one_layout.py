"""One layering, two renderers: the export ships each graph's Graph-tab layering (``graph_layers``), which is the
notebook's Graph tab's own (its "ops" picture laid out by ``layered_layout``), and the extension draws the graph
in those layers, in that order: on the transformer's main, forward and backward graphs, an MLP's graphs and
seeded random graphs."""
import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from real_programs import transformer
from support.programs import mlp_training
from test_documents import run_node_tests
from workbench.export.graph_layers import graph_layers
from workbench.export.mime import MIME_TYPE
from workbench.widgets import GraphView
from workbench.widgets.figures.graph_figure import picture_layout

SEEDS = range(6)


def random_program(seed: int) -> popxl.Ir:
    """A main graph of 15 to 60 ops over three inputs and two weights: unary ops, binary ops on any two
    earlier tensors (so edges span layers), ``in_sequence`` pairs, and a few outputs of a called graph."""
    rng = np.random.default_rng(seed)
    ir = popxl.Ir()
    with ir.main_graph:
        live = [popxl.variable(rng.normal(size=(3, 3)).astype(np.float32), name=f"w{i}") for i in range(2)]
        live += [ops.host_load(popxl.h2d_stream((3, 3), popxl.float32, name=f"x{i}"), name=f"x{i}") for i in range(3)]
        body = ir.create_graph(lambda t: ops.relu(t) + t, live[0].spec)
        for _ in range(int(rng.integers(15, 60))):
            a, b = (live[int(rng.integers(len(live)))] for _ in range(2))
            choice = int(rng.integers(0, 6))
            if choice == 0:
                live.append(ops.tanh(a))
            elif choice == 1:
                live.append(a @ b)
            elif choice == 2:
                live.append(a + b)
            elif choice == 3:
                with popxl.in_sequence():
                    live.append(ops.exp(a) - b)
            elif choice == 4:
                live.append(ops.call(body, a)[0])
            else:
                live.append(a * 0.5)
    return ir


def programs():
    """(name, Ir) of the programs tried."""
    yield "transformer", transformer()[0]
    yield "mlp", mlp_training(layers=5)[0]
    for seed in SEEDS:
        yield f"random{seed}", random_program(seed)


PROGRAMS = dict(programs())


def shipped_layers(entry: dict) -> dict[str, tuple[int, float]]:
    return {key: (layer, col) for key, layer, col in zip(entry["nodes"], entry["layers"], entry["cols"])}


def in_layer_order(places: dict, layers: dict) -> list[list]:
    """Each layer's keys, top layer first, in their order left to right by ``places`` (key -> x)."""
    by_layer = defaultdict(list)
    for key, layer in layers.items():
        by_layer[layer].append(key)
    return [sorted(keys, key=lambda key: places[key]) for _, keys in sorted(by_layer.items())]


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_shipped_layering_is_the_notebooks_graph_tab(name):
    """Every node of the notebook's "ops" picture (ungrouped) is in the shipped layering, in the same layer, and
    each layer has the same order (seen unwrapped: wrapping moves a chain's members under its first)."""
    ir = PROGRAMS[name]
    for graph in ir.graphs:
        entry = graph_layers(graph)
        view = GraphView(ir, graph=graph, grouped=False, detail="ops", live=False)
        ids = {key: node.item.id for key, node in view.picture.nodes.items()}
        notebook = {ids[key]: layer for key, layer in view.layout.layers.items()}
        shipped = shipped_layers(entry)
        assert set(notebook) == set(shipped), graph.id
        assert {key: layer for key, (layer, _) in shipped.items()} == notebook, graph.id
        unwrapped = picture_layout(view.picture, width=10**6)  # so wide that no layer wraps into rows
        assert {ids[key]: layer for key, layer in unwrapped.layers.items()} == notebook
        columns = {ids[key]: x for key, (x, _) in unwrapped.positions.items()}
        assert in_layer_order(columns, notebook) == in_layer_order({k: c for k, (_, c) in shipped.items()}, notebook), graph.id
        for tail, head, bends in entry["edges"]:  # a bend on each layer between its ends, in order
            assert [layer for _, layer in bends] == list(range(entry["layers"][tail] + 1, entry["layers"][head])), graph.id


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_extension_draws_the_shipped_layers_in_the_shipped_order(name, tmp_path):
    """Drawn unwrapped, the extension puts every node of a layer at one height, the layers top to bottom in
    order, and the nodes of a layer left to right in the shipped order; no box or label overlaps, no edge
    passes through a box."""
    document = PROGRAMS[name]._repr_mimebundle_()[0][MIME_TYPE]
    path = tmp_path / f"{name}.ir.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    entries = {entry["graph"]: entry for entry in document["graph_layers"]["graphs"]}
    cases = [{"path": str(path), "graph": graph["id"], "expandAll": False, "places": str(tmp_path / f"{number}.json")}
             for number, graph in enumerate(document["graphs"]) if graph["ops"]]
    run_node_tests({"IPU_WB_GEOMETRY": json.dumps(cases)}, "test/geometry.test.mjs")
    for case in cases:
        boxes = {box["key"].split("|", 1)[1]: box for box in json.loads(open(case["places"]).read())}
        shipped = shipped_layers(entries[case["graph"]])
        assert set(boxes) == set(shipped), case["graph"]
        layers = {key: layer for key, (layer, _) in shipped.items()}
        tops = {}
        for key, layer in layers.items():
            tops.setdefault(layer, set()).add(boxes[key]["top"])
        assert all(len(heights) == 1 for heights in tops.values()), case["graph"]  # one height per layer
        ordered = [min(tops[layer]) for layer in sorted(tops)]
        assert ordered == sorted(ordered) and len(set(ordered)) == len(ordered), case["graph"]  # layers top to bottom
        drawn = in_layer_order({key: box["left"] for key, box in boxes.items()}, layers)
        assert drawn == in_layer_order({key: col for key, (_, col) in shipped.items()}, layers), case["graph"]


# The extension's Graph tab wraps to its canvas's width less a scroll bar (16 px) and GRAPH_BAND_MARGIN (40 px, as
# the notebook's picture leaves); a bend takes a 6-px slot, a node the wider of its box and its shipped width, and
# they are 18 px apart (src/shippedlayout.ts, src/wrapping.ts).
SCROLLBAR = 16


def python_bands(entry: dict, widths: dict, canvas: int) -> dict:
    """The row of each node by ``wrapping.band_rows`` over the shipped layers (nodes and bends by column), with
    the wider of the extension's box and the shipped width of each node, numbered among the rows holding nodes."""
    from workbench.export.wrapping import GRAPH_BAND_MARGIN, GRAPH_BEND, GRAPH_GAP, band_rows

    widths = {key: max(widths[key], shipped) for key, shipped in zip(entry["nodes"], entry["widths"])}
    items = defaultdict(list)  # layer -> (col, is_bend, item)
    for key, layer, col in zip(entry["nodes"], entry["layers"], entry["cols"]):
        items[layer].append((col, 0, key))
    predecessors = defaultdict(list)
    for number, (tail, head, bends) in enumerate(entry["edges"]):
        chain = [entry["nodes"][tail], *[f"~{number}~{i}" for i in range(len(bends))], entry["nodes"][head]]
        for (col, layer), bend in zip(bends, chain[1:-1]):
            items[layer].append((col, 1, bend))
            widths[bend] = GRAPH_BEND
        for before, after in zip(chain, chain[1:]):
            predecessors[after].append(before)
    layers = [[item for _, _, item in sorted(items[layer], key=lambda entry: entry[:2])] for layer in sorted(items)]
    rows, _ = band_rows(layers, widths, predecessors, canvas - SCROLLBAR - GRAPH_BAND_MARGIN, GRAPH_GAP)
    node_rows = sorted({rows[key] for key in entry["nodes"]})
    return {key: node_rows.index(rows[key]) for key in entry["nodes"]}


WRAPPED_GRAPHS = (("transformer", ("main_graph", "transformer.forward_grad")), ("mlp", ("mlp_training.forward_grad",)))


def drawn_rows(canvas: int, tmp_path) -> list[tuple[dict, dict, dict]]:
    """The extension's drawing of each graph of ``WRAPPED_GRAPHS`` in a canvas ``canvas`` pixels wide: (the
    graph's case, its shipped layering, the row of each node numbered among the rows holding nodes, top first),
    and each node's box by key."""
    cases = []
    for name, graphs in WRAPPED_GRAPHS:
        document = PROGRAMS[name]._repr_mimebundle_()[0][MIME_TYPE]
        path = tmp_path / f"{name}.ir.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        entries = {entry["graph"]: entry for entry in document["graph_layers"]["graphs"]}
        cases += [({"path": str(path), "graph": graph, "expandAll": False, "room": canvas, "name": name,
                    "places": str(tmp_path / f"{name}-{graph}-{canvas}.json")}, entries[graph]) for graph in graphs]
    run_node_tests({"IPU_WB_GEOMETRY": json.dumps([case for case, _ in cases])}, "test/geometry.test.mjs")
    drawings = []
    for case, entry in cases:
        boxes = {box["key"].split("|", 1)[1]: box for box in json.loads(open(case["places"]).read())}
        tops = sorted({box["top"] for box in boxes.values()})
        drawings.append((case, entry, {key: tops.index(box["top"]) for key, box in boxes.items()}, boxes))
    return drawings


@pytest.mark.parametrize("canvas", [590, 1280])
def test_the_extension_wraps_the_shipped_layers_into_the_bands_python_gives(canvas, tmp_path):
    """Wrapped to a canvas of 590 or 1,280 px, the transformer's main and backward graphs and the MLP's backward
    graph fall into the rows that ``wrapping.band_rows`` gives for the shipped layers and widths."""
    wrapped = 0
    for case, entry, rows, boxes in drawn_rows(canvas, tmp_path):
        widths = {key: box["right"] - box["left"] for key, box in boxes.items()}
        assert rows == python_bands(entry, widths, canvas), case["graph"]
        wrapped += len(set(rows.values())) > entry["depth"]
    assert wrapped >= 2  # the optimizer's layers, at least, wrap at 590 and at 1,280 px


@pytest.mark.parametrize("width", [590, 700, 960])
def test_the_notebook_and_the_extension_wrap_a_graph_into_the_same_rows_at_the_same_output_width(width, tmp_path):
    """The notebook's Graph tab in a picture ``width`` pixels wide and the extension's in an output as wide (its
    canvas a scroll bar wider) put every node of the transformer's main and backward graphs and the MLP's
    backward graph in the same row: the same number of bands, the same wrapping. (Before they shared widths,
    the notebook wrapped the transformer's main graph into 52 rows at 590 px where the extension drew 28.)"""
    wrapped = 0
    for case, entry, rows, _ in drawn_rows(width + SCROLLBAR, tmp_path):
        ir = PROGRAMS[case["name"]]
        view = GraphView(ir, graph=next(graph for graph in ir.graphs if graph.id == case["graph"]), grouped=False,
                         live=False)
        view.fit(width)
        assert view.width == width
        heights = sorted({-y for key, (_, y) in view.layout.positions.items()})
        notebook = {view.picture.nodes[key].item.id: heights.index(-y) for key, (_, y) in view.layout.positions.items()}
        assert notebook == rows, case["graph"]
        wrapped += len(heights) > entry["depth"]
    assert wrapped >= 2


def test_a_layering_that_names_other_nodes_than_the_drawing_is_laid_out_by_elk(tmp_path):
    """A document whose layering of a graph leaves a node out (edited, or written by other code) is not trusted:
    the page lays that graph out itself, with ELK, and draws it whole; an edge to no node is left out."""
    document = PROGRAMS["mlp"]._repr_mimebundle_()[0][MIME_TYPE]
    (entry,) = [entry for entry in document["graph_layers"]["graphs"] if entry["graph"] == "mlp_training.forward_grad"]
    last = len(entry["nodes"]) - 1
    for field in ("nodes", "layers", "cols"):
        del entry[field][last]
    entry["edges"] = [edge for edge in entry["edges"] if last not in edge[:2]]
    path = tmp_path / "edited.ir.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    timed = {"path": str(path), "graph": "mlp_training.forward_grad", "room": 1280}
    out = run_node_tests({"IPU_WB_TIMED": json.dumps(timed)}, "test/geometry.test.mjs")
    assert len(re.findall(r"layout of 34 ops, \d+ nodes: [\d.]+ s by elk", out)) == 2, out
    timed["path"] = str(tmp_path / "mlp.ir.json")
    document = PROGRAMS["mlp"]._repr_mimebundle_()[0][MIME_TYPE]
    (entry,) = [entry for entry in document["graph_layers"]["graphs"] if entry["graph"] == "mlp_training.forward_grad"]
    entry["edges"].append([0, 9999, []])  # an edge to no node: left out, the rest drawn from the layering
    Path(timed["path"]).write_text(json.dumps(document), encoding="utf-8")
    out = run_node_tests({"IPU_WB_TIMED": json.dumps(timed)}, "test/geometry.test.mjs")
    assert len(re.findall(r"layout of 34 ops, \d+ nodes: [\d.]+ s by shipped", out)) == 2, out
