"""workbench.show: every view in tabs sharing one selection (a stepper tab for a Session), a light
``import workbench``, and views that render where no widget manager runs."""
import base64
import json
import gzip
import re
import subprocess
import sys

import numpy as np

import popxl
import popxl.ops as ops
import workbench
from widget_programs import call_tree_program, trace
from workbench.export.mime import MIME_TYPE
from workbench.widgets import (CallTreeView, GraphView, LivenessView, ModelView, ReplicaGroupView, ScheduleView,
                               SessionStepperView, Workbench)
from workbench.widgets.offline_plotly import plotlyjs_for
from workbench.widgets.style import PICTURE_WIDTH
from workbench.widgets.view import PLOTLY_MIME

VIEW_TABS = ["model", "call tree", "graph", "schedule", "liveness", "replica groups"]


def small_program():
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([4], popxl.float32, name="x")
        x = ops.host_load(x_stream)
        double = ir.create_graph(lambda t: t * 2, x)
        (y,) = ops.call(double, x)
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, ops.tanh(y))
    return ir, x_stream, y_stream, double


def test_the_small_program_computes_what_it_says():
    ir, x_stream, y_stream, _ = small_program()
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_allclose(session.run({x_stream: np.arange(4, dtype=np.float32)})[y_stream],
                                   np.tanh(np.arange(4) * 2), rtol=1e-6)


def test_building_and_running_a_program_loads_no_picture_library_until_a_view_is_made():
    """A script (or each instance of a poprun job) starts without plotly, ipywidgets or networkx."""
    code = ("import sys, numpy, workbench, popxl, popxl.ops as ops\n"
            "loaded = lambda: sorted(m for m in ('plotly', 'ipywidgets', 'networkx') if m in sys.modules)\n"
            "print(loaded())\n"
            "ir = popxl.Ir()\n"
            "with ir.main_graph:\n"
            "    ops.add(popxl.variable(1.0), popxl.constant(2.0))\n"
            "with popxl.Session(ir, 'ipu_model') as session:\n"
            "    session.run()\n"
            "print(loaded())\n"
            "assert {'show', 'report'} <= set(dir(workbench))\n"
            "wb = workbench.show(popxl.Ir(), live=False)\n"
            "print(loaded())\n"
            "wb.widget\n"
            "print(loaded())\n"
            "workbench.export.to_networkx(ir)\n"
            "print(loaded())\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == ["[]", "[]", "['plotly']", "['ipywidgets', 'plotly']",
                                          "['ipywidgets', 'networkx', 'plotly']"]


def test_show_and_report_are_attributes_of_the_package():
    from workbench.widgets.html_report import report
    from workbench.widgets.tabs import show

    assert workbench.show is show and workbench.report is report
    try:
        workbench.no_such_thing
    except AttributeError as error:
        assert "no attribute 'no_such_thing'" in str(error)
    else:
        raise AssertionError("expected an AttributeError")


def test_an_ir_gets_six_tabs_sharing_one_selection():
    ir, _, _, _ = small_program()
    wb = workbench.show(ir, live=False)
    assert isinstance(wb, Workbench) and wb.tabs == VIEW_TABS
    kinds = [ModelView, CallTreeView, GraphView, ScheduleView, LivenessView, ReplicaGroupView]
    assert [type(wb[tab]) for tab in wb.tabs] == kinds
    assert all(view.selection is wb.selection for view in wb.views.values())
    tab = wb.widget
    assert list(tab.titles) == VIEW_TABS and tab.selected_index == 0
    # A tab's view widget is made when the tab is first opened.
    assert [list(page.children[1:]) for page in tab.children] == [[wb["model"].widget], [], [], [], [], []]
    assert all(wb[t]._widget is None for t in VIEW_TABS[1:])
    tab.selected_index = VIEW_TABS.index("liveness")
    assert list(tab.children[VIEW_TABS.index("liveness")].children[1:]) == [wb["liveness"].widget]
    assert wb["graph"]._widget is None
    assert repr(wb) == f"Workbench({ir!r}: model, call tree, graph, schedule, liveness, replica groups)"


def test_a_graph_picked_in_the_call_tree_opens_in_the_model_tab_and_ops_are_marked_everywhere():
    ir, names = call_tree_program()
    wb = Workbench(ir, live=False)
    tab = wb.widget
    assert tab.selected_index == 0
    tab.selected_index = VIEW_TABS.index("call tree")
    wb["call tree"]._click(names["g"].id)
    assert wb["graph"].graph is names["g"] and tab.selected_index == VIEW_TABS.index("model")
    assert wb["model"].graph is names["g"] and wb["model"].shown == names["g"].id
    add = names["g"].ops[0]
    wb["graph"]._click(wb["graph"].picture.keys_of(add)[0])
    assert wb.selection.op is add
    assert [wb["schedule"].events[i].op for i in trace(wb["schedule"].figure, "selected op", kind="selected op").customdata] == \
        [add] * len([e for e in wb["schedule"].events if e.op is add])
    assert len(wb["liveness"].marked_steps()) == 2  # g runs in the repeat body and in the then-branch


def test_a_session_also_gets_a_stepper_tab_over_the_model_and_schedule_views():
    ir, x_stream, _, double = small_program()
    with popxl.Session(ir, "ipu_model") as session:
        wb = workbench.show(session, {x_stream: np.ones(4, np.float32)}, live=False)
        assert wb.tabs == VIEW_TABS + ["stepper"]
        stepper = wb["stepper"]
        beside, below = stepper.views
        assert isinstance(stepper, SessionStepperView) and isinstance(beside, ModelView) and below is wb["schedule"]
        assert beside.selection is wb.selection and beside.width < PICTURE_WIDTH
        wb.widget.selected_index = len(wb.tabs) - 1
        assert list(wb.widget.children[-1].children[1:]) == [stepper.widget]
        for _ in range(3):  # the load's init, the load, the call
            stepper.buttons["step"].click()
        assert wb.selection.op is double.ops[0] and wb["graph"].graph is double
        assert beside.graph is double and any(n["key"] == double.ops[0].id for n in beside.picture["nodes"])
        (current,) = wb["schedule"].current_events()
        assert wb["schedule"].events[current].op is double.ops[0]
    assert "Session on ipu_model" in repr(wb)


def test_without_a_kernel_every_view_and_the_workbench_display_as_static_html():
    ir, x_stream, _, _ = small_program()
    with popxl.Session(ir, "ipu_model") as session:
        session.run({x_stream: np.ones(4, np.float32)})
        wb = Workbench(session, {x_stream: np.ones(4, np.float32)}, live=False)
    for tab in VIEW_TABS:
        bundle, _ = wb[tab]._repr_mimebundle_()
        assert PLOTLY_MIME in bundle and "plotly-graph-div" in bundle["text/html"]
        assert not any("widget" in mime for mime in bundle)
        # Drawn again from a saved notebook, the picture keeps the width its labels were fitted to.
        assert bundle[PLOTLY_MIME]["layout"]["width"] == PICTURE_WIDTH
    bundle, metadata = wb._repr_mimebundle_()
    # The extension's picture of the Session, opened on its memory, stays where no widget can be drawn.
    assert set(bundle) == {"text/plain", "text/html", MIME_TYPE} and metadata[MIME_TYPE]["view"] == "memory"
    # One figure per tab, except the graph tab: one per graph of the call tree (main and double).
    assert bundle["text/html"].count("plotly-graph-div") == len(VIEW_TABS) - 1 + len(ir.graphs)
    # plotly.js once for the whole workbench, inside the HTML (gzipped): offline it still draws.
    html = bundle["text/html"]
    assert "cdn.plot.ly" not in html and not re.search(r"<script[^>]*\bsrc=", html)
    (packed,) = re.findall(r"<script id='plotly-js-[0-9a-f]+' type='application/gzip;base64'>([^<]*)</script>", html)
    assert gzip.decompress(base64.b64decode(packed)).decode("utf-8") == plotlyjs_for(["scatter", "bar"])
    assert "cdn.plot.ly" not in wb["liveness"]._repr_mimebundle_()[0]["text/html"]
    assert "<h3>Stepper</h3>" not in bundle["text/html"]  # nothing stepped yet


def test_show_of_a_10000_op_program_stays_under_2_mb():
    """Its saved picture is the model tab's top group, not the whole document (8 MB at this size)."""
    import comm as comm_package
    from real_programs import wide_program

    sent = []
    original = comm_package.DummyComm.publish_msg
    comm_package.DummyComm.publish_msg = lambda self, msg_type, data=None, *args, **keys: sent.append(
        len(json.dumps(data, default=str)))
    try:
        ir = wide_program()
        wb = workbench.show(ir, live=False)
        static, _ = wb.static_bundle()
        wb.widget
    finally:
        comm_package.DummyComm.publish_msg = original
    assert set(static) == {PLOTLY_MIME}
    assert static[PLOTLY_MIME]["layout"]["title"]["text"].startswith("main (10003 ops)")
    assert len(json.dumps(static)) + sum(sent) <= 2 * 2 ** 20


def test_show_of_a_2102_op_chain_keeps_the_model_tabs_picture_not_the_whole_document():
    """From ``FIRST_PICTURE_OPS`` ops the whole document would take a second before the first picture."""
    from real_programs import long_chain
    from workbench.export.first_picture import FIRST_PICTURE_OPS

    ir = long_chain()
    assert sum(len(graph.ops) for graph in ir.graphs) >= FIRST_PICTURE_OPS
    static, _ = workbench.show(ir, live=False).static_bundle()
    assert set(static) == {PLOTLY_MIME}
    assert static[PLOTLY_MIME]["layout"]["title"]["text"].startswith("main (2102 ops)")
