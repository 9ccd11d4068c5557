"""maximum of N tensors, where and scaled_add, against NumPy."""
import inspect

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from helpers import run_op, run_op_on_variables

RNG = np.random.default_rng(1)


def floats(shape, dtype=np.float32):
    return RNG.uniform(-3.0, 3.0, shape).astype(dtype)


# ----- maximum -----
@pytest.mark.parametrize("shapes", [[(2, 3)], [(2, 3), (3,)], [(2, 1), (1, 3), (3,)], [(4,), (4,), (4,), (4,)]])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32])
def test_maximum_of_n_tensors_broadcasts(shapes, dtype):
    arrays = [floats(s).astype(dtype) for s in shapes]
    result = run_op(ops.maximum, *arrays)
    expected = arrays[0]
    for array in arrays[1:]:
        expected = np.maximum(expected, array)
    assert result.dtype == dtype
    np.testing.assert_array_equal(result, expected)


def test_maximum_of_one_tensor_is_a_copy_not_an_alias():
    x = np.array([1.0, -2.0], np.float32)
    result, (updated,) = run_op_on_variables(lambda t: ops.relu_(ops.maximum(t)), x)
    np.testing.assert_array_equal(result, [1.0, 0.0])
    np.testing.assert_array_equal(updated, x)


def test_maximum_errors():
    with pytest.raises(ValueError, match="maximum needs at least one tensor"):
        ops.maximum()
    with pytest.raises(TypeError, match="maximum: inputs must have the same dtype, got float32, float32, int32"):
        run_op(ops.maximum, floats(2), floats(2), np.zeros(2, np.int32))


# ----- where -----
@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.bool_])
def test_where_selects_and_broadcasts(dtype):
    condition = np.array([[True], [False]])
    lhs = np.array([1, 0, 1], dtype)
    rhs = np.array([[0, 1, 1], [1, 1, 0]], dtype)
    result = run_op(ops.where, condition, lhs, rhs)
    assert result.dtype == dtype
    np.testing.assert_array_equal(result, np.where(condition, lhs, rhs))


def test_where_casts_a_non_bool_condition_to_bool():
    condition, lhs, rhs = np.array([0.0, 2.5, -1.0], np.float32), floats(3), floats(3)
    np.testing.assert_array_equal(run_op(ops.where, condition, lhs, rhs), np.where(condition != 0, lhs, rhs))


def test_where_errors():
    with pytest.raises(TypeError, match="where: inputs must have the same dtype"):
        run_op(ops.where, np.array([True]), floats(1), np.zeros(1, np.int32))
    with pytest.raises(ValueError, match=r"where: shapes \(2,\) and \(3,\) and \(3,\) cannot be broadcast"):
        run_op(ops.where, np.array([True, False]), floats(3), floats(3))


# ----- scaled_add -----
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_scaled_add_with_number_scales(dtype):
    x, y = floats((2, 3), dtype), floats((2, 3), dtype)
    plain, scaled = run_op(lambda a, b: (ops.scaled_add(a, b), ops.scaled_add(a, b, 0.5, -2.0)), x, y)
    assert plain.dtype == scaled.dtype == dtype
    np.testing.assert_allclose(plain, x + y, rtol=1e-3)
    np.testing.assert_allclose(scaled, 0.5 * x - 2.0 * y, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("a_is_tensor, b_is_tensor", [(True, False), (False, True), (True, True)])
def test_scaled_add_with_tensor_scales(a_is_tensor, b_is_tensor):
    x, y = floats((3,)), floats((3,))
    a, b = np.float32(1.5), np.float32(-0.25)

    def fn(tx, ty, ta, tb):
        return ops.scaled_add(tx, ty, ta if a_is_tensor else float(a), tb if b_is_tensor else float(b))

    np.testing.assert_allclose(run_op(fn, x, y, a, b), a * x + b * y, rtol=1e-6)


def test_scaled_add_mixes_dtypes_and_keeps_x_dtype():
    x = np.array([1.0, 2.0], np.float16)
    y = np.array([0.25, 0.5], np.float32)
    result = run_op(lambda a, b: ops.scaled_add(a, b, 2.0, 4.0), x, y)
    assert result.dtype == np.float16
    np.testing.assert_array_equal(result, [3.0, 6.0])


def test_scaled_add_of_integers_truncates():
    x, y = np.array([3, -3], np.int32), np.array([1, 1], np.int32)
    np.testing.assert_array_equal(run_op(lambda a, b: ops.scaled_add(a, b, 0.5, 1.0), x, y), [2, -0])


def test_scaled_add_in_place_updates_x():
    x, y = floats((2, 2)), floats((2, 2))
    result, (updated_x, updated_y) = run_op_on_variables(lambda a, b: ops.scaled_add_(a, b, 0.9, 0.1), x, y)
    np.testing.assert_allclose(result, 0.9 * x + 0.1 * y, rtol=1e-6)
    np.testing.assert_array_equal(updated_x, result)
    np.testing.assert_array_equal(updated_y, y)


def test_scaled_add_errors():
    with pytest.raises(ValueError, match=r"scaled_add: X and Y must have the same shape \(no broadcasting\)"):
        run_op(ops.scaled_add, floats((2, 3)), floats((3,)))
    with pytest.raises(ValueError, match=r"scaled_add_: the scale a must be a scalar tensor \(shape \(\)\)"):
        run_op(lambda x, y, a: ops.scaled_add_(x, y, a), floats(2), floats(2), floats(1))
    with pytest.raises(TypeError, match="scaled_add: b must be a number or a scalar Tensor, got '2'"):
        run_op(lambda x, y: ops.scaled_add(x, y, 1.0, "2"), floats(2), floats(2))
    with pytest.raises(TypeError, match="scaled_add: expected a number tensor, got bool"):
        run_op(ops.scaled_add, np.array([True]), np.array([True]))


def test_a_failed_op_leaves_the_graph_unchanged():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.zeros(2, np.float32))
        y = popxl.variable(np.zeros(3, np.float32))
        with pytest.raises(ValueError):
            ops.scaled_add(x, y)
        assert ir.main_graph.ops == () and set(ir.main_graph.tensors) == {x, y}


@pytest.mark.parametrize("fn, parameters", [
    (ops.maximum, "(*ts)"), (ops.where, "(condition, lhs, rhs)"), (ops.scaled_add, "(X, Y, a=1.0, b=1.0)"),
    (ops.scaled_add_, "(X, Y, a=1.0, b=1.0)"),
])
def test_signatures(fn, parameters):
    described = [str(p).split(":")[0] + (f"={p.default!r}" if p.default is not p.empty else "")
                 for p in inspect.signature(fn).parameters.values()]
    assert "(" + ", ".join(described) + ")" == parameters
