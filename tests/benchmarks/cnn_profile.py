"""Where a CNN's time goes, here and in onnxruntime, one thread each: a diagnostic beside ``speed_report.py``.

Run with ``python tests/benchmarks/cnn_profile.py [model ...]`` (default: the four ``bench_cnn.py`` models).
For each model it prints the processor time of every kernel of a plain run (fused kernels included, as
``Session.run`` calls them; a fused run's time falls on the op that computes it and its other ops cost
next to nothing), summed per op type and per convolution shape, the least of ``--rounds`` runs; then
onnxruntime's own per-op-type profile of the same model, its convolutions' times beside ours shape by
shape (its profile names no stride: the stride shown is the ratio of input and output sizes), and each
one's page faults and system time per run (memory that a run maps afresh costs a fault per page, which a
busy kernel makes dearer on some machines than others). The first lines give the matrix-product speed of
the BLAS library on a ResNet-like product, the yardstick for every convolution here; the speed of a copy
at sizes from a core's L2 cache to main memory; and the speed of the NumPy operations the kernels are
made of. After each model comes ``cnn_memory_probe.py``'s table (``--no-probe`` leaves it out): per
kernel its time warm and with the caches emptied first, the bytes it moves and its temporaries.

``--set winograd.MIN_OUTPUT_PREPARED=1000`` (repeatable) changes a kernel-choice threshold of
``workbench/ops`` before the sessions are built, so that a machine whose caches and memory differ from
the one the thresholds were measured on can try other choices per op without editing the code.

It times the kernels by swapping each bound kernel of the main graph for a timed wrapper (the
interpreter reads its kernels from the namespace of the graph's generated function), so it reaches
into the runtime's private state: a measuring tool, not an example.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import sys
import time

import numpy as np
import onnxruntime
from threadpoolctl import threadpool_info, threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cnn as cnn  # noqa: E402
import cnn_memory_probe  # noqa: E402

from workbench.runtime.options import default_run_options, set_default_run_options  # noqa: E402


def kind(op) -> str:
    """The op type; for a convolution its kernel, stride and channels and its input's size too."""
    if op.type != "conv":
        return op.type
    w, x = op.inputs[1].shape, op.inputs[0].shape
    return f"conv {w[2]}x{w[3]}/{op.attrs['stride'][0]} {w[1] * op.attrs['groups']}->{w[0]} @{x[2]}"


def timed_kernels(ours: cnn.Workbench, totals: dict) -> None:
    """Wrap each kernel the main graph's generated code calls so that it adds its time to ``totals``."""
    session = ours.session.workbench_session
    program = session.executable.programs[0]
    graph = session.ir.main_graph
    code = session.graph_code[graph]
    namespace = program.subgraph(graph).function.__globals__
    for index, op in enumerate(code.steps):
        name = f"k{index}"
        kernel, label = namespace[name], kind(op)

        def timed(*args, kernel=kernel, label=label):
            start = time.process_time()
            result = kernel(*args)
            totals[label] += time.process_time() - start
            return result
        namespace[name] = timed


def onnxruntime_profile(model, feed: dict, outputs: list, rounds: int) -> tuple[dict, dict]:
    """Seconds of onnxruntime's kernels (its profiler's least time per node, summed) per op type, and per
    convolution shape labelled as ``kind`` labels ours."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(os.environ.get("TMPDIR", "/tmp"), "cnn_profile_ort")
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    for _ in range(rounds):
        session.run(outputs, feed)
    path = session.end_profiling()
    with open(path) as file:
        events = json.load(file)
    os.remove(path)
    least: dict = {}
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            key = (event["args"].get("op_name"), event["name"], _onnxruntime_conv_kind(event["args"]))
            least[key] = min(least.get(key, float("inf")), event["dur"] / 1e6)
    per_type: dict = collections.defaultdict(float)
    per_conv: dict = collections.defaultdict(float)
    for (op_type, _, conv_kind), seconds in least.items():
        per_type[op_type] += seconds
        if conv_kind is not None:
            per_conv[conv_kind] += seconds
    return dict(per_type), dict(per_conv)


def _onnxruntime_conv_kind(args: dict):
    """``kind``'s label of a Conv node of onnxruntime's profile, from the shapes it records; None for
    other nodes and for convolutions in its blocked layout (whose channels it pads)."""
    shapes = [next(iter(entry.values())) for entry in args.get("input_type_shape", [])]
    outputs = [next(iter(entry.values())) for entry in args.get("output_type_shape", [])]
    if args.get("op_name") != "Conv" or len(shapes) < 2 or not outputs or len(shapes[1]) != 4:
        return None
    x, w, y = shapes[0], shapes[1], outputs[0]
    if x[1] != w[1] or y[1] != w[0]:
        return None
    stride = max(1, round(x[2] / y[2]))
    return f"conv {w[2]}x{w[3]}/{stride} {w[1]}->{w[0]} @{x[2]}"


def blas_speed() -> str:
    a, b = (np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32) for _ in range(2))
    best = min(_seconds(lambda: np.matmul(a, b)) for _ in range(5))
    blas = ", ".join(f"{i['internal_api']} {i.get('version')} ({i.get('architecture')})"
                     for i in threadpool_info() if i["user_api"] == "blas")
    return f"BLAS {blas}: a 1024² float32 matrix product at {2 * 1024 ** 3 / best / 1e9:.0f} GFLOP/s"


def _seconds(work) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def faults_per_run(run, rounds: int) -> str:
    """Minor page faults and system time per call of ``run``, after one call to warm it."""
    run()
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(rounds):
        run()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (f"{(after.ru_minflt - before.ru_minflt) / rounds:.0f} page faults and "
            f"{(after.ru_stime - before.ru_stime) / rounds * 1e3:.2f} ms of system time per run")


def profile(name: str, rounds: int, shown: int, probe: bool = True) -> None:
    model, input_name, shape, outputs = cnn.light_model(name)
    feed = {input_name: np.random.default_rng(1).standard_normal(shape).astype(np.float32)}
    ours = cnn.Workbench(model, feed, outputs)
    # before the timed kernels: their clock readings are system calls
    faults = {"workbench": faults_per_run(ours.run, rounds),
              "onnxruntime": faults_per_run(cnn.Onnxruntime(model, feed, outputs).run, rounds)}
    totals: dict = collections.defaultdict(float)
    counts = collections.Counter(kind(op) for op in ours.session.workbench_session.graph_code[
        ours.session.workbench_session.ir.main_graph].steps)
    timed_kernels(ours, totals)
    least: dict = {}
    best_run = float("inf")
    for _ in range(rounds):
        totals.clear()
        best_run = min(best_run, _seconds(ours.run))
        for label, seconds in totals.items():
            least[label] = min(least.get(label, float("inf")), seconds)
    per_type: dict = collections.defaultdict(float)
    for label, seconds in least.items():
        per_type[label.split()[0]] += seconds
    theirs, their_convs = onnxruntime_profile(model, feed, outputs, rounds)
    print(f"\n{name}: workbench run {best_run * 1e3:.1f} ms (kernels {sum(least.values()) * 1e3:.1f} ms); "
          f"onnxruntime kernels {sum(theirs.values()) * 1e3:.1f} ms")
    print("  workbench per op type: " + ", ".join(
        f"{t} {s * 1e3:.2f}" for t, s in sorted(per_type.items(), key=lambda item: -item[1]) if s >= 5e-5))
    print("  onnxruntime per op type: " + ", ".join(
        f"{t} {s * 1e3:.2f}" for t, s in sorted(theirs.items(), key=lambda item: -item[1]) if s >= 5e-5))
    print("  " + "; ".join(f"{who}: {text}" for who, text in faults.items()))
    if shown:
        print(f"    {'kernel':36s} {'ops':>4s} {'workbench':>10s} {'onnxruntime':>12s}")
    for label, seconds in sorted(least.items(), key=lambda item: -item[1])[:shown]:
        other = their_convs.get(label)
        print(f"    {label:36s} {counts[label]:4d} {seconds * 1e3:7.3f} ms "
              f"{'-' if other is None else f'{other * 1e3:9.3f} ms':>12s}")
    if probe:  # a session of its own: the one above has its kernels wrapped already
        print("\n".join(cnn_memory_probe.report(cnn.Workbench(model, feed, outputs), kind, min(rounds, 5), shown)))


TUNABLE_MODULES = ("conv_kernels", "winograd", "pool_kernels", "fused_conv", "channel_affine", "depthwise")


def apply_setting(text: str) -> str:
    """Set ``module.NAME=value`` (an int constant of one of ``TUNABLE_MODULES``); what was set, as text."""
    import importlib

    target, _, value = text.partition("=")
    module_name, _, constant = target.partition(".")
    if module_name not in TUNABLE_MODULES or not constant or not value:
        raise SystemExit(f"--set takes module.NAME=value with module one of {', '.join(TUNABLE_MODULES)}, "
                         f"not {text!r}")
    module = importlib.import_module(f"workbench.ops.{module_name}")
    old = getattr(module, constant, None)
    if not isinstance(old, int) or isinstance(old, bool):
        raise SystemExit(f"workbench.ops.{module_name} has no int constant {constant}")
    setattr(module, constant, int(value))
    return f"{module_name}.{constant} = {value} (was {old})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=["resnet50", "densenet121", "inception_v1", "squeezenet"])
    parser.add_argument("--rounds", type=int, default=10, help="runs of each, the least time kept (default 10)")
    parser.add_argument("--shown", type=int, default=15, help="op kinds listed one by one (default 15)")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="change an int kernel-choice constant of workbench/ops first, e.g. "
                             "winograd.MIN_OUTPUT_PREPARED=1000 (repeatable)")
    parser.add_argument("--probe", action=argparse.BooleanOptionalAction, default=True,
                        help="after each model, cnn_memory_probe.py's table of bytes moved per kernel (default on)")
    args = parser.parse_args()
    for text in args.set:
        print("set " + apply_setting(text), flush=True)
    set_default_run_options(default_run_options().with_changes(check_kernels=False))
    with threadpool_limits(1, user_api="blas"):
        print(blas_speed(), flush=True)
        print(cnn_memory_probe.memory_ladder(), flush=True)
        print(cnn_memory_probe.primitives(), flush=True)
        for name in args.models:
            profile(name, args.rounds, args.shown, args.probe)


if __name__ == "__main__":
    main()
