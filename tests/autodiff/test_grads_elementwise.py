"""Gradients of the elementwise ops, activations, clip and the n-ary ops against finite differences,
over random shapes (with NumPy broadcasting for the binary ops) in float64."""
import numpy as np
import pytest
from hypothesis import given, settings

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff
from workbench.ops.registry import apply

from gradcheck import check_gradients
from strategies import SETTINGS, broadcast_pairs, seeds, shapes, values

# op, low, high: the domain the values are drawn from
UNARY = [
    (ops.abs, -2, 2), (ops.ceil, -2, 2), (ops.floor, -2, 2), (ops.sign, -2, 2), (ops.negate, -2, 2),
    (ops.sqrt, 0.2, 3), (ops.exp, -2, 2), (ops.log, 0.2, 3), (ops.log2, 0.2, 3), (ops.cos, -3, 3),
    (ops.sin, -3, 3), (ops.tanh, -2, 2), (ops.relu, -2, 2), (ops.gelu, -3, 3), (ops.geluerf, -3, 3),
    (ops.swish, -3, 3),
]


@pytest.mark.parametrize("op, low, high", UNARY, ids=[op.__name__ for op, _, _ in UNARY])
@settings(**SETTINGS)
@given(shape=shapes, seed=seeds)
def test_unary(op, low, high, shape, seed):
    check_gradients(op, values(seed, shape, low, high))


@settings(**SETTINGS)
@given(shape=shapes, seed=seeds)
def test_clip_passes_the_gradient_inside_the_bounds_only(shape, seed):
    x = values(seed, shape)
    grads = check_gradients(lambda t: ops.clip(t, -1.0, 0.5), x)
    np.testing.assert_array_equal(grads[0] == 0, (x < -1.0) | (x > 0.5))


@settings(**SETTINGS)
@given(shape=shapes, seed=seeds)
def test_the_relu_gradient_op_is_linear_in_the_gradient_and_flat_in_the_output(shape, seed):
    gradient, x = values(seed, shape), values(seed + 1, shape)
    grads = check_gradients(lambda g, t: apply("relu_grad", g, ops.relu(t)), gradient, x)
    np.testing.assert_array_equal(grads[1], np.zeros(shape))


def test_the_relu_gradient_is_one_op_that_multiplies_by_the_slope_of_the_output_as_the_ipu_does():
    ir = popxl.Ir()
    with ir.main_graph:
        forward = ir.create_graph(ops.relu, popxl.TensorSpec((4,), popxl.float32))
        assert [op.type for op in autodiff(forward).graph.ops] == ["relu_grad"]
        x = popxl.variable(np.array([1.5, -2.0, 0.0, 3.0], np.float32))
        gradient = popxl.variable(np.array([-1.0, -1.0, 2.0, np.inf], np.float32))
        result = apply("relu_grad", gradient, ops.relu(x))
        out = popxl.d2h_stream(result.shape, result.dtype)
        ops.host_store(out, result)
    with popxl.Session(ir, "ipu_model") as session:
        got = session.run()[out]
    np.testing.assert_array_equal(got, [-1.0, 0.0, 0.0, np.inf])
    np.testing.assert_array_equal(np.signbit(got), [True, True, False, False])  # -1 times 0 is -0


@settings(**SETTINGS)
@given(shape=shapes, seed=seeds)
def test_increment_mod(shape, seed):
    check_gradients(lambda t: ops.increment_mod(t, 0.3, 7.0), values(seed, shape, 0.1, 6))


# op, domain of lhs, domain of rhs
BINARY = [
    (ops.add, (-2, 2), (-2, 2)), (ops.sub, (-2, 2), (-2, 2)), (ops.mul, (-2, 2), (-2, 2)),
    (ops.div, (-2, 2), (0.3, 2)), (ops.pow, (0.3, 2), (-2, 2)),
]


@pytest.mark.parametrize("op, lhs_domain, rhs_domain", BINARY, ids=[op.__name__ for op, _, _ in BINARY])
@settings(**SETTINGS)
@given(pair=broadcast_pairs, seed=seeds)
def test_binary_with_broadcasting(op, lhs_domain, rhs_domain, pair, seed):
    lhs_shape, rhs_shape = pair.input_shapes
    check_gradients(op, values(seed, lhs_shape, *lhs_domain), values(seed + 1, rhs_shape, *rhs_domain))


@settings(**SETTINGS)
@given(pair=broadcast_pairs, seed=seeds)
def test_fmod_with_broadcasting(pair, seed):
    """Quotients are kept off whole numbers, where fmod jumps."""
    lhs_shape, rhs_shape = pair.input_shapes
    rhs = values(seed + 1, rhs_shape, 0.5, 2)
    quotient = np.floor(values(seed, lhs_shape, -3, 3)) + np.random.default_rng(seed).uniform(0.1, 0.9, lhs_shape)
    check_gradients(ops.fmod, quotient * np.max(rhs), rhs)


def test_pow_by_a_number():
    check_gradients(lambda t: t ** 3.0, np.array([0.5, -1.5, 2.5]))
    check_gradients(lambda t: 2.0 ** t, np.array([0.5, -1.5, 2.5]))


@settings(**SETTINGS)
@given(pair=broadcast_pairs, seed=seeds)
def test_maximum_of_broadcast_operands(pair, seed):
    a_shape, b_shape = pair.input_shapes
    check_gradients(ops.maximum, values(seed, a_shape), values(seed + 1, b_shape))


def test_maximum_of_one_and_three_operands():
    rng = np.random.default_rng(3)
    check_gradients(ops.maximum, rng.uniform(-1, 1, (2, 3)))
    check_gradients(ops.maximum, rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3,)), rng.uniform(-1, 1, (2, 1)))


@settings(**SETTINGS)
@given(pair=broadcast_pairs, seed=seeds)
def test_where_condition_gets_no_gradient(pair, seed):
    lhs_shape, rhs_shape = pair.input_shapes
    condition = np.random.default_rng(seed).random(lhs_shape) > 0.5
    grads = check_gradients(ops.where, condition, values(seed, lhs_shape), values(seed + 1, rhs_shape))
    assert set(grads) == {1, 2}


@settings(**SETTINGS)
@given(shape=shapes, seed=seeds)
def test_scaled_add_with_number_and_tensor_scales(shape, seed):
    x, y = values(seed, shape), values(seed + 1, shape)
    check_gradients(lambda a, b: ops.scaled_add(a, b, 0.5, -2.0), x, y)
    check_gradients(lambda a, b, s, t: ops.scaled_add(a, b, s, t), x, y, np.array(0.7), np.array(-1.3))
    check_gradients(lambda a, b, t: ops.scaled_add(a, b, 3.0, t), x, y, np.array(-1.3))


@settings(**SETTINGS)
@given(shape=shapes, seed=seeds)
def test_print_tensor_passes_the_gradient_through(shape, seed):
    check_gradients(lambda t: ops.print_tensor(t, print_self=False) ** 2,
                    np.random.default_rng(seed).standard_normal(shape))
