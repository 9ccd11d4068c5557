"""Each lowered ONNX op against onnxruntime on random inputs, at opsets 10 and 11, float32 and float16."""
from __future__ import annotations

import numpy as np
import pytest

import popart

from popart_oracle import run_here, run_onnxruntime, tolerance

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, shape).astype(np.float32)


def unit(*shape):
    return RNG.uniform(-0.9, 0.9, shape).astype(np.float32)


def const(array):
    return ("const", array)


# label: (inputs (arrays are graph inputs, const(...) initializers), the op called on the opset)
CASES = {
    "add": ([rand(2, 3), rand(3)], lambda o, x: o.add(x)),
    "sub": ([rand(2, 3), rand(2, 3)], lambda o, x: o.sub(x)),
    "mul": ([rand(2, 3), rand(1, 3)], lambda o, x: o.mul(x)),
    "div": ([rand(2, 3), positive(2, 3)], lambda o, x: o.div(x)),
    "pow": ([positive(2, 3), rand(2, 3)], lambda o, x: o.pow(x)),
    "matmul": ([rand(2, 4, 3), rand(3, 5)], lambda o, x: o.matmul(x)),
    "gemm": ([rand(3, 4), rand(5, 4), rand(5)], lambda o, x: o.gemm(x, alpha=0.5, beta=2.0, transB=1)),
    "gemm_transA": ([rand(4, 3), rand(4, 5), rand(3, 5)], lambda o, x: o.gemm(x, transA=1)),
    "conv": ([rand(1, 3, 7, 7), const(rand(4, 3, 3, 3)), const(rand(4))],
             lambda o, x: o.conv(x, pads=[1, 1, 1, 1], strides=[2, 2])),
    "conv_group_dilation": ([rand(1, 4, 8, 8), const(rand(4, 2, 3, 3))],
                            lambda o, x: o.conv(x, group=2, dilations=[2, 2])),
    "maxpool": ([rand(1, 2, 6, 6)], lambda o, x: o.maxpool(x, 1, [3, 3], pads=[1, 1, 1, 1], strides=[2, 2])[0]),
    "averagepool": ([rand(1, 2, 6, 6)], lambda o, x: o.averagepool(x, [2, 2], strides=[2, 2])),
    "globalaveragepool": ([rand(2, 3, 4, 5)], lambda o, x: o.globalaveragepool(x)),
    "globalmaxpool": ([rand(2, 3, 4, 5)], lambda o, x: o.globalmaxpool(x)),
    "relu": ([rand(3, 4)], lambda o, x: o.relu(x)),
    "sigmoid": ([rand(3, 4)], lambda o, x: o.sigmoid(x)),
    "tanh": ([rand(3, 4)], lambda o, x: o.tanh(x)),
    "softmax": ([rand(2, 3, 4)], lambda o, x: o.softmax(x, axis=1)),
    "logsoftmax": ([rand(2, 5)], lambda o, x: o.logsoftmax(x)),
    "exp": ([rand(3)], lambda o, x: o.exp(x)),
    "log": ([positive(3)], lambda o, x: o.log(x)),
    "sqrt": ([positive(3)], lambda o, x: o.sqrt(x)),
    "abs": ([rand(3)], lambda o, x: o.abs(x)),
    "neg": ([rand(3)], lambda o, x: o.neg(x)),
    "floor": ([rand(3)], lambda o, x: o.floor(x)),
    "ceil": ([rand(3)], lambda o, x: o.ceil(x)),
    "sign": ([rand(3)], lambda o, x: o.sign(x)),
    "sin": ([rand(3)], lambda o, x: o.sin(x)),
    "cos": ([rand(3)], lambda o, x: o.cos(x)),
    "tan": ([unit(3)], lambda o, x: o.tan(x)),
    "asin": ([unit(3)], lambda o, x: o.asin(x)),
    "acos": ([unit(3)], lambda o, x: o.acos(x)),
    "atan": ([rand(3)], lambda o, x: o.atan(x)),
    "sinh": ([rand(3)], lambda o, x: o.sinh(x)),
    "cosh": ([rand(3)], lambda o, x: o.cosh(x)),
    "asinh": ([rand(3)], lambda o, x: o.asinh(x)),
    "acosh": ([positive(3) + 1], lambda o, x: o.acosh(x)),
    "atanh": ([unit(3)], lambda o, x: o.atanh(x)),
    "erf": ([rand(3)], lambda o, x: o.erf(x)),
    "reciprocal": ([positive(3)], lambda o, x: o.reciprocal(x)),
    "elu": ([rand(3, 4)], lambda o, x: o.elu(x, alpha=0.7)),
    "selu": ([rand(3, 4)], lambda o, x: o.selu(x)),
    "leakyrelu": ([rand(3, 4)], lambda o, x: o.leakyrelu(x, alpha=0.1)),
    "hardsigmoid": ([rand(3, 4)], lambda o, x: o.hardsigmoid(x)),
    "softsign": ([rand(3, 4)], lambda o, x: o.softsign(x)),
    "softplus": ([rand(3, 4)], lambda o, x: o.softplus(x)),
    "sum": ([rand(2, 3), rand(3), rand(2, 3)], lambda o, x: o.sum(x)),
    "max": ([rand(2, 3), rand(2, 3)], lambda o, x: o.max(x)),
    "min": ([rand(2, 3), rand(3)], lambda o, x: o.min(x)),
    "mean": ([rand(2, 3), rand(2, 3)], lambda o, x: o.mean(x)),
    "identity": ([rand(2, 3)], lambda o, x: o.identity(x)),
    "dropout": ([rand(2, 3)], lambda o, x: o.dropout(x, 1)[0]),
    "transpose": ([rand(2, 3, 4)], lambda o, x: o.transpose(x, perm=[2, 0, 1])),
    "reshape": ([rand(2, 3, 4), const(np.array([4, -1], np.int64))], lambda o, x: o.reshape(x)),
    "flatten": ([rand(2, 3, 4)], lambda o, x: o.flatten(x, axis=2)),
    "concat": ([rand(2, 3), rand(2, 2)], lambda o, x: o.concat(x, 1)),
    "split": ([rand(6, 2)], lambda o, x: o.split(x, 2, axis=0, split=[2, 4])[1]),
    "squeeze": ([rand(2, 1, 3)], lambda o, x: o.squeeze(x, axes=[1])),
    "unsqueeze": ([rand(2, 3)], lambda o, x: o.unsqueeze(x, axes=[0, 3])),
    "slice": ([rand(5, 6), const(np.array([1, -4], np.int64)), const(np.array([4, 100], np.int64)),
               const(np.array([0, 1], np.int64)), const(np.array([2, 1], np.int64))], lambda o, x: o.slice(x)),
    "gather": ([rand(5, 3), const(np.array([[0, 4], [2, 2]], np.int64))], lambda o, x: o.gather(x, axis=0)),
    "gather_axis1": ([rand(2, 5), const(np.array([3, 1], np.int32))], lambda o, x: o.gather(x, axis=1)),
    "reducesum": ([rand(2, 3, 4)], lambda o, x: o.reducesum(x, axes=[1], keepdims=0)),
    "reducemean": ([rand(2, 3, 4)], lambda o, x: o.reducemean(x, axes=[0, 2])),
    "reducemax": ([rand(2, 3, 4)], lambda o, x: o.reducemax(x)),
    "reducemin": ([rand(2, 3, 4)], lambda o, x: o.reducemin(x, axes=[-1], keepdims=0)),
    "reduceprod": ([positive(2, 3)], lambda o, x: o.reduceprod(x, axes=[1])),
    "reducesumsquare": ([rand(2, 3)], lambda o, x: o.reducesumsquare(x, axes=[1])),
    "reducel1": ([rand(2, 3)], lambda o, x: o.reducel1(x, axes=[1])),
    "reducel2": ([rand(2, 3)], lambda o, x: o.reducel2(x, axes=[1])),
    "reducelogsumexp": ([rand(2, 3)], lambda o, x: o.reducelogsumexp(x, axes=[1])),
    "argmax": ([rand(3, 4)], lambda o, x: o.argmax(x, axis=1)),
    "argmin": ([rand(3, 4)], lambda o, x: o.argmin(x, axis=0, keepdims=0)),
    "topk": ([rand(3, 6), const(np.array([2], np.int64))], lambda o, x: o.topk(x, axis=1)[0]),
    "batchnormalization": ([rand(2, 3, 4, 4), const(positive(3)), const(rand(3)), const(rand(3)), const(positive(3))],
                           lambda o, x: o.batchnormalization(x, 1, epsilon=1e-3)[0]),
    "instancenormalization": ([rand(2, 3, 4, 4), const(positive(3)), const(rand(3))],
                              lambda o, x: o.instancenormalization(x)),
    "where": ([np.array([True, False, True]), rand(3), rand(2, 3)], lambda o, x: o.where(x)),
    "equal": ([np.array([1, 2, 3], np.int32), np.array([1, 0, 3], np.int32)], lambda o, x: o.equal(x)),
    "greater": ([rand(3), rand(3)], lambda o, x: o.greater(x)),
    "less": ([rand(3), rand(3)], lambda o, x: o.less(x)),
    "and": ([np.array([True, False, True]), np.array([True, True, False])], lambda o, x: o.logical_and(x)),
    "or": ([np.array([True, False, False]), np.array([True, True, False])], lambda o, x: o.logical_or(x)),
    "xor": ([np.array([True, False, False]), np.array([True, True, False])], lambda o, x: o.logical_xor(x)),
    "not": ([np.array([True, False])], lambda o, x: o.logical_not(x)),
    "cast": ([rand(4) * 10], lambda o, x: o.cast(x, "INT32")),
    "clip": ([rand(4, 3)], lambda o, x: o.clip(x, max=0.5, min=-0.25) if o.version < 11 else
             o.clip(x + [o.constant(np.array(-0.25, np.float32)), o.constant(np.array(0.5, np.float32))])),
    "pad": ([rand(2, 3)], lambda o, x: o.pad(x, [0, 1, 1, 2], value=1.5) if o.version < 11 else
            o.pad(x + [o.constant(np.array([0, 1, 1, 2], np.int64)), o.constant(np.array(1.5, np.float32))])),
    "pad_reflect": ([rand(3, 4)], lambda o, x: o.pad(x, [1, 2, 1, 2], mode="reflect") if o.version < 11 else
                    o.pad(x + [o.constant(np.array([1, 2, 1, 2], np.int64))], mode="reflect")),
    "tile": ([rand(2, 3), const(np.array([2, 1], np.int64))], lambda o, x: o.tile(x)),
    "expand": ([rand(3, 1), const(np.array([2, 3, 4], np.int64))], lambda o, x: o.expand(x)),
    "constant": ([rand(2)], lambda o, x: o.add([x[0], o.constant(np.array([1.0, 2.0], np.float32))])),
    "isnan": ([np.array([1.0, np.nan], np.float32)], lambda o, x: o.isnan(x)),
    "isinf": ([np.array([1.0, np.inf, -np.inf], np.float32)], lambda o, x: o.isinf(x, detect_negative=0)),
    "onehot": ([np.array([0, 2, 1], np.int64), const(np.array(4, np.int64)), const(np.array([0.0, 1.0], np.float32))],
               lambda o, x: o.onehot(x, axis=-1)),
    "upsample_resize": ([rand(1, 2, 3, 4)], lambda o, x: o.resize(x + [o.constant(np.array([1, 1, 2, 3], np.float32))])
                        if o.version == 10 else
                        o.resize(x + [o.constant(np.array([], np.float32)), o.constant(np.array([1, 1, 2, 3], np.float32))],
                                 nearest_mode="floor", coordinate_transformation_mode="asymmetric")),
    "scatter": ([rand(3, 4), const(np.array([[1, 0], [2, 3]], np.int64)), rand(2, 2)],
                lambda o, x: o.scatter(x, axis=1) if o.version == 10 else o.scatterelements(x, axis=1)),
    "prelu": ([rand(2, 3), const(rand(3))], lambda o, x: o.prelu(x)),
    "depthtospace": ([rand(1, 8, 2, 3)], lambda o, x: o.depthtospace(x, 2)),
    "spacetodepth": ([rand(1, 2, 4, 6)], lambda o, x: o.spacetodepth(x, 2)),
    "mod": ([np.array([5, -5, 7, -7], np.int32), np.array([3, 3, -2, -2], np.int32)], lambda o, x: o.mod(x)),
    "fmod": ([rand(4) * 5, positive(4)], lambda o, x: o.mod(x, fmod=1)),
    "meanvariancenormalization": ([rand(2, 3, 4, 4)], lambda o, x: o.meanvariancenormalization(x)),
    "lpnormalization": ([rand(3, 4)], lambda o, x: o.lpnormalization(x)),
    "hardmax": ([rand(3, 4)], lambda o, x: o.hardmax(x)),
    "shrink": ([rand(3, 4)], lambda o, x: o.shrink(x, bias=0.1, lambd=0.3)),
    "constantofshape": ([rand(2, 3)], lambda o, x: o.add([x[0], o.constantofshape([o.shape(x)],
                                                                                  np.array([2.0], np.float32))])),
    "range_and_shapes": ([rand(4)], lambda o, x: o.add([x[0], o.cast([o.range([o.constant(np.array(0, np.int64)),
                                                                                 o.constant(np.array(4, np.int64)),
                                                                                 o.constant(np.array(1, np.int64))])],
                                                                       "FLOAT")])),
    "rnn": ([rand(4, 2, 3), const(rand(1, 5, 3)), const(rand(1, 5, 5)), const(rand(1, 10))],
            lambda o, x: o.rnn(x, 2, hidden_size=5)[0]),
    "gru": ([rand(4, 2, 3), const(rand(2, 15, 3)), const(rand(2, 15, 5)), const(rand(2, 30))],
            lambda o, x: o.gru(x, 2, direction="bidirectional", hidden_size=5)[1]),
    "gru_linear_before_reset": ([rand(3, 2, 3), const(rand(1, 15, 3)), const(rand(1, 15, 5)), const(rand(1, 30))],
                                lambda o, x: o.gru(x, 1, hidden_size=5, linear_before_reset=1)[0]),
    "lstm": ([rand(4, 2, 3), const(rand(1, 20, 3)), const(rand(1, 20, 5)), const(rand(1, 40))],
             lambda o, x: o.lstm(x, 3, hidden_size=5)[0]),
    "lstm_reverse_state": ([rand(4, 2, 3), const(rand(1, 20, 3)), const(rand(1, 20, 5)), const(rand(1, 40)), "",
                            const(rand(1, 2, 5)), const(rand(1, 2, 5))],
                           lambda o, x: o.lstm(x, 3, direction="reverse", hidden_size=5)[2]),
    "size": ([rand(2, 3)], lambda o, x: o.add([x[0], o.cast([o.size(x)], "FLOAT")])),
    "eyelike": ([rand(3, 4)], lambda o, x: o.add([x[0], o.eyelike(x, k=1)])),
    "round": ([np.array([0.5, 1.5, -2.5, 2.4, -0.6], np.float32)], lambda o, x: o.round(x)),
    "gatherelements": ([rand(3, 4), const(np.array([[0, 3], [1, -1], [2, 2]], np.int64))],
                       lambda o, x: o.gatherelements(x, axis=1)),
    "gathernd": ([rand(2, 3, 4), const(np.array([[0, 1], [1, 2]], np.int64))], lambda o, x: o.gathernd(x)),
    "lrn": ([rand(2, 5, 3, 3)], lambda o, x: o.lrn(x, 3, alpha=1e-3)),
    "globallppool": ([rand(2, 3, 4, 4)], lambda o, x: o.globallppool(x, p=3)),
}
OPSET_11_ONLY = {"cumsum", "range_and_shapes", "round", "gatherelements", "gathernd"}
CASES["cumsum"] = ([rand(3, 4), const(np.array(1, np.int32))], lambda o, x: o.cumsum(x))
FP16 = {"add", "sub", "mul", "div", "matmul", "gemm", "conv", "relu", "sigmoid", "tanh", "softmax", "maxpool",
        "averagepool", "globalaveragepool", "transpose", "reshape", "concat", "exp", "log", "sqrt", "abs", "neg",
        "reducesum", "reducemean", "reducemax", "batchnormalization", "leakyrelu", "erf", "cast"}


def build(case: str, opset: int, dtype) -> tuple[bytes, str, dict]:
    inputs, call = CASES[case]
    builder = popart.Builder(opsets={"ai.onnx": opset, "ai.graphcore": 1})
    feed, ids = {}, []
    for value in inputs:
        if isinstance(value, str):  # an optional input left out
            ids.append(value)
        elif isinstance(value, tuple):
            array = value[1].astype(dtype) if value[1].dtype == np.float32 else value[1]
            ids.append(builder.addInitializedInputTensor(array))
        else:
            array = value.astype(dtype) if value.dtype == np.float32 else value
            tensor_id = builder.addInputTensor(popart.TensorInfo(array.dtype, list(array.shape)))
            feed[tensor_id] = array
            ids.append(tensor_id)
    out = call(builder.aiOnnx, ids)
    builder.addOutputTensor(out)
    return builder.getModelProto(), out, feed


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
@pytest.mark.parametrize("opset", [10, 11])
@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_onnxruntime(case, opset, dtype):
    if dtype == np.float16 and case not in FP16:
        pytest.skip("float16 is checked on the ops onnxruntime has half kernels for")
    if opset < 11 and case in OPSET_11_ONLY:
        pytest.skip(f"{case} is an opset-11 op")
    proto, out, feed = build(case, opset, dtype)
    ours = run_here(proto, [out], feed)[out]
    theirs = run_onnxruntime(proto, [out], feed)[out]
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), **tolerance(dtype))


@pytest.mark.parametrize("case", sorted(CASES))
def test_builder_shapes_equal_onnxruntime_outputs(case):
    opset = 11
    proto, out, feed = build(case, opset, np.float32)
    builder = popart.Builder(proto)
    theirs = run_onnxruntime(proto, [out], feed)[out]
    assert builder.getTensorShape(out) == list(theirs.shape)
    assert builder.getTensorDtypeString(out) == str(theirs.dtype)
