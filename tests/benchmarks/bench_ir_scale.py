"""Scale of the IR: building a 100,000-op graph against creating the same plain Python objects, measured
in the same run.

Run with ``python -m pytest tests/benchmarks/bench_ir_scale.py -o python_files='bench_*.py' -s``.
"""
import gc
import time

import numpy as np

import popxl
import popxl.ops as ops

OPS = 100_000


def best_time(fn, repeats: int = 3) -> float:
    """The best of ``repeats`` timings, each starting from a collected heap: a built graph is a web of
    cycles, so the garbage of one build would otherwise slow the collections of the next."""
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def chained_adds(count: int):
    """``count`` adds, each reading the previous one's output."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = ops.host_load(popxl.h2d_stream([4], popxl.float32, name="x"))
        one = popxl.constant(np.ones(4, np.float32), name="one")
        for _ in range(count - 1):
            x = ops.add(x, one)
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
    for i in range(count - 1):
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
    ours = best_time(lambda: chained_adds(OPS))
    baseline = best_time(lambda: plain_objects(OPS))
    ratio = ours / baseline
    print(f"\nbuilding {OPS:,} ops: workbench {ours:.3f} s, plain objects {baseline:.3f} s, "
          f"ratio {ratio:.2f} (target <= 2)")
    assert ratio <= 2.0
