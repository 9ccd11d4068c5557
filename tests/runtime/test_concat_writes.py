"""Convolution runs whose results a channel concat alone reads write straight into its output
(``ops/concat_into.py``), as SqueezeNet's fire modules do: the values equal NumPy's and onnxruntime's,
and bit for bit those of the same runs writing arrays of their own."""
import numpy as np
import onnx
import onnxruntime
import popxl
import popxl.ops as ops
import pytest
from onnx import helper, numpy_helper

import popart
from workbench.ops import winograd

RNG = np.random.default_rng(11)


def reference_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray, padding: int) -> np.ndarray:
    """relu(conv(x, w) + bias), stride 1, in float64."""
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(padding, padding)] * 2)
    kh, kw = w.shape[2:]
    out = (padded.shape[2] - kh + 1, padded.shape[3] - kw + 1)
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for i, j in np.ndindex(kh, kw):
        y += np.einsum("nchw,oc->nohw", padded[:, :, i:i + out[0], j:j + out[1]], w[:, :, i, j].astype(np.float64))
    return np.maximum(y + bias[:, None, None], 0)


def fire_case(x_shape, squeeze, expand, with_input=False, keep_branches=False):
    """A fire module: a 1×1 squeeze, then a 1×1 and a padded 3×3 expand, each with a bias and a relu,
    concatenated along the channels (after the input itself where ``with_input``); ``keep_branches``
    stores the expands' results too, so that the concat reads them as arrays of their own. The same
    values at every call."""
    rng = np.random.default_rng(5)
    c_in = x_shape[1]
    x = rng.standard_normal(x_shape).astype(np.float32)
    weights = [(rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)
               for shape in [(squeeze, c_in, 1, 1), (expand, squeeze, 1, 1), (expand, squeeze, 3, 3)]]
    biases = [rng.standard_normal(w.shape[0]).astype(np.float32) for w in weights]
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream(x.shape, popxl.float32, name="x")
        loaded = ops.host_load(x_stream)

        def conv(t, index, padding):
            y = ops.conv(t, popxl.constant(weights[index]), padding=(padding,) * 4)
            return ops.relu(ops.add(y, ops.reshape(popxl.constant(biases[index]), (-1, 1, 1))))
        squeezed = conv(loaded, 0, 0)
        branches = [conv(squeezed, 1, 0), conv(squeezed, 2, 1)]
        y = ops.concat(([loaded] if with_input else []) + branches, axis=1)
        streams = [popxl.d2h_stream(y.shape, y.dtype, name="y")]
        ops.host_store(streams[0], y)
        if keep_branches:
            for index, branch in enumerate(branches):
                streams.append(popxl.d2h_stream(branch.shape, branch.dtype, name=f"branch{index}"))
                ops.host_store(streams[-1], branch)
    with popxl.Session(ir, "ipu_model") as session:
        code = session.graph_code[ir.main_graph]
        ran = session.run({x_stream: x})[streams[0]]
    s = reference_conv(x, weights[0], biases[0], 0)
    expected = np.concatenate(([x] if with_input else []) + [reference_conv(s, weights[1], biases[1], 0),
                                                            reference_conv(s, weights[2], biases[2], 1)], axis=1)
    return code, ran, expected


@pytest.mark.parametrize("x_shape, squeeze, expand, with_input", [
    ((1, 24, 9, 8), 8, 40, False),     # im2col with the bias in the product
    ((2, 24, 7, 7), 8, 16, True),      # two images (no stretch is one contiguous array); the 3×3's result and
                                       # the input copied in
    ((1, 64, 14, 13), 32, 48, False),  # Winograd
], ids=["im2col", "two images and copied inputs", "winograd"])
def test_expanding_convolutions_write_into_the_concat_bit_for_bit(x_shape, squeeze, expand, with_input):
    code, ran, expected = fire_case(x_shape, squeeze, expand, with_input)
    (writes,) = code.plan.concats
    assert code.steps[writes.concat].type == "concat"
    assert writes.positions == ((1, 2) if with_input else (0, 1))
    assert [[code.steps[i].type for i in run] for run in writes.runs] == [["conv", "add", "relu"]] * 2
    np.testing.assert_allclose(ran, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())
    kept_code, apart, _ = fire_case(x_shape, squeeze, expand, with_input, keep_branches=True)
    assert not kept_code.plan.concats  # the branches are read twice: each is an array of its own
    np.testing.assert_array_equal(ran, apart)


def test_the_winograd_case_goes_by_winograd():
    assert winograd.applies((1, 32, 14, 13), (48, 32, 3, 3), (1, 1), (1, 1), 1, (14, 13), constant_weight=True)


def test_a_fire_module_from_onnx_matches_onnxruntime():
    """Through ``popart.InferenceSession``, as the CNN benchmark runs SqueezeNet."""
    x = RNG.standard_normal((1, 16, 12, 12)).astype(np.float32)
    shapes = {"squeeze": (8, 16, 1, 1), "expand1": (32, 8, 1, 1), "expand3": (32, 8, 3, 3)}
    initializers, nodes = [], []
    for name, shape in shapes.items():
        initializers += [numpy_helper.from_array((RNG.standard_normal(shape) / 3).astype(np.float32), f"{name}_w"),
                         numpy_helper.from_array(RNG.standard_normal(shape[0]).astype(np.float32), f"{name}_b")]
    source = {"squeeze": "x", "expand1": "squeeze_r", "expand3": "squeeze_r"}
    for name, shape in shapes.items():
        pads = [1] * 4 if shape[2] == 3 else [0] * 4
        nodes += [helper.make_node("Conv", [source[name], f"{name}_w", f"{name}_b"], [f"{name}_c"], pads=pads),
                  helper.make_node("Relu", [f"{name}_c"], [f"{name}_r"])]
    nodes.append(helper.make_node("Concat", ["expand1_r", "expand3_r"], ["y"], axis=1))
    graph = helper.make_graph(nodes, "fire", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, (1, 64, 12, 12))],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    expected = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                            providers=["CPUExecutionProvider"]).run(["y"], {"x": x})[0]
    flow = popart.DataFlow(1, {"y": popart.AnchorReturnType("ALL")})
    session = popart.InferenceSession(model.SerializeToString(), flow, popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({"x": x}, anchors))
    code = session.workbench_session.graph_code[session.workbench_session.ir.main_graph]
    assert len(code.plan.concats) == 1 and code.plan.concats[0].positions == (0, 1)
    np.testing.assert_allclose(anchors["y"].reshape(expected.shape), expected, rtol=1e-4,
                               atol=1e-5 * np.abs(expected).max())


def lone_conv_case(x_shape, c_out, kernel, stride, keep_conv=False):
    """concat(x, conv(x, w)) along the channels, the convolution of a constant weight alone (no bias, no
    relu), as a DenseNet layer ends; ``keep_conv`` stores the convolution's result too."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal((c_out, x_shape[1], kernel, kernel)) / np.sqrt(x_shape[1] * kernel ** 2)).astype(
        np.float32)
    padding = kernel // 2
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream(x.shape, popxl.float32, name="x")
        loaded = ops.host_load(x_stream)
        conv = ops.conv(loaded, popxl.constant(w), stride=(stride, stride), padding=(padding,) * 4)
        pooled = ops.max_pool(loaded, kernel_size=(stride, stride), stride=(stride, stride)) if stride > 1 else loaded
        y = ops.concat([pooled, conv], axis=1)
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
        if keep_conv:
            conv_stream = popxl.d2h_stream(conv.shape, conv.dtype, name="conv")
            ops.host_store(conv_stream, conv)
    with popxl.Session(ir, "ipu_model") as session:
        code = session.graph_code[ir.main_graph]
        ran = session.run({x_stream: x})[y_stream]
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(padding, padding)] * 2)
    out = ran.shape[2:]
    expected_conv = np.zeros((x_shape[0], c_out, *out))
    for i, j in np.ndindex(kernel, kernel):
        window = padded[:, :, i:i + stride * (out[0] - 1) + 1:stride, j:j + stride * (out[1] - 1) + 1:stride]
        expected_conv += np.einsum("nchw,oc->nohw", window, w[:, :, i, j].astype(np.float64))
    return code, ran, expected_conv


@pytest.mark.parametrize("x_shape, c_out, kernel, stride", [
    ((2, 16, 9, 9), 8, 3, 1),      # one product per kernel offset, written into the concat
    ((1, 32, 13, 12), 40, 3, 1),   # Winograd without a bias, written into the concat
    ((1, 8, 10, 10), 6, 3, 2),     # im2col, its result copied in
    ((2, 8, 6, 6), 4, 1, 1),       # 1×1, its result copied in
], ids=["shifted products", "winograd", "strided im2col", "pointwise"])
def test_a_lone_convolution_writes_into_the_concat_bit_for_bit(x_shape, c_out, kernel, stride):
    code, ran, expected_conv = lone_conv_case(x_shape, c_out, kernel, stride)
    (writes,) = code.plan.concats
    assert writes.positions == (1,) and [[code.steps[i].type for i in run] for run in writes.runs] == [["conv"]]
    np.testing.assert_allclose(ran[:, x_shape[1]:], expected_conv, rtol=1e-4, atol=1e-5 * np.abs(expected_conv).max())
    kept_code, apart, _ = lone_conv_case(x_shape, c_out, kernel, stride, keep_conv=True)
    assert not kept_code.plan.concats
    np.testing.assert_array_equal(ran, apart)


def dense_block_case(x_shape, layers, growth, late_reader=False, keep_first=False):
    """A DenseNet block: each layer concatenates its features with conv(relu(features)) (a padded 3×3, whose
    result the concat alone reads). ``late_reader`` reads the first concat's result again after the last
    concat; ``keep_first`` returns it. The main graph's code, the plain run's and the stepped run's
    results (the block's output first), and NumPy's block output."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal(x_shape).astype(np.float32)
    weights = [(rng.standard_normal((growth, x_shape[1] + layer * growth, 3, 3)) / 8).astype(np.float32)
               for layer in range(layers)]
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream(x.shape, popxl.float32, name="x")
        features = ops.host_load(x_stream)
        concats = []
        for w in weights:
            features = ops.concat([features, ops.conv(ops.relu(features), popxl.constant(w), padding=(1,) * 4)],
                                  axis=1)
            concats.append(features)
        results = [features] + ([ops.relu(concats[0])] if late_reader else []) + ([concats[0]] if keep_first else [])
        streams = []
        for index, result in enumerate(results):
            streams.append(popxl.d2h_stream(result.shape, result.dtype, name=f"y{index}"))
            ops.host_store(streams[-1], result)
    with popxl.Session(ir, "ipu_model") as session:
        code = session.graph_code[ir.main_graph]
        ran = session.run({x_stream: x})
        stepper = session.stepper({x_stream: x})
        stepper.continue_()
    expected = x.astype(np.float64)
    for w in weights:
        padded = np.pad(np.maximum(expected, 0), [(0, 0), (0, 0), (1, 1), (1, 1)])
        conv = sum(np.einsum("nchw,oc->nohw", padded[:, :, i:i + x_shape[2], j:j + x_shape[3]], w[:, :, i, j])
                   for i, j in np.ndindex(3, 3))
        expected = np.concatenate([expected, conv], axis=1)
    return code, [ran[s] for s in streams], [stepper.outputs[s] for s in streams], expected


@pytest.mark.parametrize("x_shape", [(1, 8, 7, 7), (2, 8, 7, 6)], ids=["one image", "two images"])
def test_a_dense_blocks_concats_write_each_into_the_next_bit_for_bit(x_shape):
    """Each concat's result, read last by the next concat, is made in that concat's output: the block's
    features are copied once, into the first concat, and never again."""
    code, ran, stepped, expected = dense_block_case(x_shape, layers=3, growth=4)
    concat_steps = [i for i, op in enumerate(code.steps) if op.type == "concat"]
    chained = {writes.concat: writes.concats for writes in code.plan.concats}
    assert [chained[i] for i in concat_steps] == [(), ((0, concat_steps[0]),), ((0, concat_steps[1]),)]
    np.testing.assert_array_equal(ran[0], stepped[0])  # the same values as the ops one by one
    np.testing.assert_allclose(ran[0], expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("late_reader, keep_first", [(True, False), (False, True)],
                         ids=["read after the next concat", "returned"])
def test_a_concat_read_after_the_next_or_returned_keeps_its_own_output(late_reader, keep_first):
    code, ran, stepped, expected = dense_block_case((1, 8, 6, 6), layers=3, growth=4, late_reader=late_reader,
                                                    keep_first=keep_first)
    first = next(i for i, op in enumerate(code.steps) if op.type == "concat")
    assert all((0, first) not in writes.concats for writes in code.plan.concats)
    assert sum(len(writes.concats) for writes in code.plan.concats) == 1  # the second into the third still
    for ours, theirs in zip(ran, stepped):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_allclose(ran[0], expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())
