"""Reductions, arg-reductions, cumsum, topk, histogram and lamb_square, against NumPy."""
import inspect
import math

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from helpers import run_op

RNG = np.random.default_rng(2)
TOLERANCE = {np.float16: dict(rtol=3e-3, atol=3e-3), np.float32: dict(rtol=1e-5, atol=1e-6),
             np.int32: dict(rtol=0, atol=0)}


def data(shape, dtype, low=-3.0, high=3.0):
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(math.floor(low), math.ceil(high) + 1, shape).astype(dtype)
    return RNG.uniform(low, high, shape).astype(dtype)


def lower_median(x, axis, keepdims):
    """NumPy's median averages the two middle values; the IPU takes the lower one."""
    axes = tuple(range(x.ndim)) if axis is None else (axis,) if np.isscalar(axis) else tuple(axis)
    axes = tuple(a % x.ndim for a in axes)
    moved = np.moveaxis(x, axes, tuple(range(-len(axes), 0)))
    flat = np.sort(moved.reshape(moved.shape[:x.ndim - len(axes)] + (-1,)), axis=-1)
    values = flat[..., (flat.shape[-1] - 1) // 2]
    return np.expand_dims(values, axes) if keepdims else values


def logsumexp(x, axis, keepdims):
    return np.log(np.sum(np.exp(x.astype(np.float64)), axis=axis, keepdims=keepdims))


REDUCTIONS = {
    "sum": (ops.sum, np.sum, "number"),
    "mean": (ops.mean, np.mean, "number"),
    "median": (ops.median, lower_median, "number"),
    "max": (ops.max, np.max, "number"),
    "min": (ops.min, np.min, "number"),
    "prod": (ops.prod, np.prod, "number"),
    "l1": (ops.l1, lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis, keepdims=keepdims), "number"),
    "l2": (ops.l2, lambda x, axis, keepdims: np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=axis,
                                                            keepdims=keepdims)), "float"),
    "logsum": (ops.logsum, lambda x, axis, keepdims: np.log(np.sum(x, axis=axis, keepdims=keepdims)), "float"),
    "logsumexp": (ops.logsumexp, logsumexp, "float"),
    "sumsquare": (ops.sumsquare, lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims),
                  "number"),
}
AXES = [None, 0, -1, (0, 2), [-1, -3], ()]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("name, dtype", [(name, dtype) for name, (_, _, kind) in REDUCTIONS.items()
                                         for dtype in (np.float16, np.float32, np.int32)
                                         if kind == "number" or dtype != np.int32])
def test_reduction_matches_numpy(name, axis, keepdims, dtype):
    fn, reference, _ = REDUCTIONS[name]
    low = 0.5 if name == "logsum" else -1.2 if name == "prod" else -3.0
    x = data((2, 3, 4), dtype, low=low, high=1.2 if name == "prod" else 3.0)
    result = run_op(lambda t: fn(t, axis=axis, keepdims=keepdims), x)
    numpy_axis = tuple(axis) if isinstance(axis, list) else axis
    expected = reference(x.astype(np.float64) if dtype != np.int32 else x, axis=numpy_axis, keepdims=keepdims)
    if name == "mean" and dtype == np.int32:
        expected = np.trunc(expected)
    assert result.dtype == dtype
    assert result.shape == np.shape(expected)
    np.testing.assert_allclose(result, expected, **TOLERANCE[dtype])


def test_median_of_an_even_count_is_the_lower_middle_value():
    x = np.array([[4.0, 1.0, 3.0, 2.0], [5.0, 5.0, 0.0, 9.0]], np.float32)
    np.testing.assert_array_equal(run_op(lambda t: ops.median(t, axis=1), x), [2.0, 5.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_median_is_one_op_that_also_gives_the_position_of_the_median(dtype):
    x = np.array([[[4.0, 1.0], [3.0, 2.0]], [[5.0, 7.0], [0.0, 9.0]]], dtype)
    values, positions = run_op(lambda t: ops.median(t, axis=[0, 2]).producer.outputs, x)
    assert positions.dtype == np.int32
    np.testing.assert_array_equal(values, [4.0, 2.0])
    flat = np.moveaxis(x, [0, 2], [-2, -1]).reshape(2, 4)  # the reduced axes, flattened in order
    np.testing.assert_array_equal(flat[np.arange(2), positions], values)


def test_half_sums_accumulate_in_float32():
    x = np.full(4096, 1.0, np.float16)
    np.testing.assert_array_equal(run_op(ops.sum, x), np.float16(4096))


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")
def test_logsumexp_does_not_overflow():
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf]], np.float32)
    result = run_op(lambda t: ops.logsumexp(t, axis=1), x)
    np.testing.assert_allclose(result, [1000.0 + np.log(2.0), -np.inf])


def test_reduction_of_a_scalar_over_all_axes_is_the_scalar():
    np.testing.assert_array_equal(run_op(ops.sum, np.array(3.5, np.float32)), np.array(3.5, np.float32))


def test_reduction_errors():
    x = data((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"sum: axis 2 is out of range for a tensor of rank 2 \(expected -2..1\)"):
        run_op(lambda t: ops.sum(t, axis=2), x)
    with pytest.raises(ValueError, match=r"mean: axis \(0, -2\) repeats an axis"):
        run_op(lambda t: ops.mean(t, axis=(0, -2)), x)
    with pytest.raises(TypeError, match="max: axis must be an int, an iterable of ints or None, got 1.5"):
        run_op(lambda t: ops.max(t, axis=1.5), x)
    with pytest.raises(TypeError, match="l2: expected a float tensor, got int32"):
        run_op(ops.l2, np.ones(3, np.int32))
    with pytest.raises(TypeError, match="sum: keepdims must be a bool, got 'yes'"):
        run_op(lambda t: ops.sum(t, keepdims="yes"), x)
    with pytest.raises(ValueError, match=r"min: cannot reduce over axis 0 of length 0 \(tensor shape \(0, 3\)\)"):
        run_op(lambda t: ops.min(t, axis=0), np.zeros((0, 3), np.float32))
    with pytest.raises(ValueError, match="prod: a scalar tensor has no axis 0 to reduce; use axis=None"):
        run_op(lambda t: ops.prod(t, axis=0), np.array(2.0, np.float32))


# ----- lamb_square -----
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_lamb_square_is_a_float32_scalar(dtype):
    x = data((3, 4), dtype)
    result = run_op(ops.lamb_square, x)
    assert result.dtype == np.float32 and result.shape == ()
    np.testing.assert_allclose(result, np.sum(x.astype(np.float64) ** 2), rtol=1e-6)


# ----- argmax / argmin -----
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32])
def test_argmax_argmin_return_int32_indices(dim, keepdim, dtype):
    x = data((3, 5), dtype)
    biggest, smallest = run_op(lambda t: (ops.argmax(t, dim, keepdim), ops.argmin(t, dim, keepdim)), x)
    assert biggest.dtype == smallest.dtype == np.int32
    np.testing.assert_array_equal(biggest, np.argmax(x, axis=dim, keepdims=keepdim))
    np.testing.assert_array_equal(smallest, np.argmin(x, axis=dim, keepdims=keepdim))


def test_argmax_defaults_to_dim_0_and_picks_the_first_tie():
    x = np.array([[1, 7], [7, 7]], np.int32)
    np.testing.assert_array_equal(run_op(ops.argmax, x), [1, 0])


def test_argmax_errors():
    with pytest.raises(ValueError, match="argmax: needs a tensor with at least one dimension, got a scalar"):
        run_op(ops.argmax, np.array(1.0, np.float32))
    with pytest.raises(ValueError, match="argmin: axis 2 is out of range"):
        run_op(lambda t: ops.argmin(t, dim=2), np.zeros((2, 2), np.float32))


# ----- cumsum -----
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32])
def test_cumsum_matches_numpy(dim, dtype):
    x = data((3, 4), dtype)
    result = run_op(lambda t: ops.cumsum(t, dim), x)
    assert result.dtype == dtype
    np.testing.assert_allclose(result, np.cumsum(x, axis=dim, dtype=np.float64), **TOLERANCE[dtype])


def test_cumsum_defaults_to_dim_0_and_refuses_scalars():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(run_op(ops.cumsum, x), np.cumsum(x, axis=0))
    with pytest.raises(ValueError, match="cumsum: needs a tensor with at least one dimension"):
        run_op(ops.cumsum, np.array(1, np.int32))


def test_cumsum_takes_its_axis_as_a_constant_input_as_popart_does():
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(np.ones((2, 3), np.float32))
        out = ops.cumsum(t, dim=-1)
        with pytest.raises(ValueError, match="cumsum: axis 2 is out of range"):
            ops.cumsum(t, dim=2)
    (op,) = ir.main_graph.ops
    assert op.inputs[1].name == "dim" and op.inputs[1].dtype is popxl.int64 and op.inputs[1].data == -1
    assert out.shape == (2, 3) and len(ir.main_graph.constants) == 1  # the refused call left nothing



# ----- topk -----
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32, np.uint32])
def test_topk_values_and_indices(axis, largest, dtype):
    x = RNG.permutation(24).reshape(4, 6).astype(dtype)
    values, indices = run_op(lambda t: ops.topk(t, 3, axis, largest, True), x)
    order = np.argsort(-x.astype(np.int64) if largest else x, axis=axis)
    expected_indices = np.take(order, [0, 1, 2], axis=axis)
    assert values.dtype == dtype and indices.dtype == np.int32
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(values, np.take_along_axis(x, expected_indices, axis))


def test_topk_ties_keep_index_order_and_unsorted_gives_the_same_elements():
    x = np.array([2.0, 5.0, 5.0, 1.0, 5.0], np.float32)
    values, indices = run_op(lambda t: ops.topk(t, 2, 0, True, False), x)
    np.testing.assert_array_equal(values, [5.0, 5.0])
    np.testing.assert_array_equal(indices, [1, 2])


def test_topk_of_extreme_integers():
    x = np.array([np.iinfo(np.int32).min, 0, np.iinfo(np.int32).max], np.int32)
    values, _ = run_op(lambda t: ops.topk(t, 3, 0, True, True), x)
    np.testing.assert_array_equal(values, x[::-1])


def test_topk_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"topk: k=4 is out of range for axis 1 of length 3 \(expected 1..3\)"):
        run_op(lambda t: ops.topk(t, 4, 1, True, True), x)
    with pytest.raises(TypeError, match="topk: k must be an int, got 2.0"):
        run_op(lambda t: ops.topk(t, 2.0, 1, True, True), x)


# ----- histogram -----
def test_histogram_bins_are_closed_below():
    x = np.array([-10, -0.1, 0.01, 0.09, 1.1, 4, 6.9, 7, 8.0, 900], np.float32)
    counts = run_op(lambda t: ops.histogram(t, [0.1, 3.1, 7], absolute_of_input=False), x)
    assert counts.dtype == np.uint32
    np.testing.assert_array_equal(counts, [4, 1, 2, 3])
    magnitudes = run_op(lambda t: ops.histogram(t, [0.1, 3.1, 7], absolute_of_input=True), x)
    np.testing.assert_array_equal(magnitudes, [2, 2, 2, 4])


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_histogram_matches_numpy_digitize(dtype):
    x = data((5, 7), dtype)
    levels = [-2.0, -0.5, 0.0, 1.0, 2.5]
    counts = run_op(lambda t: ops.histogram(t, levels, False), x)
    expected = np.bincount(np.digitize(x.ravel(), np.array(levels, dtype)), minlength=len(levels) + 1)
    np.testing.assert_array_equal(counts, expected)


def test_histogram_errors():
    with pytest.raises(ValueError, match=r"histogram: the levels \[1.0, 1.0\] are not a strictly increasing"):
        run_op(lambda t: ops.histogram(t, [1.0, 1.0], False), np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="histogram: expected a float16 or float32 tensor, got int32"):
        run_op(lambda t: ops.histogram(t, [1.0], False), np.zeros(2, np.int32))


@pytest.mark.parametrize("fn, parameters", [
    (ops.sum, "(t, axis=None, keepdims=False)"), (ops.median, "(t, axis=None, keepdims=False)"),
    (ops.argmax, "(t, dim=0, keepdim=False)"), (ops.cumsum, "(t, dim=0)"), (ops.lamb_square, "(t)"),
    (ops.topk, "(t, k, axis, largest, sorted, available_memory_proportion=None)"),
    (ops.histogram, "(t, levels, absolute_of_input)"),
])
def test_signatures(fn, parameters):
    described = [str(p).split(":")[0] + (f"={p.default!r}" if p.default is not p.empty else "")
                 for p in inspect.signature(fn).parameters.values()]
    assert "(" + ", ".join(described) + ")" == parameters


@pytest.mark.parametrize("axis, keepdims", [((2, 3), True), ((-1,), False), ((1, 3), True), ((0,), False)])
def test_a_float32_mean_is_numpys_mean_bit_for_bit(axis, keepdims):
    """A mean over a CNN's pooled axes, or any other, is NumPy's (its pairwise sums), to the last bit."""
    x = data((2, 30, 13, 13), np.float32, low=-3.0, high=3.0)
    result = run_op(lambda t: ops.mean(t, axis=axis, keepdims=keepdims), x)
    np.testing.assert_array_equal(result, np.mean(x, axis=axis, dtype=np.float32, keepdims=keepdims))
