"""Whether a graph opens grouped is decided once, by the export (``workbench.export.opening``), and shipped in the
JSON (``grouped.graphs[].opens``): the notebook's Graph tab and the extension's both open the transformer's main
graph (its optimizer's 24 all-reduce → update pairs a ladder of 28 rows op by op) as its grouped picture, with the
same groups and the same ops beside them; a graph that fits a screen op by op opens op by op in both."""
import json
from pathlib import Path

import fastjsonschema
import numpy as np
import pytest

import popxl
import popxl.ops as ops
import workbench.export
from real_programs import long_chain, transformer
from support.programs import mlp_training
from test_documents import run_node_tests
from workbench.export import to_json
from workbench.export.graph_layers import graph_layers
from workbench.export.mime import MIME_TYPE
from workbench.export.opening import GROUPED_OPS, SCREEN_ROWS, SCREEN_WIDTH, TALL_ROWS, graph_opening, wrapped_rows
from workbench.widgets import GraphView

VALIDATE = fastjsonschema.compile(json.loads(
    (Path(workbench.export.__file__).parent / "ir.schema.json").read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def program():
    return transformer()[0]


def test_the_transformers_main_graph_opens_grouped_for_being_taller_than_a_screen(program):
    opening = graph_opening(program.main_graph)
    assert opening.grouped and opening.why == "tall"
    assert opening.rows > TALL_ROWS and opening.grouped_rows <= SCREEN_ROWS
    assert opening.rows == 28  # the ladder: 24 all-reduces and 24 updates wrapped at 960 px, and the 5 ops above
    backward = next(graph for graph in program.graphs if graph.name.endswith("forward_grad"))
    assert graph_opening(backward).why == "large"  # 359 ops


def test_a_graph_that_fits_a_screen_or_has_no_groups_opens_op_by_op_and_a_long_one_grouped():
    ir = mlp_training(layers=5)[0]
    for graph in ir.graphs:
        opening = graph_opening(graph)
        assert not opening.grouped and opening.why == "small", graph.label
    forward = next(graph for graph in ir.graphs if graph.name.endswith("forward"))
    assert graph_opening(forward).rows > SCREEN_ROWS  # a little taller than a screen: scrolled, not folded
    little = graph_opening(long_chain(SCREEN_ROWS + 4).main_graph)  # runs of ops would hide more than they show
    assert SCREEN_ROWS < little.rows <= TALL_ROWS and not little.grouped
    short = popxl.Ir()
    with short.main_graph:
        x = popxl.variable(np.ones(3, np.float32), name="x")
        for _ in range(4):
            x = ops.relu(x)
    assert graph_opening(short.main_graph).rows == 4 and not graph_opening(short.main_graph).grouped
    chain = long_chain(100).main_graph  # 100 rows op by op; grouped, a few runs of ops
    assert graph_opening(chain).why == "tall"
    assert graph_opening(long_chain(GROUPED_OPS).main_graph).why == "large"


def test_the_rows_counted_are_the_wrapped_rows_of_the_shipped_layering(program):
    """At a width where nothing wraps the rows are the layers; narrower, the optimizer's layers wrap."""
    entry = graph_layers(program.main_graph)
    assert wrapped_rows(entry, 10**6) == entry["depth"]
    assert wrapped_rows(entry, SCREEN_WIDTH) > entry["depth"]
    assert wrapped_rows(entry, 630) > wrapped_rows(entry, SCREEN_WIDTH)


def test_every_graph_of_the_export_says_how_it_opens_and_the_document_is_valid(program):
    document = to_json(program)
    VALIDATE(document)
    opens = {entry["graph"]: entry["opens"] for entry in document["grouped"]["graphs"]}
    assert set(opens) == {graph.id for graph in program.graphs}
    assert opens["main_graph"] == graph_opening(program.main_graph).to_json()
    assert opens["main_graph"]["grouped"] is True and opens["main_graph"]["why"] == "tall"
    bad = json.loads(json.dumps(document))
    bad["grouped"]["graphs"][0]["opens"]["why"] = "because"
    with pytest.raises(fastjsonschema.JsonSchemaException):
        VALIDATE(bad)


def test_both_renderers_open_the_transformers_main_graph_grouped_with_the_same_groups(program, tmp_path):
    view = GraphView(program, live=False)
    assert view.groups is not None
    notebook_groups = [node.item.id for node in view.picture.nodes.values() if node.kind == "group"]
    notebook_ops = [node.item.id for node in view.picture.nodes.values() if node.kind == "op"]
    assert notebook_groups == ["main_graph#1"] and len(notebook_ops) == 5
    assert GraphView(program, grouped=False, live=False).picture.op_count == 53  # a click away, as in the extension

    document = program._repr_mimebundle_()[0][MIME_TYPE]
    path = tmp_path / "transformer.ir.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    cases = [{"path": str(path), "graph": graph.id, "out": str(tmp_path / f"{number}.json")}
             for number, graph in enumerate(program.graphs)]
    run_node_tests({"IPU_WB_OPENING": json.dumps(cases)}, "test/opening.test.mjs")
    drawn = {case["graph"]: json.loads(Path(case["out"]).read_text()) for case in cases}
    main = drawn["main_graph"]
    assert main["opens"] == "tall" and "more than a screen holds" in main["message"]
    assert main["groups"] == notebook_groups
    assert sorted(main["ops"]) == sorted(notebook_ops)
    assert main["groupLines"][0][0] == "▸ optimizer"
    assert main["drawnOps"] == 0  # no op-by-op drawing behind it
    for graph in program.graphs:  # every graph opens as the notebook opens it
        notebook = GraphView(program, graph=graph, live=False)
        assert (drawn[graph.id]["opens"] is not None) == (notebook.groups is not None), graph.label
        if notebook.groups is not None:
            assert drawn[graph.id]["groups"] == [node.item.id for node in notebook.picture.nodes.values()
                                                 if node.kind == "group"], graph.label
