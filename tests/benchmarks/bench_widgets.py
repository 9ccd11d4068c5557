"""Widget benchmarks: building the GraphView and the LivenessView of a 2,000-op graph (analysis, layout
and plotly figure), as a ratio to building the networkx graph of the same Ir (``export.to_networkx``).

Run with ``python -m pytest tests/benchmarks -o python_files='bench_*.py' -s``.
"""
import numpy as np

import popxl
import popxl.ops as ops
from workbench.export import to_networkx
from workbench.widgets import GraphView, LivenessView

from bench_runtime import best_time


def residual_mlp(op_count: int = 2000):
    """Blocks of matmul, relu, a residual add and tanh over 20 weights: ``op_count`` ops in all."""
    rng = np.random.default_rng(0)
    ir = popxl.Ir()
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([8, 16], popxl.float32, name="x"))
        weights = [popxl.variable(rng.standard_normal((16, 16)).astype(np.float32), name=f"w{i}") for i in range(20)]
        h = skip = x
        for block in range((op_count - 2) // 4):
            h = ops.tanh(ops.relu(h @ weights[block % 20]) + skip)
            if block % 10 == 0:
                skip = h
        while len(ir.main_graph.ops) < op_count - 1:
            h = ops.relu(h)
        ops.host_store(popxl.d2h_stream(h.shape, h.dtype, name="y"), h)
    return ir


def report(name: str, ours: float, baseline: float) -> float:
    ratio = ours / baseline
    print(f"\n{name}: {ours * 1e3:.1f} ms, networkx graph {baseline * 1e3:.1f} ms, ratio {ratio:.2f}")
    return ratio


def test_building_the_views_of_a_2000_op_graph():
    ir = residual_mlp()
    assert len(ir.main_graph.ops) == 2000
    baseline = best_time(lambda: to_networkx(ir))
    graph_view = best_time(lambda: GraphView(ir, live=False).figure)
    liveness_view = best_time(lambda: LivenessView(ir, live=False).figure)
    report("GraphView of 2,000 ops", graph_view, baseline)
    report("LivenessView of 2,000 ops", liveness_view, baseline)


def test_building_the_schedule_view_of_a_2000_op_graph():
    """The ScheduleView of the same graph: its static schedule, then the trace of a run."""
    from workbench.widgets import ScheduleView

    ir = residual_mlp()
    baseline = best_time(lambda: to_networkx(ir))
    static = best_time(lambda: ScheduleView(ir, live=False).figure)
    stream = next(iter(ir.get_all_h2d_streams()))
    with popxl.Session(ir, "ipu_model") as session:
        session.run({stream: np.ones((8, 16), np.float32)})
        assert len(session.last_trace) == 2000
        after_run = best_time(lambda: ScheduleView(session, live=False).figure)
    report("ScheduleView of 2,000 ops, static schedule", static, baseline)
    report("ScheduleView of a 2,000-op run's trace", after_run, baseline)
