"""Graphcore's LSTM (``builder.aiGraphcore.lstm``, ai.graphcore LSTM-1): the same numbers as ONNX's
LSTM in onnxruntime once the weights are laid out as PopART lays them, and its shapes."""
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import popart

SEQ, BATCH, INPUTS, HIDDEN = 5, 2, 3, 7


def _popart_layout(onnx_weights):
    """ONNX's [1, 4*hidden, n] (gates i, o, f, c) as PopART's [4, n, hidden] (gates f, i, c, o)."""
    chunks = [onnx_weights[0, k * HIDDEN:(k + 1) * HIDDEN, :].T[None] for k in range(4)]
    return np.concatenate([chunks[k] for k in (2, 0, 3, 1)])


def _onnxruntime_lstm(data, w, r, b, h0, c0):
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape))
              for n, a in zip("xwrbhc", (data, w, r, b, h0, c0))]
    node = helper.make_node("LSTM", ["x", "w", "r", "b", "", "h", "c"], ["y", "y_h", "y_c"], hidden_size=HIDDEN)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                                                    for n in ("y", "y_h", "y_c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip("xwrbhc", (data, w, r, b, h0, c0))))


@pytest.mark.parametrize("full", [1, 0])
def test_graphcore_lstm_matches_onnx_lstm_with_popart_s_weight_layout(full):
    rng = np.random.default_rng(5)
    data = rng.standard_normal((SEQ, BATCH, INPUTS)).astype(np.float32)
    w = rng.standard_normal((1, 4 * HIDDEN, INPUTS)).astype(np.float32)
    r = rng.standard_normal((1, 4 * HIDDEN, HIDDEN)).astype(np.float32)
    b = rng.standard_normal((1, 8 * HIDDEN)).astype(np.float32)
    h0, c0 = (rng.standard_normal((1, BATCH, HIDDEN)).astype(np.float32) for _ in range(2))
    y, y_h, y_c = _onnxruntime_lstm(data, w, r, b, h0, c0)

    weights = np.ascontiguousarray(np.concatenate([_popart_layout(w), _popart_layout(r)], axis=1))
    chunks = [b[:, k * HIDDEN:(k + 1) * HIDDEN] for k in range(8)]
    bias = np.concatenate([chunks[k] for k in (2, 0, 3, 1)]) + np.concatenate([chunks[k] for k in (6, 4, 7, 5)])
    builder = popart.Builder()
    ids = [builder.addInputTensor(popart.TensorInfo(a)) for a in (data, weights, bias, np.concatenate([h0, c0]))]
    out, cell = builder.aiGraphcore.lstm(ids, outputFullSequence=full)
    assert builder.getTensorShape(out) == ([SEQ, BATCH, HIDDEN] if full else [BATCH, HIDDEN])
    assert builder.getTensorShape(cell) == [BATCH, HIDDEN]
    assert onnx.load_from_string(builder.getModelProto()).graph.node[0].domain == "ai.graphcore"
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [out, cell]),
                                      popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO(dict(zip(ids, (data, weights, bias, np.concatenate([h0, c0])))), anchors))
    np.testing.assert_allclose(anchors[out], y[:, 0] if full else y_h[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(anchors[cell], y_c[0], rtol=1e-5, atol=1e-5)


def test_graphcore_lstm_is_a_supported_operation():
    assert ("ai.graphcore", "LSTM", 1) in {(o.domain, o.type, o.version) for o in popart.getSupportedOperations()}


def test_graphcore_lstm_weight_gradient_matches_finite_differences():
    rng = np.random.default_rng(9)
    data = rng.standard_normal((3, BATCH, INPUTS)).astype(np.float32)
    weights = (0.5 * rng.standard_normal((4, INPUTS + HIDDEN, HIDDEN))).astype(np.float32)
    projection = rng.standard_normal((3, BATCH, HIDDEN)).astype(np.float32)

    def model(trainable: bool):
        builder = popart.Builder()
        x = builder.addInputTensor(popart.TensorInfo(data))
        w = builder.addInitializedInputTensor(weights, "w") if trainable else \
            builder.addInputTensor(popart.TensorInfo(weights), "w")
        out = builder.aiGraphcore.lstm([x, w])[0]
        total = builder.aiOnnx.reducesum([builder.aiOnnx.mul([out, builder.aiOnnx.constant(projection)])],
                                         keepdims=0)
        return builder, x, w, builder.aiGraphcore.identityloss([total], popart.ReductionType.Sum)

    builder, x, w, loss = model(trainable=True)
    gradient_id = popart.reservedGradientPrefix() + w
    training = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [gradient_id]), loss,
                                      popart.SGD({"defaultLearningRate": (0.0, False)}),
                                      popart.DeviceManager().createCpuDevice())
    training.prepareDevice()
    training.weightsFromHost()
    arrays = training.initAnchorArrays()
    training.run(popart.PyStepIO({x: data}, arrays))

    builder, x, w, loss = model(trainable=False)
    forward = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [loss]),
                                      popart.DeviceManager().createCpuDevice())
    forward.prepareDevice()
    out = forward.initAnchorArrays()

    def value(candidate) -> float:
        forward.run(popart.PyStepIO({x: data, w: candidate.astype(np.float32)}, out))
        return float(out[loss])

    direction = rng.standard_normal(weights.shape)
    eps = 1e-2
    numeric = (value(weights + eps * direction) - value(weights - eps * direction)) / (2 * eps)
    assert float(np.sum(arrays[gradient_id] * direction)) == pytest.approx(numeric, rel=2e-3, abs=2e-3)
