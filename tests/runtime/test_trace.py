"""Run traces: every op's start and end per replica and IPU, in simulated cycles, and in seconds
when the session profiles."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.analysis import flattened_schedule
from workbench.analysis.cost_model import op_cycles


def test_a_replicated_run_has_one_event_per_op_per_replica_and_collectives_meet():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        flag = ops.host_load(popxl.h2d_stream([], popxl.bool, name="flag"))
        x = ops.host_load(popxl.h2d_stream([256, 256], popxl.float32, name="x"))
        slow = ir.create_graph(lambda t: ops.tanh(ops.exp(t)), x)
        fast = ir.create_graph(lambda t: t + 1, x)
        (y,) = ops.conditional(flag, slow, fast, [x], [x])
        total = ops.collectives.replicated_all_reduce(y)
        out = popxl.d2h_stream(total.shape, total.dtype, name="y")
        ops.host_store(out, total * 2)
    streams = {s.name: s for s in ir.get_all_h2d_streams()}
    flags = np.array([True, False, False, True])
    with popxl.Session(ir, "ipu_model") as session:
        session.run({streams["flag"]: flags, streams["x"]: np.ones((4, 256, 256), np.float32)})
        trace = session.last_trace

    main_ops = list(ir.main_graph.ops)
    for replica in range(4):
        assert [e.op for e in trace.of(replica=replica) if not e.call_path] == main_ops
    # Only the branch each replica took appears in its trace.
    for replica, taken in enumerate(flags):
        ran = {e.graph for e in trace.of(replica=replica) if e.call_path}
        assert ran == {slow if taken else fast}
    # The all-reduce starts when the last replica (one that took the slow branch) arrives and ends at
    # the same cycle everywhere; the op after it starts after that.
    reduce_op = next(op for op in main_ops if op.type == "replicated_all_reduce")
    collective = trace.of(op=reduce_op)
    assert len(collective) == 4 and {e.kind for e in collective} == {"collective"}
    arrivals = [trace.of(replica=r, op=main_ops[main_ops.index(reduce_op) - 1])[0].end_cycle for r in range(4)]
    assert len(set(arrivals)) == 2
    assert {e.start_cycle for e in collective} == {max(arrivals)}
    assert {e.end_cycle for e in collective} == {max(arrivals) + op_cycles(reduce_op, session.device)}
    for replica in range(4):
        after = trace.of(replica=replica)[-2]
        assert after.op.type == "mul" and after.start_cycle >= collective[0].end_cycle


def test_repeat_iterations_each_appear_inside_the_span_of_the_repeat():
    ir = popxl.Ir()
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([64], popxl.float32, name="x"))
        body = ir.create_graph(lambda t: ops.exp(t) * 0.5, x)
        (y,) = ops.repeat(body, 3, x)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    with popxl.Session(ir, "ipu_model") as session:
        session.run({ir.get_all_h2d_streams().pop(): np.ones(64, np.float32)})
        trace = session.last_trace

    repeat_index = next(i for i, e in enumerate(trace.events) if e.op.type == "repeat")
    repeat_event = trace.events[repeat_index]
    inside = [e for e in trace if e.graph is body]
    assert [e.op.type for e in inside] == ["exp", "mul"] * 3
    assert [e.iterations for e in inside] == [(0,), (0,), (1,), (1,), (2,), (2,)]
    assert {e.parent for e in inside} == {repeat_index}
    assert repeat_event.kind == "control" and repeat_event.cycles == 3 * op_cycles(repeat_event.op, session.device)
    assert repeat_event.start_cycle <= inside[0].start_cycle
    assert repeat_event.end_cycle == inside[-1].end_cycle
    assert all(a.end_cycle <= b.start_cycle for a, b in zip(inside, inside[1:]))


def test_events_carry_the_flattened_step_and_call_path():
    ir = popxl.Ir()
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([8], popxl.float32, name="x"))
        double = ir.create_graph(lambda t: t * 2, x)
        (y,) = ops.call(double, x)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y + 1)
    with popxl.Session(ir, "ipu_model") as session:
        session.run({ir.get_all_h2d_streams().pop(): np.ones(8, np.float32)})
        trace = session.last_trace

    flat = flattened_schedule(ir)
    assert [e.step for e in trace] == list(range(len(flat)))
    assert [e.op for e in trace] == [step.op for step in flat]
    call_op = next(op for op in ir.main_graph.ops if op.type == "call")
    target, inner = trace.of(kind="compute")[:2]
    assert target.op_type == "init" and target.graph is ir.main_graph and target.call_path == ()
    assert inner.graph is double and inner.call_path == (call_op,) and inner.op_type == "mul"
    assert trace.events[inner.parent].op is call_op


def test_ops_on_different_ipus_run_side_by_side_until_a_copy_joins_them():
    ir = popxl.Ir()
    with ir.main_graph:
        with popxl.ipu(0):
            a = ops.exp(popxl.variable(np.ones((512, 512), np.float32), name="a"))
        with popxl.ipu(1):
            b = ops.exp(popxl.variable(np.ones((64, 64), np.float32), name="b"))
            c = ops.ipu_copy(a, 1)
            d = ops.sum(c) + ops.sum(b)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        trace = session.last_trace

    exp_a, exp_b, copy = trace.events[:3]
    assert (exp_a.ipu, exp_b.ipu) == (0, 1)
    assert exp_a.start_cycle == exp_b.start_cycle == 0
    assert copy.kind == "ipu_copy" and copy.ipus == (0, 1)
    assert copy.start_cycle == max(exp_a.end_cycle, exp_b.end_cycle)
    assert all(e.ipu == 1 and e.start_cycle >= copy.end_cycle for e in trace.events[3:])
    assert len(trace.of(ipu=0)) == 2 and len(trace.of(ipu=1)) == len(trace) - 1
    summary = trace.summary()
    assert summary.cycles_per_ipu[(0, 0)] == copy.end_cycle
    assert summary.cycles_per_ipu[(0, 1)] == summary.cycles == trace.events[-1].end_cycle
    assert summary.busy_cycles_per_ipu[(0, 0)] == exp_a.cycles + copy.cycles
    assert d.ipu == 1


def test_in_sequence_marks_its_ops_and_orders_them_across_ipus():
    ir = popxl.Ir()
    with ir.main_graph:
        with popxl.ipu(0):
            a = popxl.variable(np.ones((512, 512), np.float32), name="a")
        with popxl.ipu(1):
            b = popxl.variable(np.ones((8, 8), np.float32), name="b")
        with popxl.in_sequence():
            with popxl.ipu(0):
                ops.exp(a)
            with popxl.ipu(1):
                ops.exp(b)
        with popxl.ipu(1):
            ops.sin(b)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        trace = session.last_trace

    exp_a, exp_b, sin_b = (next(e for e in trace if e.op is op) for op in ir.main_graph.ops)
    assert exp_a.in_sequence and exp_b.in_sequence and not sin_b.in_sequence
    assert exp_b.start_cycle == exp_a.end_cycle


def test_summary_totals_cycles_per_replica_ipu_and_kind():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([1000], popxl.float32, name="x"))
        y = ops.collectives.replicated_all_reduce(ops.exp(x))
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    with popxl.Session(ir, "ipu_model") as session:
        session.run({ir.get_all_h2d_streams().pop(): np.ones((2, 1000), np.float32)})
        trace = session.last_trace
    summary = trace.summary()

    device = session.device
    init, host, exp, reduce, store = (op_cycles(op, device) for op in ir.main_graph.ops)
    assert init == 0  # the load's undefined target has no program
    assert summary.cycles == host + exp + reduce + store
    assert summary.cycles_per_replica == {0: summary.cycles, 1: summary.cycles}
    assert summary.cycles_per_kind == {"host_io": 2 * (host + store), "compute": 2 * exp,
                                       "collective": 2 * reduce}
    assert summary.simulated_seconds == summary.cycles / 1.33e9
    assert summary.seconds_per_kind is None and summary.seconds is not None


def test_only_a_profiled_run_records_seconds():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([16], popxl.float32, name="x"))
        body = ir.create_graph(lambda t: ops.collectives.replicated_all_reduce(t) * 0.5, x)
        (y,) = ops.repeat(body, 2, x)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    stream, data = ir.get_all_h2d_streams().pop(), np.arange(32, dtype=np.float32).reshape(2, 16)
    with popxl.Session(ir, "ipu_model") as session:
        assert not session.executable.runner.threaded  # the replicas take turns, each timed in its own order
        plain = session.run({stream: data})
        unprofiled = session.last_trace
        session.profile = True
        profiled_outputs = session.run({stream: data})
        profiled = session.last_trace

    for expected, got in zip(plain.values(), profiled_outputs.values()):
        np.testing.assert_array_equal(got, expected)
    assert not unprofiled.profiled and all(e.start_seconds is None and e.seconds is None for e in unprofiled)
    assert profiled.profiled and len(profiled) == len(unprofiled)
    for replica in range(2):
        events = profiled.of(replica=replica)
        assert all(0 <= e.start_seconds <= e.end_seconds <= profiled.seconds for e in events)
        leaves = [e for e in events if e.kind != "control"]
        assert all(a.end_seconds <= b.start_seconds for a, b in zip(leaves, leaves[1:]))
        for event in events:
            if event.parent is not None:
                parent = profiled.events[event.parent]
                assert parent.start_seconds <= event.start_seconds <= event.end_seconds <= parent.end_seconds
    assert [e.start_cycle for e in profiled] == [e.start_cycle for e in unprofiled]
    per_kind = profiled.summary().seconds_per_kind
    assert set(per_kind) == {"host_io", "control", "collective", "compute"}
    assert sum(per_kind.values()) == pytest.approx(sum(e.seconds for e in profiled if e.parent is None))


def test_there_is_no_trace_before_a_run_or_after_a_failed_one_and_errors_still_name_the_op():
    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((2,), popxl.float32, 2)
        offset = ops.host_load(popxl.h2d_stream([], popxl.int32, name="offset"))
        y = ops.remote_load(buffer, offset)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    stream = ir.get_all_h2d_streams().pop()
    with popxl.Session(ir, "ipu_model") as session:
        assert session.last_trace is None
        session.run({stream: np.array(1, np.int32)})
        assert session.last_trace is not None
        for profile in (False, True):
            session.profile = profile
            with pytest.raises(RuntimeError, match=r"in op remote_load"):
                session.run({stream: np.array(5, np.int32)})
            assert session.last_trace is None


def test_profile_takes_only_a_bool():
    ir = popxl.Ir()
    with ir.main_graph:
        popxl.variable(np.ones(2, np.float32))
    session = popxl.Session(ir, "ipu_model")
    with pytest.raises(TypeError, match="Session.profile must be True or False, got 1"):
        session.profile = 1
    assert session.profile is False
