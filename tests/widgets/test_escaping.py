"""Names from the IR are shown as written in every figure and HTML output of the widgets: plotly reads
a subset of HTML in hovers, labels, titles, tick labels and table cells, so a graph, op, tensor,
variable or stream called ``<b>bold</b>`` must show those characters, not bold text, and one called
``<img ...>`` must never become an element."""
import re

import numpy as np
import pytest

import popxl
import popxl.ops as ops
import workbench
from workbench.widgets import (CallTreeView, GraphView, LivenessView, ReplicaGroupView, ScheduleView,
                               SessionStepperView)
from workbench.widgets.style import text
from workbench.widgets.view import error_figure

HOSTILE = "<img src=x onerror=alert(1)>"
BOLD = "<b>bold</b>"
ESCAPED_HOSTILE = "&lt;img src=x onerror=alert(1)&gt;"
ESCAPED_BOLD = "&lt;b&gt;bold&lt;/b&gt;"
RAW = ("<img", "<b>bold")


def named(name, function):
    """``function`` under the name ``create_graph`` gives its graph."""
    function.__qualname__ = name
    return function


def hostile_program():
    """2 replicas: w (one value per replica) scales x in a call of a graph named HOSTILE, the product
    is summed over the replicas, then a repeat of a graph named BOLD takes tanh twice. Ops are named
    through name scopes; tensors, the variable and both streams carry the names too."""
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x_stream = popxl.h2d_stream([4], popxl.float32, name=HOSTILE)
        w = popxl.variable(np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32), name=BOLD,
                           replica_grouping=ir.replica_grouping(group_size=1))
        with popxl.name_scope(HOSTILE):
            x = ops.host_load(x_stream, name=BOLD)
            scale = ir.create_graph(named(HOSTILE, lambda t, v: t * v), x, w)
            (y,) = ops.call(scale, x, w)
        with popxl.name_scope(BOLD):
            total = ops.collectives.replicated_all_reduce(y)
            body = ir.create_graph(named(BOLD, lambda t: ops.tanh(t)), total)
            (z,) = ops.repeat(body, 2, total)
        z_stream = popxl.d2h_stream(z.shape, z.dtype, name=BOLD)
        ops.host_store(z_stream, z)
    return ir, x_stream, z_stream, w, scale


def inputs(x_stream):
    return {x_stream: np.arange(8, dtype=np.float32).reshape(2, 4) / 8}


def shown_strings(figure):
    """Every string of the figure's JSON that plotly may draw. ``customdata`` holds the keys clicks
    report back and is never drawn: a trace's hovertemplate, where it has one, fills in nothing but its
    hover lines in ``meta["lines"]`` (themselves walked here as drawn strings)."""
    strings = []

    def walk(value, key=None):
        if key == "customdata":
            return
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for name, item in value.items():
                walk(item, name)
        elif isinstance(value, (list, tuple, np.ndarray)):
            for item in value:
                walk(item)

    data = figure.to_plotly_json()
    for trace in data["data"]:
        templates = trace.get("hovertemplate", [])
        for template in [templates] if isinstance(templates, str) else templates:
            assert all(re.fullmatch(r"%\{meta\.lines\[\d+\]\}", placeholder)
                       for placeholder in re.findall(r"%\{[^}]*\}", template)), template
    walk(data)
    return strings


def assert_escaped(figure, *expected):
    """No raw markup from a name anywhere; each of ``expected`` inside some drawn string."""
    strings = shown_strings(figure)
    raw = [s for s in strings if any(marker in s for marker in RAW)]
    assert raw == []
    for part in expected:
        assert any(part in s for s in strings), part
    return strings


def test_the_hostile_program_computes_what_it_says():
    ir, x_stream, z_stream, _, _ = hostile_program()
    data = inputs(x_stream)[x_stream]
    w = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run(inputs(x_stream))
    total = (data * w).sum(axis=0)
    np.testing.assert_allclose(outputs[z_stream], np.tanh(np.tanh(np.stack([total, total]))), rtol=1e-6)


def test_the_text_helper_escapes_markup_and_leaves_quotes():
    assert text(HOSTILE) == ESCAPED_HOSTILE and text(BOLD) == ESCAPED_BOLD
    assert text("it's \"a\" & b") == "it's \"a\" &amp; b" and text(3) == "3"


def test_the_call_tree_shows_graph_and_op_names_as_text():
    ir, *_ = hostile_program()
    strings = assert_escaped(CallTreeView(ir, live=False).figure, ESCAPED_HOSTILE, ESCAPED_BOLD)
    # Our own markup still applies: the graph label in bold, lines broken.
    assert any(s.startswith(f"<b>{ESCAPED_HOSTILE}</b><br>") for s in strings)
    assert any(f"{ESCAPED_HOSTILE}/call" in s for s in strings)  # the call op in the edge hover


def test_the_graph_view_shows_tensor_op_and_graph_names_as_text_also_expanded():
    ir, _, _, _, scale = hostile_program()
    view = GraphView(ir, detail="full", live=False)
    strings = assert_escaped(view.figure, f"<b>{ESCAPED_BOLD}</b>", f"{ESCAPED_HOSTILE}/{ESCAPED_BOLD}")
    labels = [label for trace in view.figure.data if trace.name == "variables" for label in trace.text]
    assert labels == [ESCAPED_BOLD]
    assert any(s.startswith(f"<b>call</b> {ESCAPED_HOSTILE}/call") for s in strings)
    call = next(op for op in ir.main_graph.ops if op.type == "call")
    view.expand(call)
    strings = assert_escaped(view.figure, f"call: {ESCAPED_HOSTILE}")  # the box of the expanded body
    assert any(f"calls {ESCAPED_HOSTILE} (1 op)" in s for s in strings)
    view.show(scale)
    assert_escaped(view.figure, f"{ESCAPED_HOSTILE}: 1 op")  # the title


def test_the_liveness_view_shows_op_tensor_and_graph_names_as_text():
    ir, *_ = hostile_program()
    figure = LivenessView(ir, live=False).figure
    assert_escaped(figure, f"host_load {ESCAPED_HOSTILE}/host_load", f"{ESCAPED_HOSTILE}/{ESCAPED_BOLD} (main)",
                   "all code is always live")  # no code is loaded: one line instead of a code panel


def test_the_replica_group_view_shows_collective_and_variable_names_as_text():
    ir, x_stream, *_ = hostile_program()
    with popxl.Session(ir, "ipu_model") as session:
        session.run(inputs(x_stream))
        view = ReplicaGroupView(session, live=False)
        figure = view.figure
    strings = assert_escaped(figure, f"variable {ESCAPED_BOLD}", f"{ESCAPED_BOLD}/replicated_all_reduce")
    table = view.details_html()
    assert table.count(f">{ESCAPED_BOLD}</td>") == 2 and BOLD not in table
    matrix_rows = {y for trace in figure.data if (trace.meta or {}).get("panel") == "matrix" for y in trace.y}
    assert f"variable {ESCAPED_BOLD}" in matrix_rows  # a tick label of the matrix
    # The grid shows the collective's grouping; its title names the collective.
    assert any(s.startswith("1 group (") and f"{ESCAPED_BOLD}/replicated_all_reduce" in s for s in strings)


@pytest.mark.parametrize("after_a_run", [False, True])
def test_the_schedule_view_shows_op_and_graph_names_as_text(after_a_run):
    ir, x_stream, *_ = hostile_program()
    with popxl.Session(ir, "ipu_model") as session:
        if after_a_run:
            session.run(inputs(x_stream))
        figure = ScheduleView(session, live=False).figure
    assert_escaped(figure, f"graph {ESCAPED_HOSTILE} via {ESCAPED_HOSTILE}/call", f"<b>tanh {ESCAPED_BOLD}/")


def test_the_stepper_table_and_the_report_write_names_as_text(tmp_path):
    ir, x_stream, *_ = hostile_program()
    with popxl.Session(ir, "ipu_model") as session:
        view = SessionStepperView(session, inputs(x_stream), views=[])
        view.step()
        view.step()
        view.filter("bold")  # the other live tensors shown in full
        page = view.to_html()
        assert not any(marker in page for marker in RAW)
        assert f">{ESCAPED_HOSTILE}/<wbr>{ESCAPED_BOLD.replace('/', '/<wbr>')}<br>" in page  # breakable after a /
        assert f">{ESCAPED_BOLD.replace('/', '/<wbr>')}<" in page
        report = workbench.report(session, tmp_path / "report.html").read_text(encoding="utf-8")
    outside_scripts = re.sub(r"<script.*?</script>", "", report, flags=re.S)
    assert not any(marker in outside_scripts for marker in RAW)
    # In the figures' JSON plotly writes < as \u003c and / as \u002f; only the click keys
    # (customdata) hold raw names.
    drawn = re.sub(r'"customdata":\[.*?\]', "", report)
    assert "\\u003cimg" not in drawn and "\\u003cb\\u003ebold" not in drawn
    assert ESCAPED_HOSTILE in drawn and ESCAPED_BOLD.replace("/", "\\u002f") in drawn


def test_an_error_drawn_in_place_of_a_view_shows_its_names_as_text():
    figure = error_figure(ValueError(f"op {HOSTILE} of graph {BOLD} has no schedule"))
    assert_escaped(figure, f"ValueError: op {ESCAPED_HOSTILE} of graph {ESCAPED_BOLD} has no schedule")
