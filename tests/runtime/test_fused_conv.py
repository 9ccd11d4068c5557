"""A convolution of a constant weight, the constant per-channel scales and shifts after it and a closing
relu run as one kernel in a plain run (``ops/fused_conv.py``): the factors fold into the weight and a
bias; the stepper still runs each op, and both give NumPy's results."""
import numpy as np
import popxl
import popxl.ops as ops
import pytest

from workbench.ops import winograd
from workbench.ops.channel_affine import constant_value

RNG = np.random.default_rng(3)
EPS = 1e-5


def run_and_step(ir, x_stream, x, y_stream):
    """The main graph's code, and ``y`` from a plain run and from a stepped one."""
    with popxl.Session(ir, "ipu_model") as session:
        code = session.graph_code[ir.main_graph]
        ran = session.run({x_stream: x})[y_stream]
        stepper = session.stepper({x_stream: x})
        stepper.continue_()
        return code, ran, stepper.outputs[y_stream]


def reference_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Stride 1, padding 1, in float64."""
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)])
    kh, kw = w.shape[2:]
    out = (padded.shape[2] - kh + 1, padded.shape[3] - kw + 1)
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for i, j in np.ndindex(kh, kw):
        y += np.einsum("nchw,oc->nohw", padded[:, :, i:i + out[0], j:j + out[1]], w[:, :, i, j].astype(np.float64))
    return y


def case(x_shape, c_out, kernel, variable_shift=False):
    """conv -> add a reshaped bias -> batch norm -> mul -> add -> relu, every factor a constant (the last
    shift a variable where asked); the session's results and the expected ones."""
    c_in = x_shape[1]
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = (RNG.standard_normal((c_out, c_in, kernel, kernel)) / np.sqrt(c_in * kernel ** 2)).astype(np.float32)
    bias, scale, shift, mean = (RNG.standard_normal(c_out).astype(np.float32) for _ in range(4))
    var = RNG.uniform(0.5, 1.5, c_out).astype(np.float32)
    factor = RNG.uniform(0.5, 1.5, (c_out, 1, 1)).astype(np.float32)
    offset = RNG.standard_normal((1, c_out, 1, 1)).astype(np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream(x.shape, popxl.float32, name="x")
        y = ops.conv(ops.host_load(x_stream), popxl.constant(w), padding=(1, 1, 1, 1))
        y = ops.add(y, ops.reshape(popxl.constant(bias), (c_out, 1, 1)))
        y = ops.batch_norm_inference(y, *(popxl.constant(v) for v in (scale, shift, mean, var)), epsilon=EPS)
        y = ops.mul(y, popxl.constant(factor))
        y = ops.relu(ops.add(y, popxl.variable(offset) if variable_shift else popxl.constant(offset)))
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
    code, ran, stepped = run_and_step(ir, x_stream, x, y_stream)
    per_channel = (slice(None), None, None)
    normed = ((reference_conv(x, w) + bias[per_channel] - mean[per_channel]) / np.sqrt(var[per_channel] + EPS)
              * scale[per_channel] + shift[per_channel])
    expected = np.maximum(normed * factor + offset, 0)
    return code, ran, stepped, expected


@pytest.mark.parametrize("x_shape, c_out, kernel", [
    ((1, 8, 9, 7), 6, 3),      # im2col
    ((2, 5, 6, 6), 4, 1),      # 1×1, two images
    ((1, 32, 14, 13), 40, 3),  # Winograd, the bias added at one tile position
])
def test_a_plain_run_computes_conv_bias_batch_norm_and_relu_as_one_kernel(x_shape, c_out, kernel):
    code, ran, stepped, expected = case(x_shape, c_out, kernel)
    (run,) = code.plan.fused
    assert [code.steps[i].type for i in run] == ["conv", "add", "batch_norm_inference", "mul", "add", "relu"]
    scale = np.abs(expected).max()
    np.testing.assert_allclose(ran, expected, rtol=1e-4, atol=1e-5 * scale)
    np.testing.assert_allclose(stepped, expected, rtol=1e-4, atol=1e-5 * scale)  # op by op


def test_the_winograd_case_goes_by_winograd():
    assert winograd.applies((1, 32, 14, 13), (40, 32, 3, 3), (1, 1), (1, 1), 1, (14, 13), constant_weight=True)


def test_a_shift_that_is_a_variable_ends_the_convolution_run():
    code, ran, stepped, expected = case((1, 4, 6, 6), 3, 3, variable_shift=True)
    assert [[code.steps[i].type for i in run] for run in code.plan.fused] == [
        ["conv", "add", "batch_norm_inference", "mul"]]
    np.testing.assert_allclose(ran, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())
    np.testing.assert_allclose(stepped, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


def test_a_reshaped_constant_has_a_value_and_a_computed_tensor_none():
    value = np.arange(6, dtype=np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        c = popxl.constant(value)
        reshaped = ops.reshape(c, (2, 3, 1))
        computed = ops.add(c, c)
    np.testing.assert_array_equal(constant_value(reshaped), value.reshape(2, 3, 1))
    assert constant_value(computed) is None


def preactivation_case(factor_sign, padding, groups=1):
    """host input -> batch norm -> mul -> relu -> conv (1×1 or padded 3×3) -> add a bias -> relu, as DenseNet
    lays out a layer: the batch norm and relu before an unpadded convolution join its run."""
    x = RNG.standard_normal((1, 6, 5, 4)).astype(np.float32)
    scale, shift, mean = (RNG.standard_normal(6).astype(np.float32) for _ in range(3))
    var = RNG.uniform(0.5, 1.5, 6).astype(np.float32)
    factor = (RNG.uniform(0.5, 1.5, (6, 1, 1)) * factor_sign).astype(np.float32)
    kernel = 3 if padding else 1
    c_out = 4 if groups > 1 else 5
    w = (RNG.standard_normal((c_out, 6 // groups, kernel, kernel)) / 4).astype(np.float32)
    whole = np.zeros((c_out, 6, kernel, kernel), np.float32)  # the grouped weight as one block-diagonal weight
    for g in range(groups):
        rows = slice(g * c_out // groups, (g + 1) * c_out // groups)
        whole[rows, g * 6 // groups:(g + 1) * 6 // groups] = w[rows]
    bias = RNG.standard_normal(c_out).astype(np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream(x.shape, popxl.float32, name="x")
        t = ops.add(ops.host_load(x_stream), popxl.constant(np.float32(0.5)))
        t = ops.batch_norm_inference(t, *(popxl.constant(v) for v in (scale, shift, mean, var)), epsilon=EPS)
        t = ops.relu(ops.mul(t, popxl.constant(factor)))
        y = ops.conv(t, popxl.constant(w), padding=(padding,) * 4, groups=groups)
        y = ops.relu(ops.add(y, ops.reshape(popxl.constant(bias), (c_out, 1, 1))))
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
    code, ran, stepped = run_and_step(ir, x_stream, x, y_stream)
    per_channel = (slice(None), None, None)
    normed = (x + 0.5 - mean[per_channel]) / np.sqrt(var[per_channel] + EPS) * scale[per_channel] + shift[per_channel]
    activated = np.maximum(normed * factor, 0)
    padded = np.pad(activated.astype(np.float64), [(0, 0), (0, 0)] + [(padding, padding)] * 2)
    conv = np.zeros((1, c_out) + tuple(n - kernel + 1 for n in padded.shape[2:]))
    for i, j in np.ndindex(kernel, kernel):
        window = padded[:, :, i:i + conv.shape[2], j:j + conv.shape[3]]
        conv += np.einsum("nchw,oc->nohw", window, whole[:, :, i, j].astype(np.float64))
    return code, ran, stepped, np.maximum(conv + bias[per_channel], 0)


@pytest.mark.parametrize("factor_sign", [1.0, np.array([1, -1, 1, 1, -1, -1])[:, None, None]],
                         ids=["positive factors", "mixed signs"])
def test_the_batch_norm_and_relu_before_an_unpadded_convolution_join_its_run(factor_sign):
    code, ran, stepped, expected = preactivation_case(factor_sign, padding=0)
    runs = [[code.steps[i].type for i in run] for run in code.plan.fused]
    assert ["add", "batch_norm_inference", "mul", "relu", "conv", "add", "relu"] in runs  # adding 0.5 is a shift too
    np.testing.assert_allclose(ran, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())
    np.testing.assert_allclose(stepped, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("padding, groups", [(1, 1), (0, 2)], ids=["padded", "grouped"])
def test_a_padded_or_grouped_convolution_keeps_the_relu_before_it_apart(padding, groups):
    """Padding reads zeros after the relu, which the folded form cannot give; a grouped weight is not
    folded per input channel."""
    code, ran, _, expected = preactivation_case(1.0, padding, groups)
    runs = [[code.steps[i].type for i in run] for run in code.plan.fused]
    assert ["conv", "add", "relu"] in runs and not any("relu" in run[:-1] for run in runs)
    np.testing.assert_allclose(ran, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


def stem_case(x_shape, c_out, kernel, conv_stride, conv_pad, pool_stride, pool_pad):
    """A CNN's stem: conv -> batch norm -> relu -> max pool 3×3; the main graph's code, the plain run's and
    the stepped run's results, and NumPy's."""
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = (RNG.standard_normal((c_out, x_shape[1], kernel, kernel)) / kernel).astype(np.float32)
    scale, shift, mean = (RNG.standard_normal(c_out).astype(np.float32) for _ in range(3))
    var = RNG.uniform(0.5, 1.5, c_out).astype(np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream(x.shape, popxl.float32, name="x")
        y = ops.conv(ops.host_load(x_stream), popxl.constant(w), stride=(conv_stride,) * 2,
                     padding=(conv_pad,) * 4)
        y = ops.batch_norm_inference(y, *(popxl.constant(v) for v in (scale, shift, mean, var)), epsilon=EPS)
        y = ops.max_pool(ops.relu(y), (3, 3), stride=(pool_stride,) * 2, padding=(pool_pad,) * 4)
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
    code, ran, stepped = run_and_step(ir, x_stream, x, y_stream)
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(conv_pad, conv_pad)] * 2)
    size = [(n - kernel) // conv_stride + 1 for n in padded.shape[2:]]
    conv = np.zeros((x_shape[0], c_out, *size))
    for i, j in np.ndindex(kernel, kernel):
        window = padded[:, :, i:i + (size[0] - 1) * conv_stride + 1:conv_stride,
                        j:j + (size[1] - 1) * conv_stride + 1:conv_stride]
        conv += np.einsum("nchw,oc->nohw", window, w[:, :, i, j].astype(np.float64))
    per_channel = (slice(None), None, None)
    normed = (conv - mean[per_channel]) / np.sqrt(var[per_channel] + EPS) * scale[per_channel] + shift[per_channel]
    activated = np.pad(np.maximum(normed, 0), [(0, 0), (0, 0)] + [(pool_pad, pool_pad)] * 2, constant_values=-np.inf)
    out = [(n - 3) // pool_stride + 1 for n in activated.shape[2:]]
    expected = np.full((x_shape[0], c_out, *out), -np.inf)
    for i, j in np.ndindex(3, 3):
        expected = np.maximum(expected, activated[:, :, i:i + (out[0] - 1) * pool_stride + 1:pool_stride,
                                                  j:j + (out[1] - 1) * pool_stride + 1:pool_stride])
    return code, ran, stepped, expected


@pytest.mark.parametrize("x_shape, kernel, conv_stride, conv_pad, pool_pad", [
    ((1, 3, 23, 23), 3, 2, 0, 0),  # SqueezeNet's stem
    ((2, 3, 20, 18), 7, 2, 3, 1),  # ResNet's stem, two images
])
def test_a_stem_of_conv_batch_norm_relu_and_a_strided_max_pool_runs_as_one(x_shape, kernel, conv_stride, conv_pad,
                                                                           pool_pad):
    code, ran, stepped, expected = stem_case(x_shape, 6, kernel, conv_stride, conv_pad, 2, pool_pad)
    runs = [[code.steps[i].type for i in run] for run in code.plan.fused]
    assert runs == [["conv", "batch_norm_inference", "relu", "max_pool"]]
    np.testing.assert_allclose(ran, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())
    np.testing.assert_allclose(stepped, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


def test_a_max_pool_of_stride_one_stays_out_of_the_convolution_run():
    code, ran, _, expected = stem_case((1, 3, 12, 12), 4, 3, 1, 1, 1, 1)
    runs = [[code.steps[i].type for i in run] for run in code.plan.fused]
    assert runs == [["conv", "batch_norm_inference", "relu"]]
    np.testing.assert_allclose(ran, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


def test_a_convolution_that_goes_by_winograd_keeps_the_max_pool_after_it_apart():
    code, ran, _, expected = stem_case((1, 32, 14, 14), 40, 3, 1, 1, 2, 0)
    assert winograd.applies((1, 32, 14, 14), (40, 32, 3, 3), (1, 1), (1, 1), 1, (14, 14), constant_weight=True)
    runs = [[code.steps[i].type for i in run] for run in code.plan.fused]
    assert runs == [["conv", "batch_norm_inference", "relu"]]
    np.testing.assert_allclose(ran, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())
