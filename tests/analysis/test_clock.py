"""The static schedule and a run's trace follow one clock walker (``workbench.analysis.clock``): where a
run has nothing the static schedule cannot know (no conditional, loops of one iteration, one replica),
the two lay out every op at the same cycles, call sites included."""
import numpy as np

import popxl
import popxl.ops as ops
from workbench.analysis import static_schedule
from workbench.analysis.clock import ClockWalker, clock_plan, run_to_end


def two_ipu_program() -> popxl.Ir:
    """Ops on two IPUs, a copy between them, a call whose callee starts on the IPU that is free first,
    and a loop of one iteration."""
    ir = popxl.Ir()
    with ir.main_graph:
        with popxl.ipu(0):
            a = popxl.variable(np.ones((64, 64), np.float32), name="a")
            b = a @ a
        with popxl.ipu(1):
            c = popxl.variable(np.ones((8,), np.float32), name="c")
            d = ops.sin(c)
        moved = b.copy_to_ipu(1, 0)
        with popxl.ipu(1):
            body = ir.create_graph(lambda x: x * 2 + 1, d.spec)
            (looped,) = ops.repeat(body, 1, d)
            callee = ir.create_graph(lambda x: ops.cos(x), moved.spec)
            (called,) = ops.call(callee, moved)
            total = looped + ops.sum(called)
        out = popxl.d2h_stream(total.shape, total.dtype, name="out")
        with popxl.ipu(1):
            ops.host_store(out, total)
    return ir


def test_a_run_without_branches_is_laid_out_as_the_static_schedule():
    ir = two_ipu_program()
    with popxl.Session(ir, "ipu_model") as session:
        device = session.device
        static = [(e.op, e.start_cycle, e.end_cycle, e.parent) for e in static_schedule(ir, device)]
        session.run()
        ran = [(e.op, e.start_cycle, e.end_cycle, e.parent) for e in session.last_trace.events]
    assert ran == static
    assert len({op.ipu for op, *_ in static}) == 2


def test_the_walker_hooks_choose_branches_and_iterations():
    """A walker that overrides ``iteration_count`` walks a loop as many times as it says."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.zeros(2, np.float32))
        body = ir.create_graph(lambda t: t + 1, x.spec)
        ops.repeat(body, 5, x)
    with popxl.Session(ir, "ipu_model") as session:
        device = session.device

    class Counting(ClockWalker):
        def __init__(self, plan, iterations):
            super().__init__(plan)
            self.iterations, self.events = iterations, []

        def iteration_count(self, step):
            return self.iterations

        def new_event(self, step, timing, start, parent, iterations):
            from workbench.analysis.op_events import TraceEvent

            event = TraceEvent(None, timing.ipus[0], timing.ipus, step.op, timing.kind, step.index,
                               step.frame.call_path, iterations, parent, timing.in_sequence, timing.cycles, start)
            self.events.append(event)
            return event, len(self.events) - 1

    walks = {}
    for count in (1, 5):
        walker = Counting(clock_plan(ir, device), count)
        run_to_end(walker.run())
        walks[count] = walker.events
    adds = {count: [e for e in events if e.op.type == "add"] for count, events in walks.items()}
    assert [e.iterations for e in adds[5]] == [(i,) for i in range(5)]
    repeat_events = {count: next(e for e in events if e.op.type == "repeat") for count, events in walks.items()}
    assert repeat_events[5].cycles == 5 * repeat_events[1].cycles
    assert repeat_events[5].end_cycle > repeat_events[1].end_cycle
