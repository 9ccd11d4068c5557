"""matmul's partials type: float16 or float32, given or taken from the Ir's PopART session option."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops


def product_of(partials_option=None, partials_type=None):
    ir = popxl.Ir()
    if partials_option is not None:
        ir._pb_ir.getSessionOptions().partialsTypeMatMuls = partials_option
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with ir.main_graph:
        x = popxl.variable(a, name="x")
        y = ops.matmul(x, x.T, partials_type=partials_type)
        out = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(out, y)
    with popxl.Session(ir, "ipu_model") as session:
        return session.run()[out], a @ a.T


@pytest.mark.parametrize("option", ["", "float", "HALF"])
def test_valid_partials_options_give_numpys_product(option):
    result, expected = product_of(partials_option=option)
    np.testing.assert_array_equal(result, expected)


def test_a_partials_dtype_gives_numpys_product():
    result, expected = product_of(partials_type=popxl.float16)
    np.testing.assert_array_equal(result, expected)


def test_an_unknown_partials_option_is_refused_when_the_matmul_is_made():
    with pytest.raises(ValueError, match="partialsTypeMatMuls 'double' is not valid, must be 'float' or 'half'"):
        product_of(partials_option="double")


def test_a_partials_dtype_other_than_float16_or_float32_is_refused():
    with pytest.raises(ValueError, match="partials_type int32 is not valid, must be float16 or float32"):
        product_of(partials_type=popxl.int32)
