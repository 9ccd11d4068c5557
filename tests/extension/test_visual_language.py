"""One visual language: the plotly views and the JupyterLab extension take their colours, names and units
from workbench/widgets/visual_language.json, and name ops, call sites and byte counts alike.

The extension's side is read by running its built code under Node (scripts/names.mjs) on exported documents.
"""
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from support.programs import export_program as build_program
from support.programs import call_tree_program, mlp_training
from workbench.analysis.call_tree import call_tree
from workbench.export.mime import MIME_TYPE
from workbench.widgets import style
from workbench.widgets.dataflow import dataflow_picture
from workbench.widgets.figures.call_tree_figure import edge_label

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "extensions" / "ipu-workbench"
VISUAL = json.loads((REPO / "workbench" / "widgets" / "visual_language.json").read_text(encoding="utf-8"))
BYTES = [0, 1, 1023, 1024, 1152, 1536, 1480, 10_000, 1_047_552, 1_048_576, 1_052_688, 3 * 2 ** 30 + 7,
         2 ** 41, 123_456_789] + [int(v) for v in np.random.default_rng(3).integers(0, 2 ** 36, 300)]


def extension_names(tmp_path: Path, ir) -> dict:
    node = shutil.which("node")
    assert node, "Node.js is needed to run the extension's code"
    if not (EXTENSION / "lib" / "visual.js").exists():
        pytest.fail(f"lib/visual.js missing: run `npm install && npm run build` in {EXTENSION}")
    path = tmp_path / "program.ir.json"
    path.write_text(json.dumps(ir._repr_mimebundle_()[0][MIME_TYPE]), encoding="utf-8")
    result = subprocess.run([node, "scripts/names.mjs", str(path), json.dumps(BYTES)], cwd=EXTENSION,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_python_palette_is_the_visual_language():
    assert style.KIND_COLORS == VISUAL["kinds"]["colours"] and style.KIND_LABELS == VISUAL["kinds"]["labels"]
    assert style.GROUP_COLORS == VISUAL["groups"]["colours"] and style.IPU_COLORS == VISUAL["ipus"]["colours"]
    assert style.SCHEDULE_COLORS == VISUAL["schedule"]["colours"]
    assert (style.HIGHLIGHT, style.CALL_OUTLINE, style.FONT) == (
        VISUAL["lines"]["highlight"], VISUAL["lines"]["call_outline"], VISUAL["font"])


def test_the_python_palette_keeps_the_colours_the_stored_figures_were_drawn_with():
    assert style.KIND_COLORS == {"variable": "#4C78A8", "constant": "#9D755D", "input": "#EECA3B",
                                 "intermediate": "#F58518", "code": "#54A24B"}
    assert (style.OP_OUTLINE, style.CALL_OUTLINE, style.EDGE_COLOR, style.HIGHLIGHT, style.CAPACITY_COLOR) == (
        "#44546A", "#B45F06", "#A6A6A6", "#D62728", "#C00000")
    assert style.format_bytes(1536) == "1.5 KiB" and style.format_bytes(1023) == "1023 B"


def test_the_extension_writes_byte_counts_as_python_does(tmp_path):
    names = extension_names(tmp_path, build_program()[0])
    assert names["bytes"] == [style.format_bytes(value) for value in BYTES]


@pytest.mark.parametrize("program", [lambda: build_program()[0], lambda: call_tree_program()[0],
                                     lambda: mlp_training()[0]], ids=["call-repeat-conditional", "call-tree", "mlp"])
def test_the_extension_names_ops_and_call_sites_as_the_plotly_views_do(tmp_path, program):
    ir = program()
    names = extension_names(tmp_path, ir)
    python_ops, python_frames = {}, {}
    for graph in ir.graphs:
        for node in dataflow_picture(graph, detail="full").nodes.values():
            if node.kind == "op":
                python_ops[node.item.id] = node.label
        calls = [op for op in graph.ops if op.called_graphs]
        expanded = dataflow_picture(graph, expanded=[(op,) for op in calls], detail="full")
        for op in calls:
            (key,) = expanded.keys_of(op)
            bodies = [box.label for box in expanded.boxes if len(box.frame) == 1 and box.frame[0][0] is op]
            python_frames[op.id] = {"label": expanded.nodes[key].label, "bodies": bodies}
    assert names["ops"] == python_ops
    assert names["frames"] == python_frames
    python_sites = [[edge.op.id, edge.callee.id, edge_label(edge)] for edge in call_tree(ir).edges]
    assert sorted(names["sites"]) == sorted(python_sites)
