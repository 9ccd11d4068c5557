"""Elementwise unary and binary ops, checked against the NumPy expression they stand for."""
import inspect

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.ops.elementwise import greater_equal
from helpers import run_op, run_op_on_variables

RNG = np.random.default_rng(0)
TOLERANCE = {np.float16: dict(rtol=2e-3, atol=2e-3), np.float32: dict(rtol=1e-6, atol=1e-6)}


def floats(shape, dtype=np.float32, low=-3.0, high=3.0):
    return RNG.uniform(low, high, shape).astype(dtype)


# ----- unary math -----
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("fn, reference, low", [
    (ops.abs, np.abs, -3), (ops.ceil, np.ceil, -3), (ops.floor, np.floor, -3), (ops.sign, np.sign, -3),
    (ops.negate, np.negative, -3), (ops.sqrt, np.sqrt, 0), (ops.exp, np.exp, -3), (ops.log, np.log, 0.1),
    (ops.log2, np.log2, 0.1), (ops.cos, np.cos, -3), (ops.sin, np.sin, -3), (ops.tanh, np.tanh, -3),
])
def test_unary_float_ops_match_numpy(fn, reference, low, dtype):
    x = floats((2, 3), dtype, low=low)
    result = run_op(fn, x)
    assert result.dtype == dtype
    np.testing.assert_allclose(result, reference(x), **TOLERANCE[dtype])


@pytest.mark.parametrize("fn, reference", [
    (ops.abs, np.abs), (ops.negate, np.negative), (ops.sign, np.sign), (ops.relu, lambda a: np.maximum(a, 0)),
])
def test_unary_integer_ops_keep_the_integer_type(fn, reference):
    x = np.array([[-7, 0, 3], [2, -1, 9]], np.int32)
    result = run_op(fn, x)
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, reference(x))


def test_sign_of_nan_is_zero_and_ceil_floor_keep_nan():
    x = np.array([np.nan, -0.5, 0.0, 2.5, -np.inf], np.float32)
    np.testing.assert_array_equal(run_op(ops.sign, x), [0, -1, 0, 1, -1])
    np.testing.assert_array_equal(run_op(ops.ceil, x), np.ceil(x))
    np.testing.assert_array_equal(run_op(ops.floor, x), np.floor(x))


def test_predicates_return_bool():
    x = np.array([np.nan, np.inf, -np.inf, 1.0, 0.0], np.float16)
    isnan, isinf, isfinite = run_op(lambda t: (ops.isnan(t), ops.isinf(t), ops.isfinite(t)), x)
    assert isnan.dtype == isinf.dtype == isfinite.dtype == np.bool_
    np.testing.assert_array_equal(isnan, np.isnan(x))
    np.testing.assert_array_equal(isinf, np.isinf(x))
    np.testing.assert_array_equal(isfinite, np.isfinite(x))


def test_logical_not():
    x = np.array([True, False, True])
    np.testing.assert_array_equal(run_op(ops.logical_not, x), ~x)


@pytest.mark.parametrize("fn", [ops.sqrt, ops.exp, ops.log, ops.log2, ops.sin, ops.cos, ops.tanh,
                                ops.ceil, ops.floor])
def test_math_ops_refuse_integer_tensors(fn):
    with pytest.raises(TypeError, match=f"{fn.__name__}: expected a float tensor, got int32"):
        run_op(fn, np.array([1, 2], np.int32))


def test_logical_not_casts_numbers_to_bool_and_abs_refuses_bool():
    np.testing.assert_array_equal(run_op(ops.logical_not, np.array([1.5, 0.0], np.float32)), [False, True])
    with pytest.raises(TypeError, match="abs: expected a number tensor, got bool"):
        run_op(ops.abs, np.array([True]))


def test_exp_in_place_writes_into_its_input():
    x = floats((4,))
    (result, (updated,)) = run_op_on_variables(ops.exp_, x)
    np.testing.assert_allclose(result, np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(updated, np.exp(x), rtol=1e-6)


# ----- increment_mod -----
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32, np.uint32])
def test_increment_mod_is_fmod_of_the_sum(dtype):
    x = np.array([5, 0, 10, 1, 2], dtype)
    result = run_op(lambda t: ops.increment_mod(t, 3, 4), x)
    assert result.dtype == dtype
    np.testing.assert_array_equal(result, np.fmod(x + dtype(3), dtype(4)))


def test_increment_mod_keeps_the_sign_of_the_dividend():
    x = np.array([-5.0, -1.0, 6.5], np.float32)
    np.testing.assert_allclose(run_op(lambda t: ops.increment_mod(t, 0.5, 2.0), x), np.fmod(x + 0.5, 2.0))


def test_increment_mod_in_place():
    x = np.array([0, 1, 2], np.int32)
    result, (updated,) = run_op_on_variables(lambda t: ops.increment_mod_(t, 1, 3), x)
    np.testing.assert_array_equal(result, [1, 2, 0])
    np.testing.assert_array_equal(updated, [1, 2, 0])


def test_increment_mod_bad_arguments():
    with pytest.raises(ValueError, match="increment_mod: modulus must not be zero"):
        run_op(lambda t: ops.increment_mod(t, 1, 0), np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="increment_mod_: increment must be a number, got '1'"):
        run_op(lambda t: ops.increment_mod_(t, "1", 2), np.zeros(2, np.float32))


# ----- binary arithmetic -----
BROADCAST_SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2))]


@pytest.mark.parametrize("lhs_shape, rhs_shape", BROADCAST_SHAPES)
@pytest.mark.parametrize("fn, reference", [(ops.add, np.add), (ops.sub, np.subtract), (ops.mul, np.multiply),
                                           (ops.div, np.divide), (ops.fmod, np.fmod)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_binary_float_ops_broadcast_like_numpy(fn, reference, lhs_shape, rhs_shape, dtype):
    a = floats(lhs_shape, dtype)
    b = floats(rhs_shape, dtype, low=0.5, high=2.0)
    result = run_op(fn, a, b)
    assert result.dtype == dtype
    np.testing.assert_allclose(result, reference(a, b), **TOLERANCE[dtype])


@pytest.mark.parametrize("fn, reference", [
    (ops.add, np.add), (ops.sub, np.subtract), (ops.mul, np.multiply), (ops.fmod, np.fmod),
    (ops.div, lambda a, b: np.trunc(a / b).astype(a.dtype)),
])
def test_binary_integer_ops_truncate_toward_zero(fn, reference):
    a = np.array([[7, -7, 6], [-9, 1, 0]], np.int32)
    b = np.array([2, 2, -4], np.int32)
    result = run_op(fn, a, b)
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, reference(a, b))


def test_add_in_place_broadcasts_rhs_into_lhs():
    a, b = floats((2, 3)), floats((3,))
    result, (updated, _) = run_op_on_variables(ops.add_, a, b)
    np.testing.assert_allclose(result, a + b)
    np.testing.assert_allclose(updated, a + b)


def test_add_in_place_cannot_grow_its_target():
    with pytest.raises(ValueError, match=r"add_: the result shape \(2, 3\) differs from the shape \(3,\)"):
        run_op(ops.add_, floats((3,)), floats((2, 3)))
    with pytest.raises(TypeError, match="add_: inputs must have the same dtype, got float32, float16"):
        run_op(ops.add_, floats((3,)), floats((3,), np.float16))


@pytest.mark.parametrize("e", [2, 0.5, -1.0])
def test_pow_with_a_number_exponent(e):
    x = floats((2, 3), low=0.5, high=2.0)
    np.testing.assert_allclose(run_op(lambda t: ops.pow(t, e), x), np.power(x, np.float32(e)), rtol=1e-6)


def test_pow_with_a_tensor_exponent_broadcasts():
    x, e = floats((2, 3), low=0.5, high=2.0), floats((3,))
    np.testing.assert_allclose(run_op(ops.pow, x, e), np.power(x, e), rtol=1e-6)


def test_pow_of_integers_truncates_negative_powers():
    x = np.array([2, -3, 1, -1], np.int32)
    e = np.array([3, 2, -2, -1], np.int32)
    np.testing.assert_array_equal(run_op(ops.pow, x, e), [8, 9, 1, -1])
    np.testing.assert_array_equal(run_op(ops.pow, np.array([2, 4], np.int32), np.array([-1, -2], np.int32)),
                                  [0, 0])


def test_binary_op_errors():
    with pytest.raises(ValueError, match=r"add: shapes \(2, 3\) and \(2,\) cannot be broadcast together"):
        run_op(ops.add, floats((2, 3)), floats((2,)))
    with pytest.raises(TypeError, match="mul: inputs must have the same dtype, got float32, float16"):
        run_op(ops.mul, floats((2,)), floats((2,), np.float16))
    with pytest.raises(TypeError, match="fmod: expected a number tensor, got bool"):
        run_op(ops.fmod, np.array([True]), np.array([True]))


def test_pow_refuses_bool_without_adding_a_constant():
    ir = popxl.Ir()
    with ir.main_graph:
        flag = popxl.variable(np.array([True, False]))
        with pytest.raises(TypeError, match="pow: expected a number tensor, got bool"):
            ops.pow(flag, 2)
    assert ir.main_graph.constants == () and ir.main_graph.ops == ()


# ----- comparison and logic -----
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32])
def test_comparisons_return_bool(dtype):
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype)
    b = np.array([3, 2, 1], dtype)
    eq, gt, ge = run_op(lambda x, y: (ops.equal(x, y), ops.greater(x, y), greater_equal(x, y)), a, b)
    assert eq.dtype == gt.dtype == ge.dtype == np.bool_
    np.testing.assert_array_equal(eq, a == b)
    np.testing.assert_array_equal(gt, a > b)
    np.testing.assert_array_equal(ge, a >= b)


def test_equal_compares_bools():
    a, b = np.array([True, False, True]), np.array([True, True, False])
    np.testing.assert_array_equal(run_op(ops.equal, a, b), a == b)


def test_logical_and_or_broadcast():
    a = np.array([[True], [False]])
    b = np.array([True, False, True])
    both, either = run_op(lambda x, y: (ops.logical_and(x, y), ops.logical_or(x, y)), a, b)
    np.testing.assert_array_equal(both, a & b)
    np.testing.assert_array_equal(either, a | b)


def test_logical_ops_cast_non_bool_inputs_to_bool():
    a, b = np.array([2, 0, 0], np.int32), np.array([-1.0, 0.5, 0.0], np.float32)
    both, either = run_op(lambda x, y: (ops.logical_and(x, y), ops.logical_or(x, y)), a, b)
    np.testing.assert_array_equal(both, [True, False, False])
    np.testing.assert_array_equal(either, [True, True, False])


# ----- Tensor operators -----
def test_remainder_and_power_operators():
    x = np.array([-7.5, 2.0, 5.0], np.float32)
    mod, rmod, power, rpower = run_op(lambda t: (t % 2, 7 % t, t ** 2, 2 ** t), x)
    np.testing.assert_allclose(mod, np.fmod(x, 2))
    np.testing.assert_allclose(rmod, np.fmod(7, x))
    np.testing.assert_allclose(power, x ** 2)
    np.testing.assert_allclose(rpower, 2.0 ** x)


def test_logical_operators():
    a, b = np.array([True, True, False]), np.array([True, False, False])
    both, either, negated, with_python = run_op(lambda x, y: (x & y, x | y, ~x, True & y), a, b)
    np.testing.assert_array_equal(both, a & b)
    np.testing.assert_array_equal(either, a | b)
    np.testing.assert_array_equal(negated, ~a)
    np.testing.assert_array_equal(with_python, b)


def test_ordering_operators():
    a = np.array([1, 2, 3], np.int32)
    gt, lt, ge, le = run_op(lambda x: (x > 2, x < 2, x >= 2, x <= 2), a)
    np.testing.assert_array_equal(gt, a > 2)
    np.testing.assert_array_equal(lt, a < 2)
    np.testing.assert_array_equal(ge, a >= 2)
    np.testing.assert_array_equal(le, a <= 2)


def test_abs_builtin():
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    np.testing.assert_array_equal(run_op(abs, x), np.abs(x))


def test_invert_of_a_number_tensor_is_the_not_of_its_truth():
    np.testing.assert_array_equal(run_op(lambda t: ~t, np.array([0.0, 3.0], np.float32)), [True, False])


# ----- signatures as popxl has them -----
@pytest.mark.parametrize("fn, parameters", [
    (ops.add, "(lhs, rhs)"), (ops.greater, "(input, other)"), (ops.pow, "(t, e)"), (ops.abs, "(t)"),
    (ops.exp_, "(t)"), (ops.increment_mod, "(t, increment, modulus)"), (ops.logical_or, "(lhs, rhs)"),
])
def test_signatures(fn, parameters):
    names = "(" + ", ".join(inspect.signature(fn).parameters) + ")"
    assert names == parameters


def test_floor_and_log2_are_ops_but_greater_equal_is_not():
    assert callable(ops.floor) and callable(ops.log2)
    assert not hasattr(ops, "greater_equal")


def _op_types(fn, x):
    ir = popxl.Ir()
    with ir.main_graph:
        result = fn(popxl.variable(x, name="x"))
    return [op.type for op in ir.main_graph.ops], result


def test_log2_is_log_over_log_two_as_in_popxl():
    x = floats((3, 4), low=0.1, high=50.0)
    types, _ = _op_types(ops.log2, x)
    assert types == ["log", "log", "div"]
    np.testing.assert_allclose(run_op(ops.log2, x), np.log2(x), rtol=1e-6)


def test_isfinite_is_not_nan_or_inf_as_in_popxl():
    x = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    types, result = _op_types(ops.isfinite, x)
    assert types == ["isnan", "isinf", "logical_or", "logical_not", "identity"]
    assert result.name == "isfinite_out"
    np.testing.assert_array_equal(run_op(ops.isfinite, x), [False, False, False, True])
