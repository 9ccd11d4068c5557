"""A run of per-channel scales and shifts (batch norm in inference, a ``mul`` and an ``add`` of one value
per channel), each reading the value before it and nothing else reading that value, is one kernel in
a plain run (``runtime/execution/fusion.py``); the stepper and profiled runs still run each op."""
import numpy as np
import popxl
import popxl.ops as ops
from workbench.ops.channel_affine import run_kernels

RNG = np.random.default_rng(1)
X = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
SCALE, SHIFT = RNG.uniform(0.5, 1.5, 3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
MEAN, VAR = RNG.standard_normal(3).astype(np.float32), RNG.uniform(0.5, 1.5, 3).astype(np.float32)
FACTOR = RNG.uniform(0.5, 1.5, (3, 1, 1)).astype(np.float32)
OFFSET = RNG.standard_normal((1, 3, 1, 1)).astype(np.float32)
FULL = RNG.uniform(0.5, 1.5, X.shape).astype(np.float32)


def channel_maps(store_normed: bool = False, full_factor: bool = False):
    """input + 1 -> batch norm -> mul -> add -> relu (adding one value is a shift too)."""
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream(X.shape, popxl.float32, name="x")
        x = ops.add(ops.host_load(x_stream), popxl.constant(np.float32(1)))
        normed = ops.batch_norm_inference(x, *(popxl.variable(v) for v in (SCALE, SHIFT, MEAN, VAR)))
        scaled = ops.mul(normed, popxl.variable(FULL if full_factor else FACTOR, name="factor"))
        y = ops.relu(ops.add(scaled, popxl.variable(OFFSET, name="offset")))
        streams = {}
        for name, tensor in [("y", y)] + ([("normed", normed)] if store_normed else []):
            streams[name] = popxl.d2h_stream(tensor.shape, tensor.dtype, name=name)
            ops.host_store(streams[name], tensor)
    return ir, x_stream, streams


def expected(full_factor: bool = False):
    per_channel = (slice(None), None, None)
    normed = (X + 1 - MEAN[per_channel]) / np.sqrt(VAR[per_channel] + 1e-5) * SCALE[per_channel] + SHIFT[per_channel]
    return normed, np.maximum(normed * (FULL if full_factor else FACTOR) + OFFSET, 0)


def run_and_step(ir, x_stream, profile=False):
    with popxl.Session(ir, "ipu_model") as session:
        code = session.graph_code[ir.main_graph]
        session.profile = profile
        ran = session.run({x_stream: X})
        stepper = session.stepper({x_stream: X})
        stepper.add_breakpoint(op_type="mul")
        stop = stepper.continue_()
        stepper.clear_breakpoints()
        stepper.continue_()
        return code, ran, stop, stepper.outputs


def test_a_plain_run_computes_the_scales_and_shifts_as_one_kernel():
    ir, x_stream, streams = channel_maps()
    code, ran, stop, stepped = run_and_step(ir, x_stream)
    (run,) = code.plan.fused
    assert [code.steps[i].type for i in run] == ["add", "batch_norm_inference", "mul", "add"]
    normed, y = expected()
    np.testing.assert_allclose(ran[streams["y"]], y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(stepped[streams["y"]], y, rtol=1e-5, atol=1e-5)
    shown = {live.tensor: live.values[0] for live in stop.live}
    np.testing.assert_allclose(shown[stop.position.op.inputs[0]], normed, rtol=1e-5, atol=1e-5)  # op by op


def test_a_profiled_run_runs_each_op():
    ir, x_stream, streams = channel_maps()
    code, ran, _, stepped = run_and_step(ir, x_stream, profile=True)
    assert code.plan.fused
    np.testing.assert_array_equal(ran[streams["y"]], stepped[streams["y"]])  # the same kernels, bit for bit


def test_a_value_read_elsewhere_or_a_full_size_factor_ends_the_run():
    ir, x_stream, streams = channel_maps(store_normed=True)
    code, ran, _, _ = run_and_step(ir, x_stream)
    assert [[code.steps[i].type for i in run] for run in code.plan.fused] == [
        ["add", "batch_norm_inference"], ["mul", "add"]]
    normed, y = expected()
    np.testing.assert_allclose(ran[streams["normed"]], normed, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ran[streams["y"]], y, rtol=1e-5, atol=1e-5)
    ir, x_stream, streams = channel_maps(full_factor=True)
    code, ran, _, _ = run_and_step(ir, x_stream)
    assert [[code.steps[i].type for i in run] for run in code.plan.fused] == [["add", "batch_norm_inference"]]
    np.testing.assert_allclose(ran[streams["y"]], expected(full_factor=True)[1], rtol=1e-5, atol=1e-5)


def test_a_run_given_up_half_way_leaves_nothing_to_the_next():
    ir, x_stream, _ = channel_maps()
    with popxl.Session(ir, "ipu_model") as session:
        code = session.graph_code[ir.main_graph]
    chain = [code.steps[i] for i in code.plan.fused[0]]
    first, normalise, scale, shift = run_kernels(chain, overwrite=False)
    one = np.float32(1)
    first(X, one)  # a run that failed after its first op
    y = shift(scale(normalise(first(X, one), SCALE, SHIFT, MEAN, VAR), FACTOR), OFFSET)
    normed, _ = expected()
    np.testing.assert_allclose(y, normed * FACTOR + OFFSET, rtol=1e-5, atol=1e-5)


def test_a_run_of_constant_factors_is_composed_once_and_gives_the_same_values():
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream(X.shape, popxl.float32, name="x")
        x = ops.add(ops.host_load(x_stream), popxl.constant(np.float32(1)))
        normed = ops.batch_norm_inference(x, *(popxl.constant(v) for v in (SCALE, SHIFT, MEAN, VAR)))
        y = ops.add(ops.mul(normed, popxl.constant(FACTOR)), ops.reshape(popxl.constant(OFFSET), (3, 1, 1)))
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
    code, ran, _, stepped = run_and_step(ir, x_stream)
    chain = [code.steps[i] for i in code.plan.fused[0]]
    assert [op.type for op in chain] == ["add", "batch_norm_inference", "mul", "add"]
    first, normalise, scale, shift = run_kernels(chain, overwrite=False)
    assert scale(X, None) is X  # the map is known already: the steps before the last give their input back
    normed, _ = expected()
    expected_y = normed * FACTOR + OFFSET
    np.testing.assert_allclose(ran[y_stream], expected_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(stepped[y_stream], expected_y, rtol=1e-5, atol=1e-5)
