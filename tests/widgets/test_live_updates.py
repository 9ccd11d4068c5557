"""Live views: events gathered into one refresh per debounce window, for Ir building and Session runs."""
import asyncio
import gc

import numpy as np

import popxl
import popxl.ops as ops
from widget_programs import chain, trace
from workbench.widgets import (CallTreeView, Debouncer, GraphView, LiveBinding, LivenessView, ManualScheduler,
                               ReplicaGroupView)
from workbench.widgets.live import AsyncioScheduler, ThreadingScheduler, default_scheduler


def test_a_thousand_events_make_one_call_per_window():
    scheduler = ManualScheduler()
    calls = []
    debounce = Debouncer(calls.append, window=0.25, scheduler=scheduler)
    for _ in range(1000):
        debounce("op_added")
    debounce("tensor_added")
    assert calls == [] and len(scheduler.pending) == 1
    assert scheduler.advance(0.2) == 0 and calls == []
    assert scheduler.advance(0.05) == 1
    assert calls == [frozenset({"op_added", "tensor_added"})]
    debounce("op_added")
    scheduler.flush()
    assert calls[1:] == [frozenset({"op_added"})]


def test_a_view_changes_once_per_window_when_a_cell_adds_a_thousand_ops():
    ir, _, _ = chain(10)
    scheduler = ManualScheduler()
    view = GraphView(ir, grouped=False, scheduler=scheduler, window=0.25)  # every op drawn, past 1,000
    assert view.version == 1 and view.picture.op_count == 10
    one = ir.main_graph.constants[0]
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([4], popxl.float32, name="more"))
        for _ in range(999):
            x = x + one
    assert view.version == 1 and view.picture.op_count == 10  # nothing redrawn while the cell runs
    scheduler.advance(0.25)
    assert view.version == 2 and view.picture.op_count == 1011  # the load is an init and the load
    assert len(trace(view.figure, "ops").x) == 1011
    with ir.main_graph:
        ops.tanh(x)
    scheduler.advance(0.25)
    assert view.version == 3 and view.picture.op_count == 1012


def test_every_view_follows_the_ir_it_is_bound_to():
    ir, _, _ = chain(4)
    scheduler = ManualScheduler()
    views = [CallTreeView(ir, scheduler=scheduler), LivenessView(ir, scheduler=scheduler),
             ReplicaGroupView(ir, scheduler=scheduler)]
    with ir.main_graph:
        popxl.variable(np.zeros(3, np.float32), name="late")
        g = ir.create_graph(lambda t: t * 2, popxl.TensorSpec((3,), popxl.float32))
        ops.call(g, ir.main_graph.variables[-1])
    scheduler.flush()
    assert [view.version for view in views] == [2, 2, 2]
    assert len(views[0].tree.nodes) == 2
    assert len(views[1].liveness.flat) == 4 + 2  # the call step and the callee's mul
    assert "variable late" in [use.label for use in views[2].uses]


def test_the_liveness_view_marks_where_a_stepped_run_stands():
    ir, x_stream, _ = chain(5)
    session = popxl.Session(ir, "ipu_model")
    scheduler = ManualScheduler()
    view = LivenessView(session, scheduler=scheduler)
    with session:
        stepper = session.stepper({x_stream: np.zeros(4, np.float32)})
        stepper.step()
        stepper.step()
        scheduler.flush()
        assert view.stepper_step == stepper.stop.position.flat_index == 2
        assert [s.x0 for s in view.figure.layout.shapes if s.name == "stepper"] == [2]


def test_a_closed_view_no_longer_refreshes():
    ir, _, _ = chain(4)
    scheduler = ManualScheduler()
    view = CallTreeView(ir, scheduler=scheduler)
    view.close()
    with ir.main_graph:
        ops.host_load(popxl.h2d_stream([4], popxl.float32, name="more"))
    assert scheduler.pending == [] and view.version == 1


def test_a_forgotten_view_unsubscribes_at_its_next_event():
    ir, _, _ = chain(4)
    scheduler = ManualScheduler()
    view = CallTreeView(ir, scheduler=scheduler)
    del view
    gc.collect()
    with ir.main_graph:
        ops.host_load(popxl.h2d_stream([4], popxl.float32, name="more"))
    scheduler.flush()
    assert ir.events._subscribers == {}


def test_a_binding_counts_only_the_kinds_it_listens_to():
    ir, _, _ = chain(4)
    scheduler = ManualScheduler()
    heard = []
    binding = LiveBinding(heard.append, ir, kinds={"graph_created"}, scheduler=scheduler)
    with ir.main_graph:
        ops.host_load(popxl.h2d_stream([4], popxl.float32, name="more"))
    assert scheduler.pending == []
    ir.create_empty_graph("extra")
    scheduler.flush()
    assert heard == [frozenset({"graph_created"})]
    binding.close()


def test_in_an_event_loop_the_window_runs_on_the_loop():
    calls = []

    async def cell():
        debounce = Debouncer(calls.append, window=0.01)
        assert isinstance(debounce.scheduler, AsyncioScheduler)
        for _ in range(100):
            debounce("op_added")
        await asyncio.sleep(0.2)

    asyncio.run(cell())
    assert calls == [frozenset({"op_added"})]


def test_without_a_loop_windows_run_in_timer_threads():
    assert isinstance(default_scheduler(), ThreadingScheduler)


def test_a_half_built_ir_that_cannot_be_analysed_shows_the_error_and_recovers():
    ir, _, _ = chain(4)
    scheduler = ManualScheduler()
    view = LivenessView(ir, scheduler=scheduler)
    broken = ir.main_graph.ops[1]
    broken.after = (ir.main_graph.ops[2],)  # an in_sequence cycle: no schedule exists
    ir.events.emit("op_changed", broken)
    scheduler.flush()
    assert view.error is not None
    assert "cannot draw this view yet" in view.figure.layout.annotations[0].text
    broken.after = ()
    ir.events.emit("op_changed", broken)
    scheduler.flush()
    assert view.error is None and len(view.liveness.flat) == 4
