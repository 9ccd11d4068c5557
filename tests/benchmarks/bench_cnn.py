"""Real CNNs through ``popart.InferenceSession`` against onnxruntime, one thread each.

The models are the ``light_*`` files that the ``onnx`` package ships for its backend tests: the real
graphs, with every weight a ``ConstantOfShape`` placeholder. Each placeholder becomes a random
initializer here (He-scaled weights, per-channel factors near one), so that activations keep a sane
range through the network. Batch 1, 224×224, the same input for both; onnxruntime with one intra-op
thread, NumPy's BLAS limited to one thread; each figure the best of several runs, the two taking
turns. The outputs and the logits (the input of a final Softmax) must agree within float32 tolerance.
Both run on one thread, so the target is checked on processor time (``time.process_time``, every
thread of the process counted), which other work on a shared machine disturbs far less than the
wall-clock time printed beside it.

Run with ``python -m pytest tests/benchmarks/bench_cnn.py -o python_files='bench_*.py' -s``;
``python tests/benchmarks/speed_report.py`` prints these ratios, with the spread of the rounds, beside
the multi-replica training steps against JAX.
"""
from __future__ import annotations

import os
import time

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import numpy_helper
from threadpoolctl import threadpool_limits

import popart

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
ROUNDS = 10
TARGET = 1.5  # workbench time / onnxruntime time, each model
NEAR_ONE = {("BatchNormalization", 1), ("BatchNormalization", 4), ("Mul", 1)}  # scales and variances


def placeholder_value(shape: tuple, users: set, rng: np.random.Generator) -> np.ndarray:
    if users & NEAR_ONE:
        return rng.uniform(0.5, 1.5, shape)
    if len(shape) <= 1:
        return rng.uniform(-0.1, 0.1, shape)
    return rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))  # [out, in, *kernel]


def light_model(name: str) -> tuple[onnx.ModelProto, str, list, list]:
    """The model with random weights, its input's name and shape, and the names to compare: the
    outputs and the logits."""
    path = os.path.join(LIGHT, f"light_{name}.onnx")
    if not os.path.exists(path):
        pytest.skip(f"this onnx package ships no {path}")
    model = onnx.load(path)
    graph, rng = model.graph, np.random.default_rng(0)
    given = {t.name: t for t in graph.initializer}
    users: dict[str, set] = {}
    for node in graph.node:
        for index, name_in in enumerate(node.input):
            users.setdefault(name_in, set()).add((node.op_type, index))
    nodes, weights = [], []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in given:
            shape = tuple(int(d) for d in numpy_helper.to_array(given[node.input[0]]))
            value = placeholder_value(shape, users.get(node.output[0], set()), rng)
            weights.append(numpy_helper.from_array(value.astype(np.float32), node.output[0]))
        else:
            nodes.append(node)
    read = {name_in for node in nodes for name_in in node.input}
    kept = [t for t in graph.initializer if t.name in read]
    data = [t for t in graph.input if t.name not in given]
    del graph.node[:], graph.initializer[:], graph.input[:]
    graph.node.extend(nodes)
    graph.initializer.extend(kept + weights)
    graph.input.extend(data)
    model.ir_version = max(model.ir_version, 4)  # initializers need not be listed as inputs
    compared = [o.name for o in graph.output]
    if nodes[-1].op_type == "Softmax":
        graph.output.append(onnx.ValueInfoProto(name=nodes[-1].input[0]))
        compared.append(nodes[-1].input[0])
    shape = [d.dim_value for d in data[0].type.tensor_type.shape.dim]
    return model, data[0].name, shape, compared


class Onnxruntime:
    def __init__(self, model: onnx.ModelProto, feed: dict, outputs: list):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                    providers=["CPUExecutionProvider"])
        self.feed, self.outputs = feed, outputs

    def run(self) -> dict:
        return dict(zip(self.outputs, self.session.run(self.outputs, self.feed)))


class Workbench:
    def __init__(self, model: onnx.ModelProto, feed: dict, outputs: list):
        flow = popart.DataFlow(1, {o: popart.AnchorReturnType("ALL") for o in outputs})
        self.session = popart.InferenceSession(model.SerializeToString(), flow,
                                               popart.DeviceManager().createIpuModelDevice({}))
        self.session.prepareDevice()
        self.session.weightsFromHost()
        self.anchors = self.session.initAnchorArrays()
        self.step = popart.PyStepIO(feed, self.anchors)

    def run(self) -> dict:
        self.session.run(self.step)
        return self.anchors


def assert_agree(ours: dict, theirs: dict) -> None:
    for name, expected in theirs.items():
        scale = float(np.abs(expected).max())
        np.testing.assert_allclose(ours[name].reshape(expected.shape), expected, rtol=1e-3, atol=1e-4 * scale,
                                   err_msg=name)


def measure(name: str) -> dict:
    """Best seconds per run, by processor time and by wall clock, of the workbench and of
    onnxruntime, after checking that their results agree."""
    model, input_name, shape, outputs = light_model(name)
    feed = {input_name: np.random.default_rng(1).standard_normal(shape).astype(np.float32)}
    runners = {"workbench": Workbench(model, feed, outputs), "onnxruntime": Onnxruntime(model, feed, outputs)}
    best = {(clock, who): float("inf") for clock in ("cpu", "wall") for who in runners}
    with threadpool_limits(1, user_api="blas"):
        assert_agree(runners["workbench"].run(), runners["onnxruntime"].run())
        for _ in range(ROUNDS):
            for who, runner in runners.items():
                cpu, wall = time.process_time(), time.perf_counter()
                runner.run()
                best["cpu", who] = min(best["cpu", who], time.process_time() - cpu)
                best["wall", who] = min(best["wall", who], time.perf_counter() - wall)
    return best


@pytest.mark.parametrize("name", ["resnet50", "densenet121", "inception_v1", "squeezenet"])
def test_cnn_inference_against_onnxruntime(name):
    best = measure(name)
    ratio = {clock: best[clock, "workbench"] / best[clock, "onnxruntime"] for clock in ("cpu", "wall")}
    print(f"\n{name}: workbench {best['cpu', 'workbench'] * 1e3:.1f} ms, onnxruntime (1 thread) "
          f"{best['cpu', 'onnxruntime'] * 1e3:.1f} ms of processor time, ratio {ratio['cpu']:.2f} "
          f"(target <= {TARGET}); wall clock {best['wall', 'workbench'] * 1e3:.1f} ms and "
          f"{best['wall', 'onnxruntime'] * 1e3:.1f} ms, ratio {ratio['wall']:.2f}")
    assert ratio["cpu"] <= TARGET


def test_vgg19_fits_the_default_device_and_matches_onnxruntime():
    """Its first Gemm's weight is 411 MB: read transposed in place, it is held once."""
    model, input_name, shape, outputs = light_model("vgg19")
    feed = {input_name: np.random.default_rng(1).standard_normal(shape).astype(np.float32)}
    ours = Workbench(model, feed, outputs)
    peak = ours.session.workbench_session.memory_report.ipu(0)
    weights = sum(t.ByteSize() for t in model.graph.initializer)
    print(f"\nvgg19: peak {peak.peak_bytes:,} of {peak.tile_capacity:,} bytes, weights {weights:,} bytes")
    assert peak.peak.intermediates < 50 * 2**20
    with threadpool_limits(1, user_api="blas"):
        assert_agree(ours.run(), Onnxruntime(model, feed, outputs).run())
