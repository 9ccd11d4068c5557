"""Gradients of the reductions, cumsum, topk and lamb_square against finite differences, over random
shapes, axes and keepdims in float64."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popxl
import popxl.ops as ops
from gradcheck import check_gradients
from strategies import SETTINGS, nonscalar_shapes, seeds, shapes, values

# reduction, domain of the values
REDUCTIONS = [
    (ops.sum, -2, 2), (ops.mean, -2, 2), (ops.median, -2, 2), (ops.max, -2, 2), (ops.min, -2, 2),
    (ops.prod, 0.5, 1.5), (ops.l1, -2, 2), (ops.l2, -2, 2), (ops.logsum, 0.2, 2), (ops.logsumexp, -2, 2),
    (ops.sumsquare, -2, 2),
]


@st.composite
def shapes_and_axes(draw):
    """A shape and an axis argument: None, one axis (maybe negative) or a tuple of distinct axes."""
    shape = draw(shapes)
    rank = len(shape)
    if rank == 0:
        return shape, None
    axis = draw(st.one_of(st.none(), st.integers(-rank, rank - 1),
                          st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True).map(tuple)))
    return shape, axis


@pytest.mark.parametrize("op, low, high", REDUCTIONS, ids=[op.__name__ for op, _, _ in REDUCTIONS])
@settings(**SETTINGS)
@given(shape_and_axis=shapes_and_axes(), keepdims=st.booleans(), seed=seeds)
def test_reduction(op, low, high, shape_and_axis, keepdims, seed):
    shape, axis = shape_and_axis
    check_gradients(lambda t: op(t, axis, keepdims), values(seed, shape, low, high))


def test_max_gives_the_whole_gradient_to_the_largest_element():
    x = np.array([[0.5, 2.0, -1.0], [3.0, 0.0, 1.0]])
    grads = check_gradients(lambda t: ops.max(t, 1), x)
    np.testing.assert_array_equal(grads[0] != 0, x == x.max(axis=1, keepdims=True))


def test_the_gradient_of_a_mean_over_no_elements_is_empty():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.zeros((0, 3), np.float32), name="x")
    graph = ir.create_graph(lambda t: ops.mean(t, 0), x)
    grad_graph = popxl.transforms.autodiff(graph)
    assert [tuple(t.shape) for t in grad_graph.graph.outputs] == [(0, 3)]


@settings(**SETTINGS)
@given(shape=nonscalar_shapes, data=st.data(), seed=seeds)
def test_cumsum(shape, data, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_gradients(lambda t: ops.cumsum(t, dim), values(seed, shape))


@settings(**SETTINGS)
@given(shape=nonscalar_shapes, data=st.data(), largest=st.booleans(), seed=seeds)
def test_topk_values(shape, data, largest, seed):
    axis = data.draw(st.integers(0, len(shape) - 1))
    k = data.draw(st.integers(1, shape[axis]))
    check_gradients(lambda t: ops.topk(t, k, axis, largest, True)[0], values(seed, shape))


def test_topk_indices_carry_no_gradient():
    x = np.array([[0.3, -1.2, 2.0], [1.0, 0.1, -0.5]])
    grads = check_gradients(lambda t: ops.topk(t, 2, 1, True, True), x)
    expected = x >= np.sort(x, axis=1)[:, 1:2]
    np.testing.assert_array_equal(grads[0] != 0, expected)


@settings(**SETTINGS)
@given(shape=shapes, seed=seeds)
def test_lamb_square_of_float32_values(shape, seed):
    """The result is float32 whatever the input: finite differences need a wider step."""
    check_gradients(lambda t: ops.lamb_square(ops.cast(t, popxl.float32)), values(seed, shape),
                    delta=1e-3, rtol=1e-3, atol=1e-3)
    check_gradients(ops.lamb_square, values(seed, shape), delta=1e-3, rtol=1e-3, atol=1e-3)
