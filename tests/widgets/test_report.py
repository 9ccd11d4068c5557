"""workbench.report: one standalone HTML file with every view of Irs and Sessions, plotly.js inline
once (no network needed), and every name from the IR written as text."""
import base64
import gzip
import re

import numpy as np
import pytest
from plotly.offline import get_plotlyjs, get_plotlyjs_version

import popxl
import popxl.ops as ops
import workbench
from workbench.widgets import Workbench
from workbench.widgets.html_report import report_html
from workbench.widgets.offline_plotly import BASIC_BUNDLE, plotlyjs_for

HOSTILE = "<img src=x onerror=alert(1)>"
ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"


def hostile_program():
    """A variable, a stream and (through a name scope) every op named with markup."""
    ir = popxl.Ir(replication=2)
    with ir.main_graph, popxl.name_scope(HOSTILE):
        x_stream = popxl.h2d_stream([4], popxl.float32, name=HOSTILE)
        w = popxl.variable(np.full(4, 3.0, np.float32), name=HOSTILE)
        y = ops.host_load(x_stream) * w
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
    return ir, x_stream, y_stream


def bundles(page: str) -> list[str]:
    """The plotly.js bundles packed into a report page, unpacked."""
    packed = re.findall(r"<script id='plotly-js' type='application/gzip;base64'>([^<]*)</script>", page)
    return [gzip.decompress(base64.b64decode(p)).decode("utf-8") for p in packed]


def without_bundles(page: str) -> str:
    return re.sub(r"(<script id='plotly-js'[^>]*>)[^<]*", r"\1", page)


def inputs(x_stream):
    return {x_stream: np.arange(8, dtype=np.float32).reshape(2, 4)}


def test_the_hostile_program_computes_what_it_says():
    ir, x_stream, y_stream = hostile_program()
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run(inputs(x_stream))[y_stream], inputs(x_stream)[x_stream] * 3)


def test_the_report_is_one_standalone_file_with_plotly_inline_once_and_every_view(tmp_path):
    ir, x_stream, _ = hostile_program()
    with popxl.Session(ir, "ipu_model") as session:
        session.run(inputs(x_stream))
    path = workbench.report(session, tmp_path / "report.html")
    assert path == tmp_path / "report.html"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and bundles(text) == [plotlyjs_for(["scatter", "bar"])]
    page = without_bundles(text)
    assert "cdn.plot.ly" not in page and not re.search(r"<script[^>]*\bsrc=", page)  # nothing fetched
    for heading in ("Model", "Call tree", "Graph main", "Schedule", "Liveness", "Replica groups"):
        assert f"<h3>{heading}</h3>" in text
    assert text.count('class="plotly-graph-div"') == 6
    assert "Schedule of the last run" in text and "Memory over" in text
    assert f"Session on ipu_model, 1 run, of {ir!r}: 1 graph, 4 ops, 2 replicas" in text


def test_names_from_the_ir_appear_escaped_never_as_markup(tmp_path):
    ir, x_stream, _ = hostile_program()
    with popxl.Session(ir, "ipu_model") as session:
        wb = Workbench(session, inputs(x_stream), live=False)
        wb["stepper"].step()  # the load's init
        wb["stepper"].step()  # the stepper's table of live tensors is written by the report itself
        path = workbench.report(wb, tmp_path / "report.html", title=HOSTILE)
    text = path.read_text(encoding="utf-8")
    assert HOSTILE not in text
    assert f"<title>{ESCAPED}</title>" in text and f"<h1>{ESCAPED}</h1>" in text
    assert "<h3>Stepper</h3>" in text and "<b>read by the next op</b>" in text
    stepper_html = text[text.index("<h3>Stepper</h3>"):].replace("<wbr>", "")  # names break after a /
    # The loaded x (named after its stream) and w, with their values in replicas 0 and 1.
    assert f">{ESCAPED}/{ESCAPED}_1<" in stepper_html and f">{ESCAPED}/{ESCAPED}<" in stepper_html
    assert ">[0., 1., 2., 3.]<" in stepper_html and ">[4., 5., 6., 7.]<" in stepper_html
    # In the figures' JSON plotly writes markup characters as escapes; hover texts escape them too.
    assert "\\u003cimg src=x onerror=alert(1)\\u003e" in text
    assert f"{ESCAPED}/mul" in text


def test_several_irs_and_sessions_share_one_file_with_a_table_of_contents(tmp_path):
    first, _, _ = hostile_program()
    second = popxl.Ir()
    with second.main_graph:
        ops.tanh(popxl.variable(np.ones(3, np.float32), name="v"))
    text = report_html([first, second], title="two programs", summary="built by a test")
    assert len(bundles(text)) == 1
    assert text.count("<section id=") == 2 and text.count("<li><a href='#section-") == 2
    assert "Static schedule (no run yet)" in text and "<p class='summary'>built by a test</p>" in text
    assert text.count('class="plotly-graph-div"') == 12
    assert len(set(re.findall(r'id="(workbench-\d+)"', text))) == 12  # every figure its own div


def test_an_empty_list_still_makes_a_page():
    text = report_html([])
    assert "Nothing to show" in text and len(bundles(text)) == 1


@pytest.mark.skipif(not BASIC_BUNDLE.exists(), reason="the extension's build copies plotly.js's basic bundle")
def test_the_report_packs_plotlys_basic_bundle_when_every_trace_is_basic():
    assert plotlyjs_for(["scatter", "bar"]) == BASIC_BUNDLE.read_text(encoding="utf-8")
    assert f"v{get_plotlyjs_version()}" in plotlyjs_for(["scatter"])[:200]
    assert plotlyjs_for(["scatter", "heatmap"]) == get_plotlyjs()  # the basic bundle cannot draw a heatmap


def test_the_report_draws_every_graph_of_the_call_tree(tmp_path):
    from support.programs import mlp_training

    ir, inputs = mlp_training()
    with popxl.Session(ir, "ipu_model") as session:
        session.run(inputs)
    page = workbench.report(session, tmp_path / "mlp.html").read_text(encoding="utf-8")
    for graph in ir.graphs:
        assert f"<h3>Graph {graph.label}</h3>" in page
    assert page.count('class="plotly-graph-div"') == 5 + len(ir.graphs)
    if BASIC_BUNDLE.exists():
        assert len(page.encode("utf-8")) <= 2 * 2 ** 20  # the MLP's whole report within 2 MiB
