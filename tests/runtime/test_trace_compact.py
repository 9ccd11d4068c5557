"""Compact traces: repeat iterations that only shift the one before are kept once, and a run with more
events than the session's limit keeps only its summary."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.widgets import ScheduleView

FIELDS = ("replica", "ipu", "ipus", "op", "kind", "step", "call_path", "iterations", "parent", "in_sequence",
          "cycles", "start_cycle", "end_cycle")


def nested_loops(outer: int, inner: int):
    """A repeat whose body copies between IPUs and runs a repeat of its own."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([8], popxl.float32, name="x"))
        inner_body = ir.create_graph(lambda t: ops.exp(t) * 0.5, x)

        def outer_body(t):
            (t,) = ops.repeat(inner_body, inner, t)
            u = ops.ipu_copy(t, 1)
            with popxl.ipu(1):
                u = ops.tanh(u)
            return ops.ipu_copy(u, 0)

        (y,) = ops.repeat(ir.create_graph(outer_body, x), outer, x)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    return ir


def traces(ir, replicas_data):
    """The trace of an unprofiled run (compact) and of a profiled one (every event walked)."""
    stream = ir.get_all_h2d_streams().pop()
    with popxl.Session(ir, "ipu_model") as session:
        session.run({stream: replicas_data})
        compact = session.last_trace
        session.profile = True
        session.run({stream: replicas_data})
        walked = session.last_trace
    return compact, walked


def as_rows(trace):
    return [tuple(getattr(event, name) for name in FIELDS) for event in trace]


def test_copied_iterations_are_the_events_a_full_walk_gives():
    compact, walked = traces(nested_loops(6, 5), np.ones(8, np.float32))
    assert compact.stored_events < walked.stored_events == len(walked)
    assert len(compact) == len(walked) == 4 + 6 * (4 + 5 * 2)  # main: init, host_load, repeat, host_store
    assert as_rows(compact) == as_rows(walked)
    assert as_rows(compact.events) == as_rows(walked.events)
    assert compact.of(replica=0, kind="compute") == [e for e in compact.events if e.kind == "compute"]
    fields = ("cycles", "cycles_per_replica", "cycles_per_ipu", "busy_cycles_per_ipu", "cycles_per_kind")
    for name in fields:
        assert getattr(compact.summary(), name) == getattr(walked.summary(), name)


def test_a_loop_of_a_hundred_thousand_iterations_keeps_a_few_events():
    ir = nested_loops(100_000, 3)
    stream = ir.get_all_h2d_streams().pop()
    with popxl.Session(ir, "ipu_model") as session:
        session.run({stream: np.ones(8, np.float32)})
        trace = session.last_trace
    assert len(trace) == 4 + 100_000 * (4 + 3 * 2)
    assert trace.stored_events < 100
    last = trace.summary().cycles
    assert last == max(event.end_cycle for event in trace)


def test_replicas_with_collectives_in_their_loop_are_walked_and_numbered_in_turn():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([4], popxl.float32, name="x"))
        body = ir.create_graph(lambda t: ops.collectives.replicated_all_reduce(t) * 0.5, x)
        (y,) = ops.repeat(body, 4, x)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    compact, walked = traces(ir, np.ones((2, 4), np.float32))
    assert compact.stored_events == len(compact) == len(walked)
    assert as_rows(compact) == as_rows(walked)
    second = compact.of(replica=1)
    assert all(compact.events[e.parent].replica == 1 for e in second if e.parent is not None)


def test_a_run_over_the_event_limit_keeps_only_its_summary():
    ir = nested_loops(4, 3)
    stream = ir.get_all_h2d_streams().pop()
    with popxl.Session(ir, "ipu_model") as session:
        session.run({stream: np.ones(8, np.float32)})
        full = session.last_trace
        session.trace_event_limit = 5
        session.run({stream: np.ones(8, np.float32)})
        summary_only = session.last_trace
        view = ScheduleView(session, live=False)
    assert full.has_events and not summary_only.has_events
    assert summary_only.stored_events == 0 and len(summary_only) == len(full)
    fields = ("cycles", "cycles_per_replica", "cycles_per_ipu", "busy_cycles_per_ipu", "cycles_per_kind")
    for name in fields:
        assert getattr(summary_only.summary(), name) == getattr(full.summary(), name)
    with pytest.raises(ValueError, match=r"kept only its summary: the run had 44 events, more than the "
                                         r"session's trace_event_limit"):
        summary_only.events
    assert view.static and "kept only its summary" in view.static_label()


def test_the_event_limit_is_a_non_negative_int():
    ir = nested_loops(2, 2)
    session = popxl.Session(ir, "ipu_model")
    for wrong in (-1, 1.5, True):
        with pytest.raises(ValueError, match="trace_event_limit must be a non-negative int, got"):
            session.trace_event_limit = wrong
    session.trace_event_limit = 0
    assert session.trace_event_limit == 0
