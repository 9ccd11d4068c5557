"""Activations and clip, against their formulas written directly in NumPy."""
import math

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from helpers import run_op, run_op_on_variables
from workbench.ops.special import erf, erfc

X = np.linspace(-6.0, 6.0, 49)
TOLERANCE = {np.float16: dict(rtol=2e-3, atol=1e-3), np.float32: dict(rtol=1e-6, atol=1e-6)}


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_exact(x):
    return np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.ravel()]).reshape(x.shape)


def swish(x):
    return x / (1 + np.exp(-x))


ACTIVATIONS = [(ops.relu, lambda x: np.maximum(x, 0)), (ops.gelu, gelu_tanh), (ops.geluerf, gelu_exact),
               (ops.swish, swish)]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("fn, reference", ACTIVATIONS)
def test_activation_matches_its_formula(fn, reference, dtype):
    x = X.astype(dtype)
    result = run_op(fn, x)
    assert result.dtype == dtype
    np.testing.assert_allclose(result, reference(x.astype(np.float64)), **TOLERANCE[dtype])


@pytest.mark.parametrize("fn, reference", [(ops.relu_, lambda x: np.maximum(x, 0)), (ops.gelu_, gelu_tanh),
                                           (ops.geluerf_, gelu_exact), (ops.swish_, swish)])
def test_in_place_activation_overwrites_its_input(fn, reference):
    x = X.astype(np.float32)
    result, (updated,) = run_op_on_variables(fn, x)
    np.testing.assert_allclose(result, reference(x.astype(np.float64)), **TOLERANCE[np.float32])
    np.testing.assert_array_equal(updated, result)


def test_geluerf_keeps_relative_precision_far_in_the_negative_tail():
    x = np.array([-8.0, -10.0, -12.0])
    np.testing.assert_allclose(run_op(ops.geluerf, x), gelu_exact(x), rtol=1e-13)


def test_swish_saturates_without_overflow():
    x = np.array([-1e4, -100.0, 100.0, 1e4], np.float32)
    np.testing.assert_array_equal(run_op(ops.swish, x), [0.0, -0.0, 100.0, 1e4])


@pytest.mark.parametrize("fn", [ops.gelu, ops.geluerf, ops.swish, ops.gelu_, ops.swish_])
def test_activations_of_integers_are_built_as_in_popxl_and_refused_when_the_session_compiles(fn):
    ir = popxl.Ir()
    with ir.main_graph:
        out = fn(popxl.variable(np.array([1, 2], np.int32)))
    assert out.spec == popxl.TensorSpec((2,), popxl.int32)
    with pytest.raises(TypeError, match=f"{fn.__name__}: expected a float tensor, got int32"):
        popxl.Session(ir, "ipu_model")


# ----- erf -----
def test_erf_and_erfc_match_the_standard_library():
    x = np.concatenate([np.linspace(-7, 7, 20001), [0.0, 1e-300, -1e-20, 2.5, -2.5, 27.0]])
    expected_erf = np.array([math.erf(v) for v in x])
    expected_erfc = np.array([math.erfc(v) for v in x])
    nonzero = expected_erf != 0
    assert np.max(np.abs(erf(x) - expected_erf)[nonzero] / np.abs(expected_erf[nonzero])) < 1e-13
    # erfc below 2.5 is 1 - erf, which gives up a few digits where erf nears 1
    assert np.max(np.abs(erfc(x) - expected_erfc) / expected_erfc) < 1e-11


def test_erf_limits_and_nan():
    x = np.array([np.inf, -np.inf, np.nan, 0.0])
    np.testing.assert_array_equal(erf(x), [1.0, -1.0, np.nan, 0.0])
    np.testing.assert_array_equal(erfc(x), [0.0, 2.0, np.nan, 1.0])


# ----- clip -----
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_clip_limits_floats_and_keeps_nan(dtype):
    x = np.array([-5.0, -1.0, 0.5, 4.0, np.nan], dtype)
    result = run_op(lambda t: ops.clip(t, -1.5, 2.0), x)
    assert result.dtype == dtype
    np.testing.assert_array_equal(result, np.clip(x, dtype(-1.5), dtype(2.0)))


def test_clip_defaults_leave_values_unchanged_and_one_bound_works():
    x = np.array([-3.0, 0.0, 7.0], np.float32)
    unchanged, floored = run_op(lambda t: (ops.clip(t), ops.clip(t, min=0.0)), x)
    np.testing.assert_array_equal(unchanged, x)
    np.testing.assert_array_equal(floored, [0.0, 0.0, 7.0])


def test_clip_of_integers_rounds_the_bounds_inward():
    x = np.array([-5, -1, 0, 2, 3, 9], np.int32)
    result = run_op(lambda t: ops.clip(t, -1.5, 2.5), x)
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, [-1, -1, 0, 2, 2, 2])


def test_clamp_is_clip():
    assert ops.clamp is ops.clip


def test_clip_bounds_must_be_numbers():
    with pytest.raises(TypeError, match="clip: max must be a number, got None"):
        run_op(lambda t: ops.clip(t, 0.0, None), np.zeros(2, np.float32))
