"""relu compares each row of its flattened input with one short row of zeros (``activations.zero_rows``):
the same values as max(t, 0) whatever the size divides into, in the op's own kernel and in the kernel
that writes over a dying input (``ops/overwriting.py``)."""
import math

import numpy as np
import pytest

import popxl
from workbench.ops import activations
from workbench.ops.overwriting import OVERWRITING

RNG = np.random.default_rng(2)
SHAPES = {"small": (3, 5), "many rows": (1, 64, 56, 56), "one long row": (8191 * 2,),
          "no short divisor": (2, 8209)}  # 8209 is prime: zeros of the whole size


def relu_op(shape):
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.zeros(shape, np.float32))
        return popxl.ops.relu(x).producer


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_rows_of_zeros_cover_the_tensor(shape):
    rows, zeros = activations.zero_rows(shape, np.dtype(np.float32))
    assert rows[0] * rows[1] == math.prod(shape) and zeros.shape == (rows[1],) and not zeros.any()
    assert rows[1] <= activations.ZERO_ROW_LIMIT or rows[0] == 1


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_both_relu_kernels_give_max_of_t_and_zero(shape):
    op = relu_op(shape)
    x = RNG.standard_normal(shape).astype(np.float32)
    expected = np.maximum(x, 0)
    np.testing.assert_array_equal(activations._relu_kernel(op)(x), expected)
    dying = x.copy()
    result = OVERWRITING["relu"](op, None)(dying)
    assert result is dying
    np.testing.assert_array_equal(dying, expected)


def test_the_overwriting_relu_writes_a_strided_input_in_place():
    op = relu_op((4, 6))
    base = RNG.standard_normal((4, 12)).astype(np.float32)
    strided = base[:, ::2]
    expected = np.maximum(strided, 0)
    assert OVERWRITING["relu"](op, None)(strided) is strided
    np.testing.assert_array_equal(base[:, ::2], expected)
