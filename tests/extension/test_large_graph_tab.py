"""A graph too big to draw op by op (the 10,003-op program's main graph) opens in the extension's Graph tab as its
grouped picture, the Model tab's, with a button that draws every op; a document without grouped pictures still
asks before drawing (test/large.test.mjs)."""
import json

from real_programs import wide_program
from test_documents import run_node_tests
from workbench.export.mime import MIME_TYPE


def test_the_graph_tab_opens_a_10000_op_graph_grouped_and_draws_every_op_when_asked(tmp_path):
    ir = wide_program()
    document = ir._repr_mimebundle_()[0][MIME_TYPE]
    path = tmp_path / "wide.ir.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    case = {"path": str(path), "graph": ir.main_graph.id, "ops": len(ir.main_graph.ops)}
    assert case["ops"] > 5000
    out = run_node_tests({"IPU_WB_GROUPED_LARGE": json.dumps(case)}, "test/large.test.mjs")
    assert "ok" in out and "a graph too big to draw op by op opens grouped in the Graph tab" in out, out
