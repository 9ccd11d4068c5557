"""Whole models against onnxruntime: an MLP and a CNN from the Builder, an exporter-style model whose
Reshape shape is computed from Shape/Gather/Concat, over several batches and replicas."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import popart
from popart_oracle import run_here, run_onnxruntime
from workbench.onnx.tensor_storage import to_array

RNG = np.random.default_rng(1)


def weight(*shape, dtype=np.float32):
    return (RNG.standard_normal(shape) * 0.3).astype(dtype)


def mlp(batch=4):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [batch, 16]))
    h = x
    for width_in, width_out in ((16, 32), (32, 32)):
        w = builder.addInitializedInputTensor(weight(width_in, width_out))
        b = builder.addInitializedInputTensor(weight(width_out))
        h = builder.aiOnnx.relu([builder.aiOnnx.add([builder.aiOnnx.matmul([h, w]), b])])
    w = builder.addInitializedInputTensor(weight(10, 32))
    b = builder.addInitializedInputTensor(weight(10))
    logits = builder.aiOnnx.gemm([h, w, b], transB=1)
    probs = builder.aiOnnx.softmax([logits])
    builder.addOutputTensor(probs)
    return builder.getModelProto(), x, probs


def cnn(dtype="FLOAT"):
    numpy = np.float16 if dtype == "FLOAT16" else np.float32
    builder = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1})
    x = builder.addInputTensor(popart.TensorInfo(dtype, [2, 3, 16, 16]))
    c = builder.aiOnnx.conv([x, builder.addInitializedInputTensor(weight(8, 3, 3, 3, dtype=numpy)),
                             builder.addInitializedInputTensor(weight(8, dtype=numpy))], pads=[1, 1, 1, 1])
    c = builder.aiOnnx.batchnormalization([c, builder.addInitializedInputTensor(np.ones(8, numpy)),
                                           builder.addInitializedInputTensor(weight(8, dtype=numpy)),
                                           builder.addInitializedInputTensor(weight(8, dtype=numpy)),
                                           builder.addInitializedInputTensor(np.ones(8, numpy))], 1)[0]
    p = builder.aiOnnx.maxpool([builder.aiOnnx.relu([c])], 1, [2, 2], strides=[2, 2])[0]
    c2 = builder.aiOnnx.conv([p, builder.addInitializedInputTensor(weight(4, 8, 3, 3, dtype=numpy))], strides=[2, 2])
    g = builder.aiOnnx.globalaveragepool([builder.aiOnnx.relu([c2])])
    f = builder.aiOnnx.flatten([g])
    out = builder.aiOnnx.gemm([f, builder.addInitializedInputTensor(weight(4, 5, dtype=numpy))])
    builder.addOutputTensor(out)
    return builder.getModelProto(), x, out


def test_mlp_matches_onnxruntime_over_batches_and_replicas():
    proto, x, probs = mlp()
    data = RNG.standard_normal((3, 2, 4, 16)).astype(np.float32)  # [batches, replicas, *shape]
    options = popart.SessionOptions()
    options.enableReplicatedGraphs = True
    options.replicatedGraphCount = 2
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 2})
    ours = run_here(proto, [probs], {x: data}, batches=3, options=options, device=device)[probs]
    assert ours.shape == (3, 2, 4, 10)
    for batch in range(3):
        for replica in range(2):
            theirs = run_onnxruntime(proto, [probs], {x: data[batch, replica]})[probs]
            np.testing.assert_allclose(ours[batch, replica], theirs, rtol=1e-5, atol=1e-6)


def test_cnn_matches_onnxruntime():
    proto, x, out = cnn()
    data = RNG.standard_normal((2, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(run_here(proto, [out], {x: data})[out], run_onnxruntime(proto, [out], {x: data})[out],
                               rtol=1e-4, atol=1e-5)


def test_half_precision_cnn_is_close_to_the_float_one():
    proto16, x16, out16 = cnn("FLOAT16")
    proto32 = onnx.load_from_string(proto16)
    for init in proto32.graph.initializer:
        init.CopyFrom(numpy_helper.from_array(to_array(init).astype(np.float32), init.name))  # PopART's packing
    for value in list(proto32.graph.input) + list(proto32.graph.output) + list(proto32.graph.value_info):
        value.type.tensor_type.elem_type = TensorProto.FLOAT
    data = RNG.standard_normal((2, 3, 16, 16)).astype(np.float32)
    ours = run_here(proto16, [out16], {x16: data.astype(np.float16)})[out16]
    theirs = run_onnxruntime(proto32.SerializeToString(), [out16], {x16: data})[out16]
    assert ours.dtype == np.float16
    np.testing.assert_allclose(ours.astype(np.float32), theirs, rtol=5e-2, atol=5e-2)


def test_exporter_style_model_folds_its_shape_computation():
    """torch.onnx.export writes x.view(x.size(0), -1) as Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    nodes = [
        helper.make_node("Conv", ["input.1", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0]),
        helper.make_node("Constant", [], ["minus"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        helper.make_node("Concat", ["n1", "minus"], ["shape"], axis=0),
        helper.make_node("Reshape", ["p", "shape"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc", "bias"], ["output"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "exported", [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [2, 3, 8, 8])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [2, 6])],
        initializer=[numpy_helper.from_array(weight(4, 3, 3, 3), "w"), numpy_helper.from_array(weight(6, 64), "fc"),
                     numpy_helper.from_array(weight(6), "bias")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]).SerializeToString()
    data = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    flow = popart.DataFlow(1, {"output": popart.AnchorReturnType("ALL")})
    session = popart.InferenceSession(proto, flow, popart.DeviceManager().createCpuDevice())
    op_types = {op.type for graph in session.ir.graphs for op in graph.ops}
    assert "gather" not in op_types and "concat" not in op_types  # computed once, at lowering
    np.testing.assert_allclose(run_here(proto, ["output"], {"input.1": data})["output"],
                               run_onnxruntime(proto, ["output"], {"input.1": data})["output"], rtol=1e-4, atol=1e-5)


def test_a_shape_the_builder_computes_from_constants_is_folded_although_its_nodes_carry_debug_ids():
    """A Reshape whose shape a Concat of Builder constants computes (each node with its
    ``__debug_info_id``) runs: the Concat is evaluated at compile time."""
    builder = popart.Builder(opsets={"ai.onnx": 11, "ai.graphcore": 1, "ai.onnx.ml": 1})
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 6]))
    rows, columns = (builder.aiOnnx.constant(np.array([d], np.int64)) for d in (3, 4))
    shape = builder.aiOnnx.concat([rows, columns], 0)
    y = builder.aiOnnx.reshape([x, shape])
    data = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(run_here(builder.getModelProto(), [y], {x: data})[y], data.reshape(3, 4))
