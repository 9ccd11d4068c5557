"""The notebook's Graph tab and the extension's draw the transformer's main graph with the same layering and
order where its optimizer's 48 ops wrap into rows: by the one rule of ``wrapping.band_rows``, each update
lies in the row right under the all-reduce that feeds it, across from it, and the updates read row by row
in the graph's order, at every width tried."""
import json

import pytest

from real_programs import transformer
from test_documents import run_node_tests
from workbench.export.graph_data import op_node_id
from workbench.export.mime import MIME_TYPE
from workbench.widgets import GraphView


@pytest.fixture(scope="module")
def program():
    return transformer()[0]


def updates_and_their_all_reduces(ops):
    """(update, all-reduce feeding it) of the optimizer, in the graph's order; ``ops`` by id, each with its
    type, inputs and the producer of each input."""
    pairs = [(op, producer) for op in ops if op["type"] == "accumulate_"
             for producer in op["producers"] if producer is not None and producer["type"] == "replicated_all_reduce"]
    assert len(pairs) == 24
    return pairs


@pytest.mark.parametrize("width", [630, 960])
def test_the_notebook_puts_each_update_under_its_all_reduce_in_the_graphs_order(program, width):
    view = GraphView(program, grouped=False, live=False)  # op by op: it opens grouped, its optimizer one box
    view.fit(width)
    positions = view.layout.positions
    ops = [{"key": op_node_id(op), "type": op.type,
            "producers": [None if t.producer is None else {"key": op_node_id(t.producer), "type": t.producer.type}
                          for t in op.inputs]} for op in program.main_graph.ops]
    pairs = updates_and_their_all_reduces(ops)
    for update, all_reduce in pairs:
        (x, y), (above_x, above_y) = positions[update["key"]], positions[all_reduce["key"]]
        assert (x, y) == (above_x, above_y - 1)  # one row down, in the same column
    reading = sorted(pairs, key=lambda pair: (-positions[pair[0]["key"]][1], positions[pair[0]["key"]][0]))
    assert reading == pairs


def test_the_extension_puts_each_update_under_its_all_reduce_in_the_graphs_order(program, tmp_path):
    document = program._repr_mimebundle_()[0][MIME_TYPE]
    path = tmp_path / "transformer.ir.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    rooms = (590, 630, 1240, 1280)
    cases = [{"path": str(path), "graph": "main_graph", "expandAll": False, "room": room,
              "places": str(tmp_path / f"places-{room}.json")} for room in rooms]
    run_node_tests({"IPU_WB_GEOMETRY": json.dumps(cases)}, "test/geometry.test.mjs")
    (main,) = [graph for graph in document["graphs"] if graph["id"] == "main_graph"]
    made_by = {tensor["id"]: tensor["producer"] for tensor in main["tensors"]}
    by_id = {op["id"]: op for op in main["ops"]}
    ops = [{"key": op["id"], "type": op["type"],
            "producers": [None if made_by.get(t) is None else {"key": made_by[t], "type": by_id[made_by[t]]["type"]}
                          for t in op["inputs"]]} for op in main["ops"]]
    pairs = updates_and_their_all_reduces(ops)
    for case in cases:
        boxes = {box["key"].split("|", 1)[1]: box for box in json.loads(open(case["places"]).read())}
        tops = sorted({box["top"] for box in boxes.values()})
        for update, all_reduce in pairs:
            below, above = boxes[update["key"]], boxes[all_reduce["key"]]
            assert tops.index(below["top"]) == tops.index(above["top"]) + 1, case["room"]  # the next row down
            assert below["left"] < above["right"] and above["left"] < below["right"], case["room"]  # across from it
        reading = sorted(pairs, key=lambda pair: (boxes[pair[0]["key"]]["top"], boxes[pair[0]["key"]]["left"]))
        assert reading == pairs, case["room"]
