"""Scale of the IR: building a 100,000-op graph against creating the same plain Python objects, measured
in the same run; and how build, compile, analyses, run and trace grow with the graph (1,000 to 100,000
ops) and with a repeat count (10 to 1,000,000 iterations).

Run with ``python -m pytest tests/benchmarks/bench_ir_scale.py -o python_files='bench_*.py' -s``.
"""
import gc
import time
import tracemalloc
from dataclasses import replace

import numpy as np

import popxl
import popxl.ops as ops
from workbench import analysis
from workbench.ir.device import device_for

OPS = 100_000


def best_time(fn, repeats: int = 3) -> float:
    """The best of ``repeats`` timings in CPU seconds of this process (what other work on the machine
    disturbs least), each starting from a collected heap: a built graph is a web of cycles, so the
    garbage of one build would otherwise slow the collections of the next."""
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def chained_adds(count: int):
    """``count`` ops: a host load, then adds each reading the previous one's output, then a store."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([4], popxl.float32, name="x"))
        one = popxl.constant(np.ones(4, np.float32), name="one")
        for _ in range(count - 2):
            x = ops.add(x, one)
        ops.host_store(popxl.d2h_stream(x.shape, x.dtype, name="y"), x)
    return ir


class PlainOp:
    def __init__(self, type, name, graph, inputs, outputs, attrs, called_graphs, ipu, tile_set, modified,
                 aliases, after, meta):
        self.type, self.name, self.graph, self.inputs, self.outputs = type, name, graph, inputs, outputs
        self.attrs, self.called_graphs, self.ipu, self.tile_set = attrs, called_graphs, ipu, tile_set
        self.modified, self.aliases, self.after, self.meta = modified, aliases, after, meta


class PlainSpec:
    def __init__(self, shape, dtype, meta_shape):
        self.shape, self.dtype, self.meta_shape = shape, dtype, meta_shape


class PlainTensor:
    def __init__(self, graph, name, spec, producer, consumers, ipu, tile_set, meta):
        self.graph, self.name, self.spec, self.producer, self.consumers = graph, name, spec, producer, consumers
        self.ipu, self.tile_set, self.meta = ipu, tile_set, meta


def plain_objects(count: int) -> list:
    """The same ops and tensors as plain objects with the same fields, linked the same way: the
    floor of what building a graph can cost in Python."""
    ops_list, tensors = [], {}
    x = PlainTensor(None, "x", PlainSpec((4,), "float32", ()), None, [], 0, "compute", {})
    one = PlainTensor(None, "one", PlainSpec((4,), "float32", ()), None, [], 0, "compute", {})
    for i in range(count):
        op = PlainOp("add", f"add.{i}", None, (x, one), (), {}, (), 0, "compute", (), {}, (), {})
        out = PlainTensor(None, f"add_{i}", PlainSpec((4,), "float32", ()), op, [], 0, "compute", {})
        op.outputs = (out,)
        x.consumers.append(op)
        one.consumers.append(op)
        ops_list.append(op)
        tensors[out.name] = out
        x = out
    return ops_list


def test_building_a_100000_op_graph_within_twice_plain_objects():
    assert len(chained_adds(OPS).main_graph.ops) == OPS
    ours, baseline = [], []
    for _ in range(3):  # taken in turns, so that a busy spell of the machine slows both alike
        ours.append(best_time(lambda: chained_adds(OPS), repeats=1))
        baseline.append(best_time(lambda: plain_objects(OPS), repeats=1))
    ratio = min(ours) / min(baseline)
    print(f"\nbuilding {OPS:,} ops: workbench {min(ours):.3f} s, plain objects {min(baseline):.3f} s, "
          f"ratio {ratio:.2f} (target <= 2)")
    assert ratio <= 2.0


# ----- growth: the graph's size and the repeat count -----
SIZES = (1_000, 10_000, 100_000)
COUNTS = (10, 10_000, 1_000_000)
ROOMY = replace(device_for("ipu_model"), bytes_per_tile=64 * 2**20)  # room for the code of 100,000 ops


def analyses(ir, device) -> None:
    """Every analysis the views and the memory checks read."""
    analysis.call_tree(ir)
    analysis.static_schedule(ir, device)
    analysis.tensor_liveness(ir)
    analysis.code_liveness(ir)
    analysis.memory(ir, device)


def phases(make_ir, repeats: int) -> dict[str, float]:
    """Seconds to build, compile, analyse, run and trace one program (the best of ``repeats``), and the
    bytes a run's trace holds, measured apart (tracing allocations slows them)."""
    seconds = {"build": best_time(make_ir, repeats)}
    ir = make_ir()
    sessions = []
    seconds["compile"] = best_time(lambda: sessions.append(popxl.Session(ir, ROOMY)), repeats)
    seconds["analyses"] = best_time(lambda: analyses(ir, ROOMY), repeats)
    session, stream = sessions[-1], ir.get_all_h2d_streams().pop()
    with session:
        session.progress = False

        def run():
            session.run({stream: np.ones(4, np.float32)})
        seconds["run"] = best_time(run, repeats)
        session.last_trace  # the first read also plans the timeline of the session's graphs, once
        seconds["trace"] = min(read_trace(session, run) for _ in range(repeats))
        run()
        gc.collect()
        tracemalloc.start()
        trace = session.last_trace
        seconds["trace bytes"] = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        seconds["events"] = len(trace)
    return seconds


def read_trace(session, run) -> float:
    """CPU seconds to read the trace of a fresh run (it is built when first read)."""
    run()
    gc.collect()
    start = time.process_time()
    session.last_trace
    return time.process_time() - start


def looped_adds(count: int):
    """A repeat of ``count`` iterations of a body of two ops."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([4], popxl.float32, name="x"))
        body = ir.create_graph(lambda t: ops.add(t, t) * 0.5, x)
        (y,) = ops.repeat(body, count, x)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    return ir


def print_table(title: str, label: str, sizes, rows: list[dict]) -> None:
    print(f"\n{title}")
    print(f"{label:>10} " + " ".join(f"{name:>10}" for name in rows[0]))
    for size, row in zip(sizes, rows):
        print(f"{size:>10,} " + " ".join(f"{value:>10.4f}" if isinstance(value, float) else f"{value:>10,}"
                                         for value in row.values()))


def growth(rows: list[dict], name: str) -> float:
    """How many times longer the largest program took than the middle one (10x smaller)."""
    return rows[2][name] / max(rows[1][name], 1e-3)


def test_build_compile_analyses_run_and_trace_grow_linearly_with_the_graph():
    rows = [phases(lambda: chained_adds(size), 3 if size < 100_000 else 2) for size in SIZES]
    print_table("growth with the graph (seconds; trace bytes held):", "ops", SIZES, rows)
    for name in ("build", "compile", "analyses", "run", "trace"):
        print(f"{name}: 100,000 ops take {growth(rows, name):.1f}x the time of 10,000 (linear: 10x, quadratic: 100x)")
        assert growth(rows, name) <= 25, name


def test_run_grows_linearly_with_the_repeat_count_and_the_trace_stays_small():
    rows = [phases(lambda: looped_adds(count), 3 if count < 1_000_000 else 2) for count in COUNTS]
    print_table("growth with the repeat count (seconds; trace bytes held):", "iterations", COUNTS, rows)
    run_growth = rows[2]["run"] / rows[1]["run"]
    print(f"run: 1,000,000 iterations take {run_growth:.0f}x the time of 10,000 (linear: 100x); "
          f"the trace of 1,000,000 iterations holds {rows[2]['trace bytes']:,} bytes "
          f"({rows[2]['trace bytes'] / rows[2]['events']:.4f} bytes per executed op)")
    assert run_growth <= 200
    for name in ("build", "compile", "analyses", "trace"):
        assert rows[2][name] <= 10 * max(rows[0][name], 1e-3), name
    assert rows[2]["trace bytes"] <= 2 * rows[0]["trace bytes"] + 10_000


def branching_loop(count: int):
    """A repeat whose body runs a conditional: its iterations cannot be copies of one another."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([4], popxl.float32, name="x"))
        halve = ir.create_graph(lambda t: t * 0.5, x)
        double = ir.create_graph(lambda t: t * 2.0, x)

        def body(t):
            (t,) = ops.conditional(ops.greater(ops.sum(t), popxl.constant(1.0)), halve, double, [t], [t])
            return t

        (y,) = ops.repeat(ir.create_graph(body, x), count, x)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    return ir


def test_a_long_loop_that_cannot_be_copied_keeps_a_bounded_trace():
    """100,000 iterations of a body with a conditional: 400,000 events, more than the default limit,
    so the trace keeps its summary; the record of the branches taken costs 5 bytes each."""
    ir = branching_loop(100_000)
    stream = ir.get_all_h2d_streams().pop()
    with popxl.Session(ir, "ipu_model") as session:
        session.progress = False

        def run():
            session.run({stream: np.ones(4, np.float32)})
        run()
        session.last_trace  # the first read also plans the timeline of the session's graphs, once
        seconds = read_trace(session, run)
        run()
        record_bytes = sum(len(log.which) * log.which.itemsize + len(log.taken)
                           for log in session._runs.recorder.record.branches)
        gc.collect()
        tracemalloc.start()
        trace = session.last_trace
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    print(f"\n{len(trace):,} events of a loop with a conditional: the branch record {record_bytes:,} bytes, "
          f"the summary-only trace {held:,} bytes ({held / len(trace):.4f} per executed op), built in "
          f"{seconds:.2f} s")
    assert not trace.has_events and trace.summary().cycles > 0
    # what stays allocated is a few totals, and the tuples Python keeps on its free list (some 94 KB)
    assert record_bytes <= 5 * 100_000 and held < 200_000
