"""The layers of image CNNs against onnxruntime, over the geometries real models use: strided, padded,
dilated, grouped and depthwise convolutions, 1×1 and 7×7 ones, poolings with padding and ceil mode,
batch normalisation, and Gemm with a transposed weight (held once in memory, not copied)."""
from __future__ import annotations

import numpy as np
import pytest

import popart
from popart_oracle import run_here, run_onnxruntime

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def model(x: np.ndarray, layer, *weights: np.ndarray) -> tuple[bytes, str, dict]:
    """A one-layer model of input ``x``; ``weights`` are initializers; ``layer(ai_onnx, ids)``."""
    builder = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
    x_id = builder.addInputTensor(popart.TensorInfo("FLOAT", list(x.shape)))
    out = layer(builder.aiOnnx, [x_id] + [builder.addInitializedInputTensor(w) for w in weights])
    builder.addOutputTensor(out)
    return builder.getModelProto(), out, {x_id: x}


def assert_matches_onnxruntime(proto, out, feed, rtol=1e-5, atol=1e-5):
    ours, theirs = run_here(proto, [out], feed)[out], run_onnxruntime(proto, [out], feed)[out]
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


CONVS = {  # x shape, weight shape, Conv attributes
    "3x3 same": ((2, 5, 9, 9), (6, 5, 3, 3), dict(pads=[1, 1, 1, 1])),
    "7x7 stride 2": ((1, 3, 20, 18), (4, 3, 7, 7), dict(pads=[3, 3, 3, 3], strides=[2, 2])),
    "1x1": ((2, 8, 5, 6), (3, 8, 1, 1), {}),
    "1x1 stride 2": ((1, 8, 7, 7), (4, 8, 1, 1), dict(strides=[2, 2])),
    "asymmetric pads and strides": ((1, 2, 9, 8), (3, 2, 3, 2), dict(pads=[0, 1, 2, 0], strides=[2, 3])),
    "dilated": ((1, 3, 11, 11), (2, 3, 3, 3), dict(pads=[2, 2, 2, 2], dilations=[2, 2])),
    "grouped": ((2, 6, 7, 7), (6, 2, 3, 3), dict(group=3, pads=[1, 1, 1, 1])),
    "depthwise": ((1, 4, 8, 8), (4, 1, 3, 3), dict(group=4, pads=[1, 1, 1, 1], strides=[2, 2])),
    "1-d": ((2, 3, 12), (4, 3, 5), dict(pads=[2, 1], strides=[2])),
    "3-d": ((1, 2, 5, 6, 4), (3, 2, 3, 3, 2), dict(pads=[1, 1, 0, 1, 1, 1])),
}


@pytest.mark.parametrize("with_bias", [False, True], ids=["no bias", "bias"])
@pytest.mark.parametrize("case", sorted(CONVS))
def test_conv_matches_onnxruntime(case, with_bias):
    x_shape, w_shape, attrs = CONVS[case]
    weights = [rand(*w_shape)] + ([rand(w_shape[0])] if with_bias else [])
    proto, out, feed = model(rand(*x_shape), lambda o, ids: o.conv(ids, **attrs), *weights)
    assert_matches_onnxruntime(proto, out, feed, rtol=1e-4, atol=1e-4)


POOLS = {  # x shape, pooling attributes
    "3x3 stride 2 padded": ((1, 3, 11, 11), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "3x3 stride 1 padded": ((2, 2, 7, 6), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    "ceil mode": ((1, 2, 10, 9), dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "ceil mode padded": ((1, 2, 8, 9), dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 0, 1],
                                            ceil_mode=1)),
    "asymmetric": ((1, 1, 9, 12), dict(kernel_shape=[2, 4], strides=[1, 3], pads=[0, 2, 1, 1])),
    "whole input": ((1, 3, 7, 7), dict(kernel_shape=[7, 7])),
    "1x1 stride 2": ((1, 2, 5, 5), dict(kernel_shape=[1, 1], strides=[2, 2])),
    "1-d": ((2, 3, 10), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    "3-d": ((1, 2, 5, 6, 7), dict(kernel_shape=[2, 3, 3], strides=[1, 2, 2], pads=[0, 1, 1, 1, 1, 1])),
}


@pytest.mark.parametrize("case", sorted(POOLS))
def test_max_pool_matches_onnxruntime(case):
    x_shape, attrs = POOLS[case]
    proto, out, feed = model(rand(*x_shape), lambda o, ids: o.maxpool(ids, 1, **attrs)[0])
    assert_matches_onnxruntime(proto, out, feed)


def test_dilated_max_pool_matches_onnxruntime():
    attrs = dict(kernel_shape=[3, 3], strides=[2, 1], pads=[2, 1, 2, 1], dilations=[2, 2])
    proto, out, feed = model(rand(1, 2, 11, 9), lambda o, ids: o.maxpool(ids, 1, **attrs)[0])
    assert_matches_onnxruntime(proto, out, feed)


@pytest.mark.parametrize("case", sorted(POOLS))
def test_average_pool_leaves_padding_out_of_the_count_as_onnxruntime(case):
    x_shape, attrs = POOLS[case]
    proto, out, feed = model(rand(*x_shape), lambda o, ids: o.averagepool(ids, count_include_pad=0, **attrs))
    assert_matches_onnxruntime(proto, out, feed)


@pytest.mark.parametrize("x_shape", [(2, 3, 7, 5), (1, 4, 9), (1, 2, 3, 4, 5)], ids=["2-d", "1-d", "3-d"])
def test_a_global_average_pool_is_an_average_pool_over_each_plane_as_onnxruntime(x_shape):
    """It lowers to an average pool whose window is the whole plane (its kernel sums a plane by a product
    with ones), not to a mean over the spatial axes."""
    proto, out, feed = model(rand(*x_shape), lambda o, ids: o.globalaveragepool(ids))
    assert_matches_onnxruntime(proto, out, feed, rtol=1e-5, atol=1e-6)
    flow = popart.DataFlow(1, {out: popart.AnchorReturnType("ALL")})
    session = popart.InferenceSession(proto, flow, popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    types = [op.type for op in session.workbench_session.ir.main_graph.ops]
    assert "average_pool" in types and "mean" not in types


def test_max_pool_of_an_input_without_windows_to_merge_is_a_copy_of_it():
    """A 1×1 window of stride 1 gives the input back, as a new array."""
    x = rand(1, 2, 4, 4)
    proto, out, feed = model(x, lambda o, ids: o.maxpool(ids, 1, kernel_shape=[1, 1])[0])
    result = run_here(proto, [out], feed)[out]
    np.testing.assert_array_equal(result, x)
    assert not np.shares_memory(result, x)


def test_batch_norm_after_a_conv_matches_onnxruntime():
    channels = 6
    scale, bias, mean = rand(channels), rand(channels), rand(channels)
    var = RNG.uniform(0.2, 2.0, channels).astype(np.float32)

    def layers(o, ids):
        y = o.conv([ids[0], ids[1]], pads=[1, 1, 1, 1])
        return o.relu([o.batchnormalization([y] + ids[2:], 1, epsilon=1e-3)[0]])
    proto, out, feed = model(rand(2, 3, 8, 8), layers, rand(channels, 3, 3, 3), scale, bias, mean, var)
    assert_matches_onnxruntime(proto, out, feed, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("trans_a", [0, 1])
def test_gemm_with_a_transposed_weight_matches_onnxruntime(trans_a):
    x = rand(5, 3) if trans_a else rand(3, 5)
    proto, out, feed = model(x, lambda o, ids: o.gemm(ids, alpha=0.5, beta=2.0, transA=trans_a, transB=1),
                             rand(4, 5), rand(4))
    assert_matches_onnxruntime(proto, out, feed)


def test_a_transposed_gemm_weight_is_held_once():
    """transB reads the weight in transposed order: the memory model counts no transposed copy, so a
    weight larger than half the device still fits."""
    weight = np.zeros((1024, 1024), np.float32)
    proto, out, _ = model(rand(1, 1024), lambda o, ids: o.gemm(ids, transB=1), weight)
    session = popart.InferenceSession(proto, popart.DataFlow(1, [out]),
                                      popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    peak = session.workbench_session.memory_report.ipu(0).peak
    assert peak.constants >= weight.nbytes
    assert peak.intermediates < weight.nbytes // 100
