"""SessionStepperView: buttons that step a session's run, the live values per replica, the current op
highlighted in the graph and schedule views through the shared selection, and errors shown in the view."""
import numpy as np

import popxl
from workbench.export.mime import MIME_TYPE
import popxl.ops as ops
from widget_programs import trace
from support.faulty_ops import exploding_op  # noqa: F401  (a fixture)
from workbench.widgets import GraphView, ScheduleView, Selection, SessionStepperView
from workbench.widgets.figures.replica_figure import format_value
from workbench.widgets.stepper_view import live_rows

W = np.array([1.0, 2.0, 3.0], np.float32)


def program(replicas=2, x_name="x"):
    """z = tanh(tanh(x * w)): a call of ``scale`` (x * w), then a repeat of ``body`` (tanh) twice."""
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        x_stream = popxl.h2d_stream([3], popxl.float32, name="x")
        x = ops.host_load(x_stream, name=x_name)
        w = popxl.variable(W, name="w")
        scale = ir.create_graph(lambda t, v: t * v, x, w)
        (y,) = ops.call(scale, x, w)
        body = ir.create_graph(lambda t: ops.tanh(t), y)
        (z,) = ops.repeat(body, 2, y)
        z_stream = popxl.d2h_stream(z.shape, z.dtype, name="z")
        ops.host_store(z_stream, z)
    return ir, x_stream, z_stream, dict(scale=scale, body=body)


def data(replicas=2):
    return np.arange(3 * replicas, dtype=np.float32).reshape(replicas, 3) / 4


def op_of(graph, op_type):
    return next(op for op in graph.ops if op.type == op_type)


def test_the_program_computes_what_it_says():
    ir, x_stream, z_stream, _ = program()
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({x_stream: data()})
    np.testing.assert_allclose(outputs[z_stream], np.tanh(np.tanh(data() * W)), rtol=1e-6)


def test_clicking_step_runs_one_op_and_the_table_shows_live_values_per_replica():
    ir, x_stream, _, _ = program()
    with popxl.Session(ir, "ipu_model") as session:
        view = SessionStepperView(session, {x_stream: data()}, views=[])
        view.widget
        assert view.status == "not started" and "not started" in view.status_box.value
        view.buttons["step"].click()
        assert view.stop.op.type == "host_load"  # the load's init ran
        view.buttons["step"].click()
        stop = view.stop
        assert stop.actions == 2 and stop.op.type == "call" and view.message == ""
        x_row = next(row for row in view.rows if row.name == "x")
        assert x_row.read_next and x_row.spec == "float32[3]" and x_row.graph == "main"
        assert x_row.values == (format_value(data()[0]), format_value(data()[1]))
        assert all(value in view.table.value for value in x_row.values)
        assert "<th" in view.table.value and "replica 1" in view.table.value
        assert view.status_box.value.startswith("<p><b>paused</b>: before call")
        assert "step 2 of the flattened schedule" in view.status_box.value
        view.close()


def test_the_current_op_is_highlighted_in_the_graph_and_schedule_views_through_the_selection():
    ir, x_stream, _, graphs = program()
    with popxl.Session(ir, "ipu_model") as session:
        selection = Selection()
        graph_view = GraphView(session, selection=selection, live=False)
        schedule_view = ScheduleView(session, selection=selection, live=False)
        view = SessionStepperView(session, {x_stream: data()}, selection=selection,
                                  views=[graph_view, schedule_view])
        beside, below = view.widget.children[-2:]
        # The first view beside the live values, the others below.
        assert beside.children[1].children[0] is graph_view.widget and below is schedule_view.widget
        assert beside.layout.flex_flow == "row wrap"  # beside the table where there is room, else under it
        view.buttons["step"].click()  # the load's init
        view.buttons["step"].click()
        call = op_of(ir.main_graph, "call")
        assert selection.op is call and selection.step == 2
        assert list(trace(graph_view.figure, "selected").customdata) == graph_view.picture.keys_of(call)
        nxt = trace(schedule_view.figure, "next op", kind="next op")
        assert [schedule_view.events[i].op for i in nxt.customdata] == [call]
        # Stepping into the call shows the called graph, its first op selected.
        view.buttons["step"].click()
        mul = op_of(graphs["scale"], "mul")
        assert selection.graph is graphs["scale"] and graph_view.graph is graphs["scale"]
        assert list(trace(graph_view.figure, "selected").customdata) == graph_view.picture.keys_of(mul)
        (current,) = schedule_view.current_events()
        assert schedule_view.events[current].op is mul
        view.close()


def test_step_over_run_to_breakpoints_continue_and_reset_from_the_buttons():
    ir, x_stream, z_stream, graphs = program()
    with popxl.Session(ir, "ipu_model") as session:
        expected = session.run({x_stream: data()})[z_stream]
        view = SessionStepperView(session, {x_stream: data()}, views=[])
        buttons = view.widget and view.buttons
        for _ in range(3):  # the load's init, the load, the call
            buttons["step over"].click()
        assert view.stop.op.type == "repeat" and view.stop.actions == 3
        view.target.value = "tanh"  # an op type
        buttons["run to"].click()
        assert view.stop.op.type == "tanh" and view.stop.position.graph is graphs["body"]
        assert "iteration 1 of 2" in view.status_box.value
        buttons["step out"].click()
        assert view.stop.op.type == "host_store"
        # A breakpoint at the selected op, then reset and continue to it.
        store = op_of(ir.main_graph, "host_store")
        view.selection.op = store
        buttons["breakpoint"].click()
        assert "Breakpoint(op='" in view.status_box.value
        buttons["reset"].click()
        assert view.stop.reason == "reset" and view.stop.op.type == "init"
        buttons["continue"].click()
        assert view.stop.op is store and view.stop.breakpoint is not None
        buttons["continue"].click()
        assert view.status == "finished" and "the outputs are ready" in view.status_box.value
        np.testing.assert_array_equal(view.stepper.outputs[z_stream], expected)
        assert format_value(expected) in view.table.value and "output stream" in view.table.value
        assert {name for name, b in buttons.items() if not b.disabled} == {"reset"}
        assert view.selection.op is None
        # Run to an op by name; toggling the breakpoint again removes it.
        buttons["reset"].click()
        view.target.value = store.name
        buttons["run to"].click()
        assert view.stop.op is store
        buttons["breakpoint"].click()
        assert view.stepper.breakpoints == ()
        view.close()


def test_errors_are_shown_in_the_view_and_do_not_raise_from_the_buttons(exploding_op):
    from workbench.ops.registry import apply

    ir, x_stream, _, _ = program()
    session = popxl.Session(ir, "ipu_model")
    view = SessionStepperView(session, {x_stream: data()}, views=[])
    view.widget
    with session:
        view.target.value = "no_such_op"
        view.buttons["run to"].click()
        assert "no op named 'no_such_op'" in view.error_box.value
        view.buttons["step"].click()
        assert view.message == "" and view.error_box.value == "" and view.stop.actions == 1

    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        stream = popxl.h2d_stream([2], popxl.float32, name="x")
        y = apply("test_explode", ops.host_load(stream))
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    bad = np.ones((2, 2), np.float32)
    bad[1] = -1
    with popxl.Session(ir, "ipu_model") as session:
        view = SessionStepperView(session, {stream: bad}, views=[])
        view.widget
        view.buttons["continue"].click()
        assert view.status == "failed" and type(view.error).__name__ == "ReplicaExecutionError"
        assert "replica 1 failed in op" in view.error_box.value and "negative input" in view.error_box.value
        assert {name for name, b in view.buttons.items() if not b.disabled} == {"reset"}
        view.buttons["reset"].click()
        assert view.status == "ready" and view.message == ""


def test_the_view_follows_its_stepper_driven_from_code():
    ir, x_stream, _, _ = program(replicas=1)
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper({x_stream: data(1)[0]})
        view = SessionStepperView(session, stepper=stepper, views=[])
        view.widget
        stepper.step()
        assert view.stop is stepper.stop and view.selection.op is stepper.stop.op
        assert [row.name for row in live_rows(stepper.stop)] == [row.name for row in view.rows]
        assert "replica 0" in view.table.value and "replica 1" not in view.table.value
        other = session.stepper({x_stream: data(1)[0]})
        other.step()  # another stepper's stops are not this view's
        assert view.stop is stepper.stop
        view.close()


def test_outside_a_kernel_the_view_is_html_with_names_escaped():
    name = "<img src=x onerror=alert(1)>"
    ir, x_stream, _, _ = program(replicas=1, x_name=name)
    with popxl.Session(ir, "ipu_model") as session:
        view = SessionStepperView(session, {x_stream: data(1)[0]}, views=[])
        view.step()
        view.step()
        bundle, metadata = view._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", MIME_TYPE} and metadata[MIME_TYPE]["view"] == "memory"
    assert "&lt;img src=x onerror=alert(1)&gt;" in bundle["text/html"] and name not in bundle["text/html"]
    assert bundle["text/plain"].startswith("SessionStepperView(paused: before call")


def test_the_status_names_every_enclosing_loop_iteration_and_counts_steps():
    def squash(t):
        return ops.tanh(t)

    def loop_body(t):
        return ops.call(inner, t)[0] + 1

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.zeros(2, np.float32), name="x")
        inner = ir.create_graph(squash, x)
        body = ir.create_graph(loop_body, x)
        ops.var_updates.copy_var_update_(x, ops.repeat(body, 3, x)[0])
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        session.run()
        view = SessionStepperView(session, views=[])
        view.widget
        view.stepper.add_breakpoint(op_type="tanh")
        view.buttons["continue"].click()
        view.buttons["continue"].click()
        assert view.stop.position.graph is inner
        assert f"iteration 2 of 3 of {body.label!r}" in view.status_box.value
        schedule = ScheduleView(session, live=False)
        assert schedule.figure.layout.title.text.startswith("Static schedule (the run in progress has no trace yet)")
        view.stepper.clear_breakpoints()
        view.buttons["continue"].click()
        steps = view.stop.actions
        assert steps > 3  # steps taken, not the 3 commands
        assert f"after {steps} steps (each an op run or a call entered): the outputs are ready" in view.status_box.value


def test_breakpoints_are_drawn_in_the_graph_and_schedule_views_until_removed():
    ir, x_stream, _, graphs = program()
    with popxl.Session(ir, "ipu_model") as session:
        view = SessionStepperView(session, {x_stream: data()})
        graph_view, schedule_view = view.views
        tanh = op_of(graphs["body"], "tanh")
        view.toggle_breakpoint(tanh)
        view.continue_()
        assert view.stop.op is tanh  # the graph view now shows the body, where the breakpoint is
        dots = trace(graph_view.figure, "breakpoints")
        assert [graph_view.picture.nodes[key].item for key in dots.customdata] == [tanh]
        ops_trace = trace(graph_view.figure, "ops")
        x, y = dict(zip(ops_trace.customdata, zip(ops_trace.x, ops_trace.y)))[dots.customdata[0]]
        assert dots.x[0] < x and dots.y[0] == y  # on the op's left
        marked = trace(schedule_view.figure, "breakpoints").customdata
        assert marked and {schedule_view.events[i].op for i in marked} == {tanh}
        view.toggle_breakpoint(tanh)
        assert "breakpoints" not in [t.name for t in graph_view.figure.data + schedule_view.figure.data]
        view.close()


def test_a_gradient_in_the_live_table_says_which_variable_it_is_the_gradient_of():
    from real_programs import transformer

    ir, inputs = transformer(layers=2)
    reduce = next(op for op in ir.main_graph.ops if op.type == "replicated_all_reduce")
    weight = next(op for op in ir.main_graph.ops if op.type == "accumulate_").inputs[0]
    with popxl.Session(ir, "ipu_model") as session:
        view = SessionStepperView(session, inputs, live=False)
        view.run_to(reduce)
        assert view.stop.op is reduce
        (row,) = [row for row in view.rows if row.read_next]
        assert row.name == f"∂\u00a0{weight.name} ({reduce.inputs[0].name})" == "∂\u00a0layer0.qkv (Gradient___ws_0)"
        assert "∂\u00a0layer0.qkv (Gradient___ws_0)" in view.values_html()
