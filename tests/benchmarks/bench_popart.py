"""PopART benchmarks, each a ratio measured in one run: building a 2,000-node model with the Builder
(against writing the same nodes with onnx.helper and one shape inference of the whole model);
lowering and compiling it (against building and compiling the same program with popxl); and an
inference step of an MLP (against the same program written with popxl).

Run with ``python -m pytest tests/benchmarks/bench_popart.py -o python_files='bench_*.py' -s``.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper

import popart
import popxl
import popxl.ops as ops
from bench_runtime import best_time

NODES = 2000


def build_with_builder():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [4, 16]))
    w = builder.addInitializedInputTensor(np.full(16, 0.5, np.float32))
    for index in range(NODES):
        x = builder.aiOnnx.add([x, w]) if index % 2 else builder.aiOnnx.relu([x])
    builder.addOutputTensor(x)
    return builder.getModelProto(), x


def build_with_onnx_helper():
    nodes, x = [], "x"
    for index in range(NODES):
        out = f"t{index}"
        nodes.append(helper.make_node("Add", [x, "w"], [out]) if index % 2 else helper.make_node("Relu", [x], [out]))
        x = out
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
                              initializer=[onnx.numpy_helper.from_array(np.full(16, 0.5, np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
    return onnx.shape_inference.infer_shapes(model).SerializeToString()


def test_building_a_2000_node_model():
    ours = best_time(build_with_builder, repeats=3)
    plain = best_time(build_with_onnx_helper, repeats=3)
    print(f"\nBuilder, {NODES} nodes: {ours:.3f} s; onnx.helper + one shape inference: {plain:.3f} s; "
          f"ratio {ours / plain:.1f}")


def test_lowering_and_compiling_a_2000_node_model():
    proto, out = build_with_builder()

    def popart_session():
        options = popart.SessionOptions()
        options.constantWeights = False
        session = popart.InferenceSession(proto, popart.DataFlow(1, [out]),
                                          popart.DeviceManager().createIpuModelDevice({}), userOptions=options)
        session.prepareDevice()
        session.detach()

    def popxl_session():
        ir = popxl.Ir()
        with ir.main_graph:
            stream = popxl.h2d_stream([4, 16], popxl.float32, name="x")
            x = ops.host_load(stream)
            w = popxl.variable(np.full(16, 0.5, np.float32), name="w")
            for index in range(NODES):
                x = ops.add(x, w) if index % 2 else ops.relu(x)
            ops.host_store(popxl.d2h_stream(x.shape, x.dtype, name="y"), x)
        popxl.Session(ir, "ipu_model")

    ours = best_time(popart_session, repeats=3)
    baseline = best_time(popxl_session, repeats=3)
    print(f"\nlowering + compiling {NODES} nodes: PopART {ours:.3f} s, popxl {baseline:.3f} s, "
          f"ratio {ours / baseline:.2f}")


def mlp_model(batch=32, sizes=(784, 256, 256, 10)):
    rng = np.random.default_rng(0)
    weights = [(rng.standard_normal((a, b)).astype(np.float32) * 0.05, np.zeros(b, np.float32))
               for a, b in zip(sizes, sizes[1:])]
    return weights, rng.standard_normal((batch, sizes[0])).astype(np.float32)


def test_popart_inference_step_against_popxl():
    weights, data = mlp_model()
    builder = popart.Builder()
    h = x = builder.addInputTensor(popart.TensorInfo("FLOAT", list(data.shape)))
    for i, (w, b) in enumerate(weights):
        h = builder.aiOnnx.add([builder.aiOnnx.matmul([h, builder.addInitializedInputTensor(w)]),
                                builder.addInitializedInputTensor(b)])
        if i < len(weights) - 1:
            h = builder.aiOnnx.relu([h])
    options = popart.SessionOptions()
    options.constantWeights = False
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [h]),
                                      popart.DeviceManager().createIpuModelDevice({}), userOptions=options)
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    stepio = popart.PyStepIO({x: data}, anchors)
    ours = best_time(lambda: session.run(stepio), repeats=50)

    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream(data.shape, popxl.float32, name="x")
        y = ops.host_load(x_stream)
        for i, (w, b) in enumerate(weights):
            y = y @ popxl.variable(w, name=f"w{i}") + popxl.variable(b, name=f"b{i}")
            if i < len(weights) - 1:
                y = ops.relu(y)
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
    with popxl.Session(ir, "ipu_model") as reference:
        reference.progress = False
        expected = reference.run({x_stream: data})[y_stream]
        baseline = best_time(lambda: reference.run({x_stream: data}), repeats=50)
    session.run(stepio)
    np.testing.assert_allclose(anchors[h], expected, rtol=1e-5)
    ratio = ours / baseline
    print(f"\nMLP inference step: PopART {ours * 1e3:.3f} ms, popxl {baseline * 1e3:.3f} ms, ratio {ratio:.2f} "
          "(target <= 1.1)")
    assert ratio <= 1.1
