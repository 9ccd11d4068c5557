"""In-place updates write into the updated tensor's own memory, with the numbers of the out-of-place
formula; their ``into`` kernels write the same numbers elsewhere and leave the tensor as it was."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.ops.registry import op_def


def build(update, t_dtype, x_dtype):
    """The op ``update(t, x)`` adds to a fresh graph, with t and x of the given dtypes."""
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(np.zeros((3, 4), t_dtype), name="t")
        x = popxl.variable(np.zeros((3, 4), x_dtype), name="x")
        update(t, x)
    return ir.main_graph._ops[-1]


CASES = [
    ("scaled_add_", lambda t, x: ops.scaled_add_(t, x, b=-0.01), lambda t, x: 1.0 * t + -0.01 * x),
    ("scaled_add_", lambda t, x: ops.scaled_add_(t, x, a=0.9, b=0.1), lambda t, x: 0.9 * t + 0.1 * x),
    ("accumulate_", lambda t, x: ops.var_updates.accumulate_(t, x, -0.01), lambda t, x: t + -0.01 * x),
    ("accumulate_square_", lambda t, x: ops.var_updates.accumulate_square_(t, x, 0.5),
     lambda t, x: t + 0.5 * np.square(x)),
]


DTYPES = [(np.float32, np.float32), (np.float16, np.float16), (np.float32, np.float16), (np.int32, np.int32)]


@pytest.mark.parametrize("op_type, update, formula, t_dtype, x_dtype", [
    (*case, t_dtype, x_dtype) for case in CASES for t_dtype, x_dtype in DTYPES
    if case[0] != "scaled_add_" or t_dtype is x_dtype])  # scaled_add_ takes one dtype
def test_in_place_kernels_write_the_out_of_place_numbers_into_the_tensor(op_type, update, formula,
                                                                         t_dtype, x_dtype):
    op = build(update, t_dtype, x_dtype)
    assert op.type == op_type
    rng = np.random.default_rng(0)
    t = (rng.standard_normal((3, 4)) * 100).astype(t_dtype)
    x = (rng.standard_normal((3, 4)) * 100).astype(x_dtype)
    expected = np.asarray(formula(t, x)).astype(t_dtype)
    definition = op_def(op_type)

    untouched, out = t.copy(), np.empty_like(t)
    definition.into(op, None)(out, untouched, x)
    np.testing.assert_array_equal(untouched, t)
    np.testing.assert_array_equal(out, expected)

    result = definition.kernel(op, None)(t, x)
    assert result is t
    np.testing.assert_array_equal(t, expected)


def test_accumulator_scale_multiplies_in_place():
    op = build(lambda t, x: ops.var_updates.accumulator_scale_(t, 0.5), np.float32, np.float32)
    t = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert op_def(op.type).kernel(op, None)(t) is t
    np.testing.assert_array_equal(t, np.arange(12, dtype=np.float32).reshape(3, 4) * np.float32(0.5))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.bool_])
@pytest.mark.parametrize("zero_side", ["rhs", "lhs"])
def test_where_with_a_zero_constant_masks_bits_with_the_numbers_of_np_where(dtype, zero_side):
    rng = np.random.default_rng(1)
    cond = rng.random((5, 7)) > 0.5
    kept = (rng.standard_normal((5, 7)) * 10).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        kept[0, :4] = [np.nan, -np.inf, np.inf, -0.0]
    ir = popxl.Ir()
    with ir.main_graph:
        c = popxl.variable(cond, name="c")
        k = popxl.variable(kept, name="k")
        zero = popxl.constant(np.zeros((), dtype), name="zero")
        ops.where(c, k, zero) if zero_side == "rhs" else ops.where(c, zero, k)
    op = ir.main_graph._ops[-1]
    kernel = op_def("where").kernel(op, None)
    assert kernel is not np.where
    if zero_side == "rhs":
        expected, got = np.where(cond, kept, np.zeros((), dtype)), kernel(cond, kept, np.zeros((), dtype))
    else:
        expected, got = np.where(cond, np.zeros((), dtype), kept), kernel(cond, np.zeros((), dtype), kept)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))  # every bit


def sgd_session_ir(read_after: bool):
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.ones(3, np.float32), name="w")
        g = popxl.variable(np.full(3, 10.0, np.float32), name="g")
        updated = ops.scaled_add_(w, g, b=-0.1)
        out = popxl.d2h_stream([3], popxl.float32, name="out")
        ops.host_store(out, (updated + w) if read_after else updated)
    return ir, w, out


@pytest.mark.parametrize("read_after", [False, True])
def test_an_sgd_step_writes_a_spare_array_that_takes_the_variables_place(read_after):
    """The old array, untouched, is what a failed run would restore: no copy of the weights is made.
    A later read of the variable itself must see the update, so then the step writes in place."""
    ir, w, out = sgd_session_ir(read_after)
    with popxl.Session(ir, "ipu_model") as session:
        before = session.executable.device_values[0][w]
        result = session.run()[out]
        after = session.executable.device_values[0][w]
        np.testing.assert_array_equal(session.get_tensor_data(w), np.zeros(3))
        np.testing.assert_array_equal(result, np.zeros(3))
        assert (after is before) == read_after
        if not read_after:
            np.testing.assert_array_equal(before, np.ones(3))  # the old value, now the spare
            session.run()
            assert session.executable.device_values[0][w] is before  # the two arrays take turns
            np.testing.assert_array_equal(session.get_tensor_data(w), np.full(3, -1.0))
