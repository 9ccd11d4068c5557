"""A big program's display in a kernel comes in two steps: a small document with the top level of its
grouped picture at once, then the whole document (as JSON text) in its place; a small program, or a
display outside a kernel, is one bundle as before. The extension draws both steps (its node tests)."""
import json
import re

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import display
from IPython.utils.capture import capture_output

from real_programs import wide_program
from test_documents import run_node_tests
from workbench.export import first_picture
from workbench.export.first_picture import FIRST_PICTURE_OPS, first_bundle
from workbench.export.mime import MIME_TYPE


@pytest.fixture
def kernel(monkeypatch):
    """An IPython shell whose displays count as going to a kernel, its display messages captured."""
    InteractiveShell.instance()
    monkeypatch.setattr(first_picture, "_in_kernel", lambda: True)


def test_a_big_ir_shows_its_top_level_at_once_then_the_whole_document_in_its_place(kernel):
    ir = wide_program(blocks=31)  # 3,102 ops
    assert sum(len(graph.ops) for graph in ir.graphs) >= FIRST_PICTURE_OPS
    with capture_output() as captured:
        display(ir)
    first, whole = captured._outputs
    assert not first["update"] and whole["update"]
    assert first["transient"]["display_id"] == whole["transient"]["display_id"]
    small = first["data"][MIME_TYPE]
    assert len(json.dumps(small)) < 10_000 and small["graphs"][0]["ops"] == []
    [grouped] = small["grouped"]["graphs"]
    assert [picture["id"] for picture in grouped["groups"]] == [grouped["root"]]
    assert first["metadata"][MIME_TYPE]["arriving"].startswith("3,102 ops: the top level first")
    expected, metadata = ir._repr_mimebundle_()
    assert json.loads(whole["data"][MIME_TYPE]) == expected[MIME_TYPE]
    assert whole["metadata"] == metadata and "arriving" not in whole["metadata"][MIME_TYPE]
    assert grouped["groups"][0] == next(g for g in expected[MIME_TYPE]["grouped"]["graphs"][0]["groups"]
                                        if g["id"] == grouped["root"])


def test_a_big_graph_opens_on_itself_in_both_steps(kernel):
    graph = wide_program(blocks=31).main_graph
    with capture_output() as captured:
        display(graph)
    first, whole = captured._outputs
    assert first["metadata"][MIME_TYPE]["graph"] == whole["metadata"][MIME_TYPE]["graph"] == graph.id


def test_a_small_ir_or_one_outside_a_kernel_displays_as_one_bundle(kernel, monkeypatch):
    small = wide_program(blocks=2)
    assert small._ipython_display_ is None
    with capture_output() as captured:
        display(small)
    [only] = captured._outputs
    assert only["data"][MIME_TYPE] == small._repr_mimebundle_()[0][MIME_TYPE]
    monkeypatch.setattr(first_picture, "_in_kernel", lambda: False)
    assert wide_program(blocks=31)._ipython_display_ is None


def test_the_extension_draws_the_first_document_then_the_whole_one(tmp_path, kernel):
    ir = wide_program(blocks=31)
    with capture_output() as captured:
        display(ir)
    first, whole = ({"data": output["data"], "metadata": output["metadata"]} for output in captured._outputs)
    path = tmp_path / "arriving.json"
    path.write_text(json.dumps({"first": first, "whole": whole}), encoding="utf-8")
    out = run_node_tests({"IPU_WB_ARRIVING": str(path)}, "test/arriving.test.mjs")
    for name in ("the first document shows the top level alone and says that the rest is on its way",
                 "the whole document, as JSON text, replaces the first in the same renderer"):
        assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), name


def test_the_first_bundle_of_a_graph_draws_that_graph():
    ir = wide_program(blocks=2)
    data, metadata = first_bundle(ir.main_graph)
    assert data[MIME_TYPE]["grouped"]["graphs"][0]["graph"] == ir.main_graph.id == metadata[MIME_TYPE]["graph"]
