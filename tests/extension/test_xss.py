"""Names and strings from the IR reach the page as text, never as markup.

A program whose variable, stream, name scope (so op and tensor names) and graph are named with HTML
is exported, then drawn by the extension's own code in a DOM without a browser (jsdom, under Node's
test runner, with the views' other tests): no element comes from the names, no handler
attribute appears, and each name is shown verbatim. The browser test repeats the check in Chromium.
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import popxl
import popxl.ops as ops
import pytest

from workbench.export.mime import MIME_TYPE

EXTENSION = Path(__file__).resolve().parents[2] / "extensions" / "ipu-workbench"
IMG = '<img src=x onerror="__wbXss=1">'
SCRIPT = "<script>__wbXss=1</script>"
SVG = '"><svg onload=__wbXss=1>'


def hostile_ir() -> popxl.Ir:
    """y = body(x * w) for a graph, variable, stream and name scope named with markup."""

    def body(a):
        return a + 1

    body.__qualname__ = SVG
    ir = popxl.Ir()
    with ir.main_graph, popxl.name_scope(SCRIPT):
        x_stream = popxl.h2d_stream([4], popxl.float32, name=IMG)
        w = popxl.variable(np.ones(4, np.float32), name=IMG)
        x = ops.host_load(x_stream)
        (y,) = ops.call(ir.create_graph(body, x), x * w)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name=SCRIPT), y)
    return ir


def test_the_export_keeps_names_verbatim():
    document = hostile_ir()._repr_mimebundle_()[0][MIME_TYPE]
    assert [graph["label"] for graph in document["graphs"]] == ["main", SVG]
    assert f"{SCRIPT}/{IMG}" in [tensor["name"] for tensor in document["graphs"][0]["tensors"]]
    assert all(op["name"].startswith(SCRIPT + "/") for op in document["graphs"][0]["ops"])
    assert {stream["name"] for stream in document["streams"]} == {IMG, SCRIPT}


def test_the_views_draw_hostile_names_as_text(tmp_path):
    node = shutil.which("node")
    assert node, "Node.js is needed to run the extension's view tests"
    missing = [p for p in ("lib/view.js", "node_modules/jsdom") if not (EXTENSION / p).exists()]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: run `npm install && npm run build` in {EXTENSION}")
    path = tmp_path / "hostile.ir.json"
    path.write_text(json.dumps(hostile_ir()._repr_mimebundle_()[0][MIME_TYPE]), encoding="utf-8")
    env = dict(os.environ, IPU_WB_DOCUMENTS=str(path), IPU_WB_EXPECT_TEXT=json.dumps([IMG, SCRIPT, SVG]))
    result = subprocess.run([node, "--test", "test/views.test.mjs"], cwd=EXTENSION, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"exported document {path} renders as inert text" in result.stdout
    assert re.search(r"^# fail 0$", result.stdout, re.M) and re.search(r"^# pass [1-9]", result.stdout, re.M)


def test_the_shipped_code_never_parses_markup():
    static = EXTENSION / "labextension" / "static"
    scripts = sorted(static.glob("*.js"))
    assert scripts, f"no built extension in {static}"
    for script in scripts:
        code = script.read_text(encoding="utf-8")
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "DOMParser"):
            assert sink not in code, f"{script.name} uses {sink}"
