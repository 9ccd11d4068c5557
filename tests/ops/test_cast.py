"""cast between dtypes, with NumPy's astype as the reference."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from helpers import run_op

SOURCES = {
    np.float32: np.array([-2.7, -0.5, 0.0, 0.5, 1.5, 3.9], np.float32),
    np.float16: np.array([-2.7, -0.5, 0.0, 0.5, 1.5, 3.9], np.float16),
    np.int32: np.array([-3, -1, 0, 1, 2, 1000], np.int32),
    np.uint8: np.array([0, 1, 2, 127, 200, 255], np.uint8),
    np.bool_: np.array([True, False, True, True, False, False]),
}
TARGETS = [popxl.float32, popxl.float16, popxl.int32, popxl.int8, popxl.uint32, popxl.bool]


@pytest.mark.parametrize("target", TARGETS, ids=lambda d: d.name)
@pytest.mark.parametrize("source", list(SOURCES), ids=lambda d: np.dtype(d).name)
def test_cast_matches_astype(source, target):
    x = SOURCES[source]
    if target.is_int and not target.is_signed and np.dtype(source).kind in "if":
        x = np.abs(x)  # negative values have no unsigned image; C leaves that case undefined
    result = run_op(lambda t: ops.cast(t, target), x)
    assert result.dtype == target.as_numpy()
    np.testing.assert_array_equal(result, x.astype(target.as_numpy()))


def test_float_to_int_truncates_toward_zero():
    x = np.array([-2.7, -0.5, 0.5, 2.7], np.float32)
    np.testing.assert_array_equal(run_op(lambda t: ops.cast(t, popxl.int32), x), [-2, 0, 0, 2])


def test_cast_names_its_output_after_input_and_type():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.zeros(2, np.float32), name="x")
        y = ops.cast(x, popxl.float16)
    assert y.name == "x_float16" and y.dtype is popxl.float16 and y.shape == (2,)


def test_cast_to_the_same_type_is_a_copy():
    result = run_op(lambda t: ops.relu_(ops.cast(t, popxl.float32)) + t, np.array([-1.0, 2.0], np.float32))
    np.testing.assert_array_equal(result, [-1.0, 4.0])


def test_cast_errors():
    x = np.zeros(2, np.float32)
    with pytest.raises(TypeError, match="cast: data_type must be a popxl dtype such as popxl.float16, got 'int32'"):
        run_op(lambda t: ops.cast(t, "int32"), x)
    with pytest.raises(TypeError, match=r"cast: float8_143 is not supported \(use ops.pow2scale_cast_to_fp8"):
        run_op(lambda t: ops.cast(t, popxl.float8_143), x)
    with pytest.raises(TypeError, match="cast: complex64 is not supported; expected bool, integer or float"):
        run_op(lambda t: ops.cast(t, popxl.complex64), x)
