"""An op whose input 0 dies at it writes its result over that input (``runtime/execution/reuse.py``):
a convolution's bias add, batch norm and relu become passes over the convolution's own output, with
the values of ordinary out-of-place ops, in a run and in a stepped run alike."""
import numpy as np
import popxl
import popxl.ops as ops

RNG = np.random.default_rng(0)
X = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
W = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
BIAS = RNG.standard_normal((1, 4, 1, 1)).astype(np.float32)
SCALE, SHIFT = RNG.uniform(0.5, 1.5, 4).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
MEAN, VAR = RNG.standard_normal(4).astype(np.float32), RNG.uniform(0.5, 1.5, 4).astype(np.float32)


def conv_block(store_conv: bool):
    """conv -> add bias -> batch norm -> relu, storing the relu (and, if asked, the convolution)."""
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream(X.shape, popxl.float32, name="x")
        x = ops.host_load(x_stream)
        conv = ops.conv(x, popxl.variable(W, name="w"), padding=(1, 1, 1, 1))
        biased = ops.add(conv, popxl.variable(BIAS, name="bias"))
        normed = ops.batch_norm_inference(biased, *(popxl.variable(v) for v in (SCALE, SHIFT, MEAN, VAR)))
        y = ops.relu(normed)
        streams = {}
        for name, tensor in [("y", y)] + ([("conv", conv)] if store_conv else []):
            streams[name] = popxl.d2h_stream(tensor.shape, tensor.dtype, name=name)
            ops.host_store(streams[name], tensor)
    return ir, x_stream, streams


def expected():
    padded = np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 4, 6, 6), np.float64)
    for i in range(6):
        for j in range(6):
            conv[0, :, i, j] = np.tensordot(W, padded[0, :, i:i + 3, j:j + 3], 3)
    normed = (conv + BIAS - MEAN[:, None, None]) / np.sqrt(VAR[:, None, None] + 1e-5) * SCALE[:, None, None]
    return conv, np.maximum(normed + SHIFT[:, None, None], 0)


def test_the_ops_after_a_convolution_write_over_its_output_with_the_values_of_fresh_arrays():
    ir, x_stream, streams = conv_block(store_conv=False)
    with popxl.Session(ir, "ipu_model") as session:
        code = session.graph_code[ir.main_graph]
        outputs = session.run({x_stream: X})
    assert {op.type for op in code.plan.overwriting} == {"add", "batch_norm_inference", "relu"}
    np.testing.assert_allclose(outputs[streams["y"]], expected()[1], rtol=1e-5, atol=1e-5)


def test_a_value_read_again_later_is_not_written_over():
    ir, x_stream, streams = conv_block(store_conv=True)
    with popxl.Session(ir, "ipu_model") as session:
        code = session.graph_code[ir.main_graph]
        outputs = session.run({x_stream: X})
    assert {op.type for op in code.plan.overwriting} == {"batch_norm_inference", "relu"}
    conv, y = expected()
    np.testing.assert_allclose(outputs[streams["conv"]], conv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs[streams["y"]], y, rtol=1e-5, atol=1e-5)


def test_a_stepped_run_shows_each_value_before_the_op_that_reuses_it():
    ir, x_stream, streams = conv_block(store_conv=False)
    conv, _ = expected()
    with popxl.Session(ir, "ipu_model") as session:
        ran = session.run({x_stream: X})[streams["y"]]
        stepper = session.stepper({x_stream: X})
        stepper.add_breakpoint(op_type="add")
        stop = stepper.continue_()
        shown = {live.tensor: live.values[0] for live in stop.live}
        conv_output = stop.position.op.inputs[0]
        np.testing.assert_allclose(shown[conv_output], conv, rtol=1e-5, atol=1e-5)
        stepper.clear_breakpoints()
        stepper.continue_()
        assert stepper.finished
        np.testing.assert_allclose(shown[conv_output], conv, rtol=1e-5, atol=1e-5)  # a copy, not overwritten
        # the plain run computes the bias add and batch norm as one map (``fusion.py``): the last bits may differ
        np.testing.assert_allclose(stepper.outputs[streams["y"]], ran, rtol=1e-6, atol=1e-6)
