"""How much memory each kernel of a CNN moves and how fast, warm and with every cache emptied first: the
probe that tells a machine whose memory is slow from one whose arithmetic is.

Run with ``python tests/benchmarks/cnn_memory_probe.py [model ...]`` (default: SqueezeNet);
``cnn_profile.py`` prints the same table after its own. First a line of the machine's copy speed at sizes
from a core's L2 cache to main memory (bytes read and written per second), a line of the speed of the NumPy
operations the kernels are made of (a ufunc call's overhead, a window copy, a shifted maximum, a matrix
product into a strided output and one with a short inner dimension), then per kernel, the slowest first:

- ``warm``: its least processor time in a plain run (the kernel reads what the one before it wrote);
- ``cold``: the same, each kernel run after a copy of ``EVICT_BYTES`` has pushed everything out of the
  caches (a bound on what a machine with small or slow caches pays);
- ``act MB``: the bytes of its activations, the inputs that are no constants and its outputs;
  ``wt MB``: of its constant inputs (weights, biases), as the graph holds them;
- ``tmp MB``: the most memory it allocates during a call beyond what it held before (working arrays,
  column matrices, its fresh output), from ``tracemalloc``, which sees every NumPy allocation;
- ``GB/s``: activations, weights and twice the temporaries (written, then read) over the warm time;
  ``GFLOP/s``: of a convolution's or matrix product's multiply-adds, over the warm time.

A kernel far below the copy speed of its working set is bound by arithmetic or by overhead; one whose
cold time is far above its warm time lives off the caches, and a machine with less cache per core or a
slower one sees mostly its cold time. Like ``cnn_profile.py`` it times kernels by swapping the generated
code's bound kernels for wrappers: a measuring tool that reaches into private state.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import tracemalloc
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cnn as cnn  # noqa: E402

from workbench.ops.channel_affine import constant_value  # noqa: E402
from workbench.runtime.options import default_run_options, set_default_run_options  # noqa: E402

EVICT_BYTES = 64 << 20  # more than any core's share of the last-level cache here or on a server
LADDER = (256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20)


def _best(work, rounds: int) -> float:
    best = math.inf
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def memory_ladder() -> str:
    """Copy speed (bytes read plus bytes written, per second) at each size of ``LADDER``."""
    speeds = []
    for size in LADDER:
        source = np.ones(size // 4, np.float32)
        target = np.empty_like(source)
        rounds = max(3, min(200, (64 << 20) // size))
        seconds = _best(lambda: np.copyto(target, source), rounds)
        speeds.append(f"{size >> 10} KiB {2 * size / seconds / 1e9:.0f}" if size < 1 << 20
                      else f"{size >> 20} MiB {2 * size / seconds / 1e9:.0f}")
    return "copy GB/s (read + write): " + ", ".join(speeds)


def primitives() -> str:
    """The speed of the NumPy operations the convolution and pooling kernels are made of, on arrays of
    their sizes (all within a core's L2 cache): a machine or a NumPy release where one of them is slow
    shows here, apart from its memory."""
    rng = np.random.default_rng(0)
    tiny = np.ones(16, np.float32)
    call = _best(lambda: np.maximum(tiny, tiny, out=tiny), 2000)
    padded = rng.standard_normal((64, 29, 29)).astype(np.float32)
    s = padded.strides
    windows = np.lib.stride_tricks.as_strided(padded, (64, 3, 3, 27, 27), (s[0], s[1], s[2], s[1], s[2]))
    columns = np.empty(windows.shape, np.float32)
    window_copy = _best(lambda: np.copyto(columns, windows), 50)
    flat = rng.standard_normal(1 << 18).astype(np.float32)
    shifted = np.empty(flat.size - 1, np.float32)
    shifted_max = _best(lambda: np.maximum(flat[:-1], flat[1:], out=shifted), 50)
    a, b = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal((64, 1024)).astype(np.float32)
    wide, dense = np.empty((64, 2048), np.float32), np.empty((64, 1024), np.float32)
    into_dense = _best(lambda: np.matmul(a, b, out=dense), 50)
    into_strided = _best(lambda: np.matmul(a, b, out=wide[:, :1024]), 50)
    stem_w = rng.standard_normal((64, 28)).astype(np.float32)
    stem_x = rng.standard_normal((28, 4096)).astype(np.float32)
    stem_y = np.empty((64, 4096), np.float32)
    stem = _best(lambda: np.matmul(stem_w, stem_x, out=stem_y), 50)
    return (f"NumPy {np.__version__}, Python {sys.version.split()[0]}: a ufunc call {call * 1e6:.2f} µs; "
            f"window copy {2 * columns.nbytes / window_copy / 1e9:.0f} GB/s; shifted maximum "
            f"{3 * shifted.nbytes / shifted_max / 1e9:.0f} GB/s; a product into a strided output "
            f"{into_strided / into_dense:.2f}× the time of a contiguous one; a [64, 28] @ [28, 4096] product "
            f"{2 * 64 * 28 * 4096 / stem / 1e9:.0f} GFLOP/s")


def multiply_adds(op) -> int:
    """2 × multiply-adds of a convolution or a matrix product; 0 for other ops."""
    if op.type == "conv":
        w, y = op.inputs[1].shape, op.outputs[0].shape
        return 2 * math.prod(y) * math.prod(w[1:])
    if op.type == "matmul":
        a, y = op.inputs[0].shape, op.outputs[0].shape
        return 2 * math.prod(y) * a[-1]
    return 0


@dataclass(slots=True)
class KernelFigures:
    """One kernel's figures over the rounds: least warm and cold seconds, most temporary bytes."""

    label: str
    activation_bytes: int
    weight_bytes: int
    flops: int
    warm: float = math.inf
    cold: float = math.inf
    temporary: int = 0
    figures: dict = field(default_factory=dict)


class Probe:
    """Wraps every kernel of the main graph of a ``bench_cnn.Workbench``; ``mode`` picks what a run
    measures: 'warm' (time), 'cold' (time after emptying the caches) or 'memory' (tracemalloc's peak)."""

    def __init__(self, ours: cnn.Workbench, label_of):
        session = ours.session.workbench_session
        graph = session.ir.main_graph
        code = session.graph_code[graph]
        self.namespace = session.executable.programs[0].subgraph(graph).function.__globals__
        self.kernels: list[KernelFigures] = []
        self.mode = "warm"
        self.ours = ours
        self._evict_source = np.ones(EVICT_BYTES // 4, np.float32)
        self._evict_target = np.empty_like(self._evict_source)
        for index, op in enumerate(code.steps):
            constant = sum(t.nbytes for t in op.inputs if constant_value(t) is not None)
            moving = sum(t.nbytes for t in op.inputs if constant_value(t) is None) + sum(t.nbytes for t in op.outputs)
            figures = KernelFigures(f"{index:3d} {label_of(op)}", moving, constant, multiply_adds(op))
            self.kernels.append(figures)
            self.namespace[f"k{index}"] = self._wrapped(self.namespace[f"k{index}"], figures)

    def _wrapped(self, kernel, figures: KernelFigures):
        def measured(*args):
            if self.mode == "memory":
                before = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
                result = kernel(*args)
                figures.temporary = max(figures.temporary, tracemalloc.get_traced_memory()[1] - before)
                return result
            if self.mode == "cold":
                np.copyto(self._evict_target, self._evict_source)
            start = time.process_time()
            result = kernel(*args)
            seconds = time.process_time() - start
            if self.mode == "cold":
                figures.cold = min(figures.cold, seconds)
            else:
                figures.warm = min(figures.warm, seconds)
            return result
        return measured

    def measure(self, rounds: int) -> None:
        for mode in ("warm", "cold"):
            self.mode = mode
            for _ in range(rounds):
                self.ours.run()
        self.mode = "memory"
        tracemalloc.start()
        try:
            self.ours.run()
        finally:
            tracemalloc.stop()
            self.mode = "warm"


def report(ours: cnn.Workbench, label_of, rounds: int, shown: int) -> list[str]:
    """The table's lines for one model, ``shown`` kernels, the slowest warm first."""
    probe = Probe(ours, label_of)
    probe.measure(rounds)
    kernels = sorted(probe.kernels, key=lambda k: -k.warm)
    warm, cold = sum(k.warm for k in probe.kernels), sum(k.cold for k in probe.kernels)
    lines = [f"  memory probe: kernels {warm * 1e3:.1f} ms warm, {cold * 1e3:.1f} ms cold "
             f"(each after a {EVICT_BYTES >> 20} MiB copy)",
             f"    {'kernel':40s} {'warm ms':>8s} {'cold ms':>8s} {'act MB':>7s} {'wt MB':>6s} {'tmp MB':>7s} "
             f"{'GB/s':>6s} {'GFLOP/s':>8s}"]
    for k in kernels[:shown]:
        moved = k.activation_bytes + k.weight_bytes + 2 * k.temporary
        speed = moved / k.warm / 1e9 if k.warm else 0
        lines.append(f"    {k.label:40s} {k.warm * 1e3:8.3f} {k.cold * 1e3:8.3f} {k.activation_bytes / 1e6:7.2f} "
                     f"{k.weight_bytes / 1e6:6.2f} {k.temporary / 1e6:7.2f} {speed:6.1f} "
                     f"{k.flops / k.warm / 1e9 if k.flops and k.warm else 0:8.1f}")
    return lines


def main() -> None:
    import cnn_profile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=["squeezenet"])
    parser.add_argument("--rounds", type=int, default=5, help="runs of each kind, the least time kept (default 5)")
    parser.add_argument("--shown", type=int, default=25, help="kernels listed (default 25)")
    args = parser.parse_args()
    set_default_run_options(default_run_options().with_changes(check_kernels=False))
    with threadpool_limits(1, user_api="blas"):
        print(cnn_profile.blas_speed(), flush=True)
        print(memory_ladder(), flush=True)
        print(primitives(), flush=True)
        for name in args.models:
            model, input_name, shape, outputs = cnn.light_model(name)
            feed = {input_name: np.random.default_rng(1).standard_normal(shape).astype(np.float32)}
            print(f"\n{name}:")
            print("\n".join(report(cnn.Workbench(model, feed, outputs), cnn_profile.kind, args.rounds, args.shown)),
                  flush=True)


if __name__ == "__main__":
    main()
