"""Subgraphs: aiGraphcore.call of a subgraph builder, If and Loop, lowered to popxl call, conditional
and repeat, checked against onnxruntime where it knows the op."""
import numpy as np
import onnx
import pytest

import popart
from popart_oracle import run_here, run_onnxruntime


def test_call_runs_a_subgraph_builder_as_a_popxl_call():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.array([2.0, 3.0], np.float32))
    callee = builder.createSubgraphBuilder()
    callee.setGraphName("scale")
    inner = callee.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    callee.addOutputTensor(callee.aiOnnx.mul([inner, w]))
    first = builder.aiGraphcore.call([x], 1, callee)[0]
    second = builder.aiGraphcore.call([first], 1, callee)[0]
    assert builder.getTensorShape(second) == [2]
    proto = builder.getModelProto()
    onnx.checker.check_model(onnx.load_from_string(proto))
    session = popart.InferenceSession(proto, popart.DataFlow(1, [second]), popart.DeviceManager().createCpuDevice())
    calls = [op for op in session.ir.main_graph.ops if op.type == "call"]
    assert len(calls) == 2 and calls[0].called_graphs[0].name.startswith("scale")
    out = run_here(proto, [second], {x: np.ones(2, np.float32)})[second]
    np.testing.assert_allclose(out, [4.0, 9.0])


def if_model():
    builder = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
    cond = builder.addInputTensor(popart.TensorInfo("BOOL", [1]))
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [3]))
    then_branch = builder.createSubgraphBuilder()
    then_branch.addInputTensorFromParentGraph(x)
    then_branch.addOutputTensor(then_branch.aiOnnx.relu([x]))
    else_branch = builder.createSubgraphBuilder()
    else_branch.addOutputTensor(else_branch.aiOnnx.neg([x]))
    out = builder.aiOnnx.logical_if([cond], 1, else_branch, then_branch)[0]
    builder.addOutputTensor(out)
    return builder.getModelProto(), cond, x, out


@pytest.mark.parametrize("taken", [True, False])
def test_if_lowers_to_a_conditional(taken):
    proto, cond, x, out = if_model()
    feed = {cond: np.array([taken]), x: np.array([-1.0, 0.5, 2.0], np.float32)}
    np.testing.assert_allclose(run_here(proto, [out], feed)[out], run_onnxruntime(proto, [out], feed)[out])


def loop_model(condition_from_body=False):
    builder = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    trips = builder.aiOnnx.constant(np.array(3, np.int64))
    keep_going = builder.aiOnnx.constant(np.array(True))
    body = builder.createSubgraphBuilder()
    iteration = body.addInputTensor(popart.TensorInfo("INT64", []))
    cond = body.addInputTensor(popart.TensorInfo("BOOL", []))
    value = body.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    if condition_from_body:
        body.addOutputTensor(body.aiOnnx.less([iteration, body.aiOnnx.constant(np.array(1, np.int64))]))
    else:
        body.addOutputTensor(body.aiOnnx.identity([cond]))
    body.addOutputTensor(body.aiOnnx.add([value, body.aiOnnx.cast([iteration], "FLOAT")]))
    out = builder.aiOnnx.loop([trips, keep_going, x], 1, body)[0]
    builder.addOutputTensor(out)
    return builder.getModelProto(), x, out


def test_loop_with_a_fixed_trip_count_lowers_to_a_repeat():
    proto, x, out = loop_model()
    feed = {x: np.array([1.0, 2.0], np.float32)}
    session = popart.InferenceSession(proto, popart.DataFlow(1, [out]), popart.DeviceManager().createCpuDevice())
    assert [op.attrs["repeat_count"] for op in session.ir.main_graph.ops if op.type == "repeat"] == [3]
    np.testing.assert_allclose(run_here(proto, [out], feed)[out], run_onnxruntime(proto, [out], feed)[out])


def test_loop_that_exits_early_is_refused_at_session_creation():
    proto, x, out = loop_model(condition_from_body=True)
    with pytest.raises(popart.popart_exception, match="early exit"):
        popart.InferenceSession(proto, popart.DataFlow(1, [out]), popart.DeviceManager().createCpuDevice())
