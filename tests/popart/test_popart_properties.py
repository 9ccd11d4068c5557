"""Random small models built with the Builder give the same outputs here and in onnxruntime."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import popart
from popart_oracle import run_here, run_onnxruntime

UNARY = ["relu", "tanh", "sigmoid", "abs", "neg", "exp", "softsign", "erf"]
BINARY = ["add", "sub", "mul", "max", "min"]


@st.composite
def models(draw):
    """A chain of random unary and binary ops (binary ones take a weight or an earlier tensor)."""
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    builder = popart.Builder(opsets={"ai.onnx": draw(st.sampled_from([10, 11])), "ai.graphcore": 1})
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [rows, cols]))
    tensors = [x]
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["unary", "binary", "matmul", "reduce", "transpose"]))
        last = tensors[-1]
        shape = builder.getTensorShape(last)
        if kind == "unary":
            out = getattr(builder.aiOnnx, draw(st.sampled_from(UNARY)))([last])
        elif kind == "binary":
            other = draw(st.sampled_from(tensors))
            if builder.getTensorShape(other) != shape:
                other = builder.addInitializedInputTensor(rng.standard_normal(shape[-1:]).astype(np.float32))
            method = draw(st.sampled_from(BINARY))
            out = getattr(builder.aiOnnx, method)([last, other])
        elif kind == "matmul":
            w = builder.addInitializedInputTensor(rng.standard_normal((shape[-1], draw(st.integers(1, 4))))
                                                  .astype(np.float32) * 0.5)
            out = builder.aiOnnx.matmul([last, w])
        elif kind == "reduce":
            out = builder.aiOnnx.reducesum([last], axes=[len(shape) - 1], keepdims=1)
        else:
            out = builder.aiOnnx.transpose([last])
        tensors.append(out)
    builder.addOutputTensor(tensors[-1])
    data = rng.standard_normal((rows, cols)).astype(np.float32)
    return builder.getModelProto(), x, tensors[-1], data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models())
def test_random_models_match_onnxruntime(model):
    proto, x, out, data = model
    ours = run_here(proto, [out], {x: data})[out]
    theirs = run_onnxruntime(proto, [out], {x: data})[out]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
