"""Gradients of matmul (matrices, batches broadcast against each other, vectors on either side) and
of cast, against finite differences in float64."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popxl
import popxl.ops as ops
from gradcheck import check_gradients
from strategies import SETTINGS, seeds, shapes, values


@st.composite
def matmul_shapes(draw):
    """Operand shapes NumPy's matmul accepts: 1-D vectors or matrices with broadcast batch axes."""
    m, k, n = (draw(st.integers(1, 4)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    lhs_batch = [draw(st.sampled_from([d, 1])) for d in batch]
    rhs_batch = [draw(st.sampled_from([d, 1])) for d in batch][draw(st.integers(0, len(batch))):]
    lhs = (k,) if draw(st.booleans()) else (*lhs_batch, m, k)
    rhs = (k,) if draw(st.booleans()) else (*rhs_batch, k, n)
    return lhs, rhs


@settings(**SETTINGS)
@given(pair=matmul_shapes(), seed=seeds)
def test_matmul(pair, seed):
    lhs, rhs = pair
    check_gradients(ops.matmul, values(seed, lhs), values(seed + 1, rhs))


@pytest.mark.parametrize("lhs, rhs", [((3,), (3,)), ((3,), (2, 3, 4)), ((5, 2, 3), (3,)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul_of_vectors_and_batches(lhs, rhs):
    check_gradients(ops.matmul, values(1, lhs), values(2, rhs))


def test_matmul_with_a_wider_output_type():
    x, w = values(1, (2, 3)), values(2, (3, 4))
    check_gradients(lambda a, b: ops.matmul(ops.cast(a, popxl.float32), ops.cast(b, popxl.float32),
                                            output_type=popxl.float64), x, w, delta=1e-3, rtol=1e-3, atol=1e-3)


@settings(**SETTINGS)
@given(shape=shapes, seed=seeds)
def test_cast_to_float32_and_back(shape, seed):
    check_gradients(lambda t: ops.cast(ops.cast(t, popxl.float32), popxl.float64) * t, values(seed, shape),
                    delta=1e-3, rtol=1e-3, atol=1e-3)


def test_cast_from_an_integer_gives_it_no_gradient():
    grads = check_gradients(lambda t, i: t * ops.cast(i, popxl.float64), values(1, (3,)), np.array([1, 2, 3], np.int32))
    assert set(grads) == {0}
