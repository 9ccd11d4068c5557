"""The gradient of every lowered op (the cases of test_popart_ops) against finite differences.

Each float input of a case becomes a weight; the loss is ``sum(out * r)`` for a fixed random ``r``.
The anchored ``Gradient___<w>`` of a TrainingSession (learning rate 0) is compared, along two random
directions per weight, with central differences of the forward pass run by onnxruntime."""
from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

import popart
from popart_oracle import onnx_standard
from test_popart_ops import CASES as OP_CASES

OPSET = 11
EPS = 1e-3
# Ops whose output is piecewise constant in the float inputs (the gradient is 0 where it exists).
# The op tests' data sit on the breakpoints of these ops on purpose (rounding halves, a near tie); here
# inputs away from them.
CASES = {**OP_CASES,
         "round": ([np.array([0.2, 1.3, -2.7, 2.4, -0.6], np.float32)], OP_CASES["round"][1]),
         "topk": ([np.array([[0.3, 1.2, -0.5, 2.0], [-1.0, 0.1, 0.9, 0.4]], np.float32),
                   ("const", np.array([2], np.int64))], OP_CASES["topk"][1])}
NOT_FLOAT_OUTPUT = {"argmax", "argmin", "equal", "greater", "less", "and", "or", "xor", "not", "cast", "isnan",
                    "isinf", "mod", "size"}
RANDOM_WHEN_TRAINING = {"dropout"}  # drops with a fresh mask in training: no inference oracle to compare


def _case_graph(case: str, trainable: bool):
    """A builder holding the case's op, its float arrays as weights (``trainable``) or as graph
    inputs (the oracle's); returns the builder, the op's output, the feed and the float arrays."""
    inputs, call = CASES[case]
    builder = popart.Builder(opsets={"ai.onnx": OPSET, "ai.graphcore": 1})
    feed, ids, weights = {}, [], {}
    for index, value in enumerate(inputs):
        if isinstance(value, str):
            ids.append(value)
            continue
        array = value[1] if isinstance(value, tuple) else value
        if array.dtype == np.float32:
            name = f"w{index}"
            tensor_id = builder.addInitializedInputTensor(array, name) if trainable else \
                builder.addInputTensor(popart.TensorInfo("FLOAT", list(array.shape)), name)
            weights[tensor_id] = array
        elif isinstance(value, tuple):
            tensor_id = builder.addInitializedInputTensor(array)
        else:
            tensor_id = builder.addInputTensor(popart.TensorInfo(array.dtype, list(array.shape)))
            feed[tensor_id] = array
        ids.append(tensor_id)
    return builder, call(builder.aiOnnx, ids), feed, weights


def _output_shape(case: str) -> list:
    builder, out, feed, weights = _case_graph(case, trainable=False)
    try:
        return builder.getTensorShape(out)
    except popart.popart_exception:  # not inferred by ONNX (Resize with computed scales): run it to see
        builder.addOutputTensor(out)
        probe = onnxruntime.InferenceSession(onnx_standard(builder.getModelProto()), providers=["CPUExecutionProvider"])
        return list(probe.run([out], {**feed, **weights})[0].shape)


def build(case: str, trainable: bool):
    """The case's model with the loss ``sum(out * r)`` (an identity loss when ``trainable``)."""
    builder, out, feed, weights = _case_graph(case, trainable)
    projection = np.random.default_rng(7).standard_normal(_output_shape(case)).astype(np.float32)
    r = builder.addInitializedInputTensor(projection, "projection") if trainable else \
        builder.aiOnnx.constant(projection, "projection")
    total = builder.aiOnnx.reducesum([builder.aiOnnx.mul([out, r])], keepdims=0)
    if trainable:
        total = builder.aiGraphcore.identityloss([total], popart.ReductionType.Sum)
    builder.addOutputTensor(total)
    return builder.getModelProto(), total, feed, weights


@pytest.mark.parametrize("case", sorted(c for c in CASES if c not in NOT_FLOAT_OUTPUT | RANDOM_WHEN_TRAINING))
def test_gradient_matches_finite_differences(case):
    proto, loss, feed, weights = build(case, trainable=True)
    if not weights:
        pytest.skip("no float input to differentiate")
    anchors = {popart.reservedGradientPrefix() + w: popart.AnchorReturnType("ALL") for w in weights}
    frozen = popart.SGD({"defaultLearningRate": (0.0, False)})  # a constant zero rate is refused, as on PopART
    training = popart.TrainingSession(proto, popart.DataFlow(1, anchors), loss, frozen,
                                      popart.DeviceManager().createCpuDevice())
    training.prepareDevice()
    training.weightsFromHost()
    arrays = training.initAnchorArrays()
    training.run(popart.PyStepIO(feed, arrays))

    oracle_proto, total, oracle_feed, _ = build(case, trainable=False)
    oracle = onnxruntime.InferenceSession(onnx_standard(oracle_proto), providers=["CPUExecutionProvider"])

    def forward(values: dict) -> float:
        return float(oracle.run([total], {**oracle_feed, **values})[0])

    rng = np.random.default_rng(3)
    for name, value in weights.items():
        gradient = arrays[popart.reservedGradientPrefix() + name].astype(np.float64)
        for _ in range(2):
            direction = rng.standard_normal(value.shape).astype(np.float32)
            plus = forward({**weights, name: value + EPS * direction})
            minus = forward({**weights, name: value - EPS * direction})
            numeric = (plus - minus) / (2 * EPS)
            analytic = float((gradient * direction).sum())
            assert analytic == pytest.approx(numeric, rel=2e-2, abs=2e-2), f"gradient of {name}"
