"""matmul of two dtypes: built as popxl builds it (the output takes the left operand's dtype), refused when
a Session compiles it."""
import numpy as np
import pytest

import popxl


def mixed_product_ir():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((2, 3), np.float32), name="x")
        w = popxl.variable(np.ones((3, 4), np.float16), name="w")
        y = x @ w
    return ir, y


def test_a_product_of_two_dtypes_is_built_with_the_left_operands_dtype():
    _, y = mixed_product_ir()
    assert (y.dtype, y.shape) == (popxl.float32, (2, 4))


def test_a_product_of_two_dtypes_is_refused_when_compiled_naming_both():
    ir, _ = mixed_product_ir()
    with pytest.raises(TypeError, match="matmul: inputs must have the same dtype, got float32, float16"):
        popxl.Session(ir, "ipu_model")
