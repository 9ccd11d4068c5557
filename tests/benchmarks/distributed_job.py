"""Timed programs run as each instance of a job by ``bench_distributed.py``; instance 0 prints
``name value`` lines."""
import sys
import time

import numpy as np

import popdist
import popxl
import popxl.ops as ops
from popxl.transforms import autodiff

REPEATS = 5


def best(fn) -> float:
    fn()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def local(data: np.ndarray, ir: popxl.Ir) -> np.ndarray:
    offset, count = popdist.getReplicaIndexOffset(), ir.instance_replication_factor
    part = data[:, offset: offset + count]
    return part if count > 1 else part[:, 0]


def mlp(steps: int = 20, batch: int = 32, sizes=(784, 256, 256, 10)) -> float:
    """Steps per second of data-parallel training: forward, autodiff, mean all-reduce, SGD."""
    rng = np.random.default_rng(0)
    ir = popxl.Ir(replication="popdist")
    ir.num_host_transfers = steps
    with ir.main_graph:
        x_stream = popxl.h2d_stream([batch, sizes[0]], popxl.float32, name="x")
        y_stream = popxl.h2d_stream([batch, sizes[-1]], popxl.float32, name="y")
        weights = []
        for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
            weights += [popxl.variable(rng.normal(0, a ** -0.5, (a, b)).astype(np.float32), name=f"w{i}"),
                        popxl.variable(np.zeros(b, np.float32), name=f"b{i}")]

        def forward(x, y, *ws):
            for i in range(len(ws) // 2):
                x = x @ ws[2 * i] + ws[2 * i + 1]
                x = ops.relu(x) if i < len(ws) // 2 - 1 else x
            return ops.mean((x - y) * (x - y))

        fwd = ir.create_graph(forward, x_stream.spec, y_stream.spec, *weights)
        grad_info = autodiff(fwd, grads_required=fwd.inputs[2:])

        def step(ws: popxl.TensorByRef):
            site = ops.call_with_info(fwd, ops.host_load(x_stream), ops.host_load(y_stream), *ws)
            grads = ops.call(grad_info.graph, popxl.constant(1.0, popxl.float32),
                             inputs_dict=grad_info.inputs_dict(site))
            for w, g in zip(ws, grads):
                ops.var_updates.accumulate_(w, ops.collectives.replicated_all_reduce(g, op="mean"), -0.01)

        ops.repeat(ir.create_graph(step, weights), steps, weights)
    replicas = ir.replication_factor
    inputs = {x_stream: local(rng.normal(size=(steps, replicas, batch, sizes[0])).astype(np.float32), ir),
              y_stream: local(rng.normal(size=(steps, replicas, batch, sizes[-1])).astype(np.float32), ir)}
    with popxl.Session(ir, "ipu_hw") as session:
        session.progress = False
        return steps / best(lambda: session.run(inputs))


def all_reduce(nbytes: int, count: int = 200) -> float:
    """Seconds per all-reduce of ``nbytes`` over every replica (a repeat of ``count`` of them)."""
    ir = popxl.Ir(replication="popdist")
    with ir.main_graph:
        x = popxl.variable(np.ones(nbytes // 4, np.float32), name="x")

        def body(t: popxl.TensorByRef):
            ops.collectives.replicated_all_reduce_(t, op="max")

        ops.repeat(ir.create_graph(body, x), count, x)
    with popxl.Session(ir, "ipu_hw") as session:
        session.progress = False
        return best(lambda: session.run({})) / count


if __name__ == "__main__":
    results = {"mlp_steps_per_second": mlp(), "all_reduce_8B_seconds": all_reduce(8),
               "all_reduce_4MiB_seconds": all_reduce(4 * 2 ** 20, count=20)}
    if popdist.getInstanceIndex() == 0:
        for name, value in results.items():
            print(name, value, flush=True)
    sys.exit(0)
