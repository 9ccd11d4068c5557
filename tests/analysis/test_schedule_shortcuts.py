"""The schedule's shortcuts give what the long way gives: a graph whose creation order meets every
constraint is scheduled in that order without a heap, and the static schedule of seeded random programs
(IPU copies, calls, repeats, conditionals, in_sequence blocks, in-place updates, collectives) is the one
the previous walk over the heap-ordered schedule laid out, event for event."""
import sys
from dataclasses import fields
from typing import Optional

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.analysis.clock import clock_plan, run_to_end
from workbench.analysis.schedule import creation_order_holds, ordered_by_constraints, schedule
from workbench.analysis.static_schedule import _StaticWalk, static_schedule
from workbench.ir.device import device_for

SEEDS = range(30)
DEVICE = device_for("ipu_model")


def random_program(seed: int) -> popxl.Ir:
    """20 to 60 steps on two IPUs and two replicas, each step one of: an elementwise op, a matmul or add,
    a repeat, a call (of a graph that itself calls), a conditional, an all-reduce, an ``in_sequence``
    pair, an in-place accumulate followed by a read of the updated tensor."""
    rng = np.random.default_rng(seed)
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        with popxl.ipu(0):
            live = [popxl.variable(rng.normal(size=(4, 4)).astype(np.float32), name=f"v{i}") for i in range(3)]
        spec = live[0].spec
        body = ir.create_graph(lambda t: ops.tanh(t) * 0.5 + t, spec)
        other = ir.create_graph(lambda t: t - 1.0, spec)
        nested = ir.create_graph(lambda t: ops.call(body, t)[0] @ t, spec)
        unary = [ops.relu, ops.exp, lambda t: t * 2.0, lambda t: ops.sum(t, axis=0, keepdims=True) + t]
        ipu = 0
        for _ in range(int(rng.integers(20, 60))):
            choice = int(rng.integers(0, 12))
            a, b = (live[int(rng.integers(len(live)))] for _ in range(2))
            with popxl.ipu(ipu):
                a = a if a.ipu == ipu else a.copy_to_ipu(ipu, a.ipu)
                b = b if b.ipu == ipu else b.copy_to_ipu(ipu, b.ipu)
                if choice < 4:
                    out = unary[int(rng.integers(len(unary)))](a)
                elif choice < 6:
                    out = a @ b if choice == 4 else a + b
                elif choice == 6:
                    (out,) = ops.repeat(body, int(rng.integers(1, 5)), a)
                elif choice == 7:
                    (out,) = ops.call(nested if rng.random() < 0.5 else body, a)
                elif choice == 8:
                    (out,) = ops.conditional(ops.greater(ops.sum(a), popxl.constant(0.0)), body, other, [a], [a])
                elif choice == 9:
                    out = ops.collectives.replicated_all_reduce(a)
                elif choice == 10:
                    with popxl.in_sequence():
                        first = a + 1.0
                        out = ops.relu(b) * first
                else:
                    copy = a + 0.0
                    ops.var_updates.accumulate_(copy, b)
                    out = copy * b
            live.append(out)
            if rng.random() < 0.15:
                ipu = 1 - ipu
    return ir


def test_a_graph_is_scheduled_as_the_ordering_by_constraints_orders_it():
    shortcut = long_way = 0
    for seed in SEEDS:
        for graph in random_program(seed).graphs:
            assert schedule(graph) == ordered_by_constraints(graph), (seed, graph.label)
            if creation_order_holds(graph.ops):
                shortcut += 1
            else:
                long_way += 1
    assert shortcut > 0 and long_way > 0  # both ways were compared


def test_a_read_created_after_an_in_place_write_of_what_it_reads_breaks_the_creation_order():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(3, np.float32), name="x")
        copy = x + 0.0
        ops.var_updates.accumulate_(copy, x)
        ops.relu(copy)
    assert not creation_order_holds(ir.main_graph.ops)
    assert schedule(ir.main_graph) == ordered_by_constraints(ir.main_graph)


def test_training_programs_whose_updates_follow_every_read_keep_their_creation_order():
    """SGD updates written after the forward and backward passes read the weights: no hazard reorders them."""
    from real_programs import transformer
    from support.programs import mlp_training

    for ir in (transformer(layers=2)[0], mlp_training()[0]):
        updating = [graph for graph in ir.graphs if any(op.modified for op in graph.ops)]
        assert updating
        for graph in ir.graphs:
            assert creation_order_holds(graph.ops), graph.label
            assert schedule(graph) == ordered_by_constraints(graph) == list(graph.ops)


class PreviousWalk(_StaticWalk):
    """The static walk as it was: its frame loop, unchanged, is the reference for today's."""

    def visit(self, frame, parent, parent_event, iterations):
        first: Optional[int] = None
        last: Optional[int] = None
        free, timings, last_end = self.free, self.plan.timings, self.last_end
        for step in self.plan.frame_steps.get(frame, ()):
            op, timing = step.op, timings[step.op]
            start = max(free[ipu] for ipu in timing.ipus)
            for before in timing.after:
                start = max(start, last_end.get(before, 0))
            event, index = self.new_event(step, timing, start, parent, iterations)
            if step.children:
                event.start_cycle, event.end_cycle = yield from self.call(step, timing, event, index, iterations)
            else:
                event.end_cycle = start + timing.cycles
                for ipu in timing.ipus:
                    free[ipu] = event.end_cycle
            last_end[op] = event.end_cycle
            first = event.start_cycle if first is None else min(first, event.start_cycle)
            last = event.end_cycle if last is None else max(last, event.end_cycle)
        return first, last


def as_rows(events) -> list[tuple]:
    return [tuple(getattr(event, field.name) for field in fields(event)) for event in events]


@pytest.mark.parametrize("seed", SEEDS)
def test_the_static_schedule_is_the_previous_walk_over_the_heap_ordered_schedule(seed, monkeypatch):
    ir = random_program(seed)
    today = as_rows(static_schedule(ir, DEVICE).events)
    # the package re-exports the function ``schedule`` under its module's name: patch the module itself
    monkeypatch.setattr(sys.modules["workbench.analysis.schedule"], "creation_order_holds", lambda ops: False)
    previous = PreviousWalk(clock_plan(ir, DEVICE))
    run_to_end(previous.run())
    assert today == as_rows(previous.events)
    assert len(today) > 20
