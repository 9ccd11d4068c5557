"""ScheduleView: the schedule as a timeline per replica and IPU, from the static schedule before a run
and from the run's trace after it, coloured by kind, with in_sequence regions and the stepped op."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from widget_programs import trace
from workbench.analysis import flattened_schedule
from workbench.analysis.cost_model import op_cycles
from workbench.analysis.static_schedule import sequence_regions, static_schedule
from workbench.ir.device import device_for
from workbench.widgets import ManualScheduler, ScheduleView, Selection
from workbench.widgets.figures import schedule_figure
from workbench.widgets.figures.schedule_figure import row_label, schedule_bars, sequence_spans
from workbench.widgets.style import SCHEDULE_COLORS

DEVICE = device_for("ipu_model")


def pipeline(replicas=2):
    """x loaded on IPU 0, an in_sequence mul and add, copied to IPU 1, tanh repeated 3 times there,
    all-reduced over the replicas and stored."""
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        x_stream = popxl.h2d_stream([64], popxl.float32, name="x")
        x = ops.host_load(x_stream, name="load_x")
        w = popxl.variable(np.full(64, 0.5, np.float32), name="w")
        with popxl.in_sequence():
            a = x * w
            b = a + 1
        y = ops.ipu_copy(b, 1)
        with popxl.ipu(1):
            body = ir.create_graph(lambda t: ops.tanh(t), y)
            (z,) = ops.repeat(body, 3, y)
            total = ops.collectives.replicated_all_reduce(z)
            z_stream = popxl.d2h_stream(total.shape, total.dtype, name="z")
            ops.host_store(z_stream, total)
    return ir, x_stream, z_stream


def inputs(x_stream, replicas=2):
    return {x_stream: np.linspace(-1, 1, 64 * replicas, dtype=np.float32).reshape(replicas, 64)}


def op_of(ir, op_type, graph=None):
    return next(op for op in (graph or ir.main_graph).ops if op.type == op_type)


def test_the_pipeline_computes_what_it_says():
    ir, x_stream, z_stream = pipeline()
    data = inputs(x_stream)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run(data)
    y = data[x_stream] * 0.5 + 1
    for _ in range(3):
        y = np.tanh(y)
    np.testing.assert_allclose(outputs[z_stream], np.broadcast_to(y.sum(axis=0), (2, 64)), rtol=1e-6)


def test_an_ir_alone_shows_its_static_schedule_per_ipu_in_cost_model_cycles():
    ir, _, _ = pipeline()
    schedule = static_schedule(ir, DEVICE)
    flat = flattened_schedule(ir)
    # One event per step of the flattened schedule: the repeat body appears once.
    assert [event.op for event in schedule] == [step.op for step in flat]
    target, load, mul, add, copy, repeat, tanh, reduce, store = schedule.events
    assert (target.op.type, target.start_cycle, target.end_cycle) == ("init", 0, 0)  # an undefined init: free
    assert (load.start_cycle, load.end_cycle) == (0, op_cycles(load.op, DEVICE))
    assert mul.start_cycle == load.end_cycle and add.start_cycle == mul.end_cycle
    assert copy.ipus == (0, 1) and copy.start_cycle == add.end_cycle
    # IPU 1 is free until the copy ends; the repeat's overhead comes before its body.
    assert repeat.start_cycle == copy.end_cycle
    assert tanh.start_cycle == repeat.start_cycle + op_cycles(repeat.op, DEVICE) and tanh.repeats == (3,)
    assert repeat.end_cycle == tanh.end_cycle and tanh.parent == 5
    assert reduce.start_cycle == repeat.end_cycle and store.end_cycle == schedule.cycles
    assert [e.in_sequence for e in schedule] == [False, False, True, True, False, False, False, False, False]

    view = ScheduleView(ir, live=False)
    assert view.static and [(e.op, e.start_cycle) for e in view.events] == [(e.op, e.start_cycle) for e in schedule]
    figure = view.figure
    assert figure.layout.title.text.startswith("Static schedule (no run yet): 31,")
    assert list(figure.layout.yaxis.categoryarray) == ["IPU 1", "IPU 0"]
    compute = trace(figure, "compute", kind="compute")
    assert list(compute.y) == ["IPU 0", "IPU 0", "IPU 0", "IPU 1"]  # the load's init is a bar of no width
    assert list(compute.base) == [target.start_cycle, mul.start_cycle, add.start_cycle, tanh.start_cycle]
    assert list(compute.x) == [0, mul.cycles, add.cycles, tanh.cycles]


def test_host_io_copies_and_collectives_are_coloured_apart():
    ir, _, _ = pipeline()
    figure = ScheduleView(ir, live=False).figure
    kinds = {"host_io": "host IO", "ipu_copy": "IPU copies", "collective": "collectives", "compute": "compute",
             "control": "call sites"}
    colours = {trace(figure, name, kind=kind).marker.color for kind, name in kinds.items()}
    assert colours == {SCHEDULE_COLORS[kind] for kind in kinds} and len(colours) == 5
    assert list(trace(figure, "host IO", kind="host_io").y) == ["IPU 0", "IPU 1"]
    # An IPU copy occupies both IPUs: one bar on each row, over the same cycles.
    copy = trace(figure, "IPU copies", kind="ipu_copy")
    assert list(copy.y) == ["IPU 0", "IPU 1"] and copy.base[0] == copy.base[1] and copy.x[0] == copy.x[1]


def test_after_a_run_each_replica_and_ipu_has_a_row_of_its_trace():
    ir, x_stream, _ = pipeline()
    with popxl.Session(ir, "ipu_model") as session:
        session.run(inputs(x_stream))
        run_trace = session.last_trace
    view = ScheduleView(session, live=False)
    assert not view.static and view.events == run_trace.events
    figure = view.figure
    assert figure.layout.title.text.startswith(f"Schedule of the last run: {run_trace.summary().cycles:,} simulated")
    assert list(figure.layout.yaxis.categoryarray) == [
        "replica 1, IPU 1", "replica 1, IPU 0", "replica 0, IPU 1", "replica 0, IPU 0"]
    # Every iteration of the repeat ran: three tanh bars per replica, inside the repeat's span.
    compute = trace(figure, "compute", kind="compute")
    tanhs = [i for i, event in enumerate(run_trace.events) if event.op.type == "tanh"]
    assert len(tanhs) == 6 and set(tanhs) <= set(compute.customdata)
    for replica in (0, 1):
        bars = [bar for bar in schedule_bars(run_trace.events) if bar.row == (replica, 1)
                and run_trace.events[bar.event].op.type in ("tanh", "repeat")]
        repeat_bar = next(bar for bar in bars if run_trace.events[bar.event].op.type == "repeat")
        assert all(repeat_bar.start <= bar.start and bar.end <= repeat_bar.end for bar in bars)
    # The all-reduce ends at the same cycle in both replicas.
    collective = trace(figure, "collectives", kind="collective")
    assert list(collective.y) == ["replica 0, IPU 1", "replica 1, IPU 1"]
    assert collective.base[0] + collective.x[0] == collective.base[1] + collective.x[1]


def test_in_sequence_regions_are_shaded_behind_their_ops():
    ir, _, _ = pipeline()
    regions = sequence_regions(ir)
    mul, add = op_of(ir, "mul"), op_of(ir, "add")
    assert regions == {mul: 0, add: 0}
    events = static_schedule(ir, DEVICE).events
    (region,) = sequence_spans(events, regions)
    assert region.row == (None, 0) and region.ops == 2
    assert (region.start, region.end) == (events[2].start_cycle, events[3].end_cycle)
    shaded = trace(schedule_figure(events, regions=regions), "in_sequence")
    assert list(shaded.base) == [region.start] and list(shaded.x) == [region.end - region.start]
    assert figure_order(schedule_figure(events, regions=regions))[0] == "in_sequence"  # drawn first, behind


def figure_order(figure):
    return [t.name for t in figure.data]


def test_two_separate_in_sequence_blocks_are_two_regions():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(4, np.float32), name="x")
        with popxl.in_sequence():
            a = x + 1
            b = a * 2
        c = ops.tanh(b)
        with popxl.in_sequence():
            d = c - 1
            ops.relu(d)
    regions = sequence_regions(ir)
    assert sorted(regions.values()) == [0, 0, 1, 1]
    assert regions[op_of(ir, "add")] == 0 and regions[op_of(ir, "relu")] == 1 and op_of(ir, "tanh") not in regions


def test_seconds_are_drawn_only_for_profiled_runs():
    ir, x_stream, _ = pipeline()
    with popxl.Session(ir, "ipu_model") as session:
        session.run(inputs(x_stream))
        plain = ScheduleView(session, live=False, unit="seconds")
        assert not plain.has_seconds and plain.shown_unit == "cycles"
        assert "seconds need a run with session.profile = True" in plain.figure.layout.title.text
        with pytest.raises(ValueError, match="session.profile = True"):
            schedule_figure(plain.events, unit="seconds")
        session.profile = True
        session.run(inputs(x_stream))
        events = session.last_trace.events
    view = ScheduleView(session, live=False, unit="seconds")
    assert view.has_seconds and view.shown_unit == "seconds"
    figure = view.figure
    assert figure.layout.xaxis.title.text == "seconds (measured)"
    host = trace(figure, "host IO", kind="host_io")
    stores = [e for e in events if e.kind == "host_io"]
    np.testing.assert_allclose(sorted(host.base), sorted(e.start_seconds for e in stores))
    view.set_unit("cycles")
    assert view.figure.layout.xaxis.title.text == "simulated cycles"
    with pytest.raises(ValueError, match="'cycles' or 'seconds'"):
        view.set_unit("minutes")


def test_clicking_a_bar_selects_its_op_and_outlines_every_execution():
    ir, x_stream, _ = pipeline()
    with popxl.Session(ir, "ipu_model") as session:
        session.run(inputs(x_stream))
    selection = Selection()
    view = ScheduleView(session, live=False, selection=selection)
    tanh = op_of(ir, "tanh", graph=ir.graphs[1])
    first_tanh = next(i for i, event in enumerate(view.events) if event.op is tanh)
    view._click(first_tanh)
    assert selection.op is tanh and selection.step == view.events[first_tanh].step
    assert selection.graph is tanh.graph
    outlined = trace(view.figure, "selected op", kind="selected op")
    assert sorted(outlined.customdata) == [i for i, event in enumerate(view.events) if event.op is tanh]
    assert len(outlined.customdata) == 6  # three iterations in two replicas


def test_the_op_a_stepped_run_stands_before_is_outlined_after_each_step():
    ir, x_stream, _ = pipeline(replicas=1)
    scheduler = ManualScheduler()
    with popxl.Session(ir, "ipu_model") as session:
        view = ScheduleView(session, scheduler=scheduler)
        stepper = session.stepper({x_stream: np.ones(64, np.float32)})
        scheduler.flush()
        assert view.static  # no run yet: the static schedule, with the first op as next
        assert view.current_events() == [0]
        stop = stepper.run_to(op_type="tanh")
        version = view.version
        scheduler.flush()
        assert view.version == version + 1
        assert view.static  # while the run is stepped, it has no trace yet
        (current,) = view.current_events()
        assert view.events[current].op is stop.op and view.events[current].step == stop.position.flat_index
        nxt = trace(view.figure, "next op", kind="next op")
        assert list(nxt.customdata) == [current] and list(nxt.y) == ["IPU 1"]
        stepper.continue_()
        scheduler.flush()
        assert not view.static and view.current_events() == []
        assert all(len(t.x) == 0 for t in view.figure.data if t.name == "next op")  # kept empty: a patch clears it
        view.close()


def test_hover_text_escapes_names_and_tells_kind_cycles_and_place():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(4, np.float32), name="x")
        with popxl.name_scope("<b onmouseover=alert(1)>"):
            ops.tanh(x)
    figure = ScheduleView(ir, live=False).figure
    (text,) = trace(figure, "compute", kind="compute").hovertext
    assert "&lt;b onmouseover=alert(1)&gt;/tanh" in text and "<b onmouseover" not in text
    assert "compute: " in text and "every replica, IPU 0" in text and "step 0 of the flattened schedule" in text


def test_a_view_follows_the_ir_being_built_and_a_bad_ir_shows_its_error():
    ir = popxl.Ir()
    scheduler = ManualScheduler()
    view = ScheduleView(ir, scheduler=scheduler)
    assert view.events == [] and all(len(trace.x) == 0 for trace in view.figure.data)  # nothing drawn
    with ir.main_graph:
        x = popxl.variable(np.ones(4, np.float32), name="x")
        ops.tanh(x + 1)
    scheduler.flush()
    assert [event.op.type for event in view.events] == ["add", "tanh"]
    assert row_label((None, 0)) == "IPU 0" and row_label((3, 1)) == "replica 3, IPU 1"
    with pytest.raises(ValueError, match="'cycles' or 'seconds'"):
        ScheduleView(ir, unit="ms")
    view.close()
