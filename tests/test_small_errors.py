"""Small mistakes get a clear error naming what was wrong, and leave everything as it was."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.runtime.replicas import ReplicaExecutionError


def test_a_name_that_is_not_a_string_is_refused_before_anything_is_made():
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(TypeError, match=r"^a tensor's name must be a str \(or None for a default name\), "
                                            r"not int 5$"):
            popxl.variable(np.ones(2, np.float32), name=5)
        with pytest.raises(TypeError, match="not bytes b'c'"):
            popxl.constant(np.ones(2, np.float32), name=b"c")
        assert ir.main_graph.tensors == () and popxl.variable(np.ones(2, np.float32)).name == "t"


def test_writing_a_complex_number_to_a_variable_is_refused_and_the_weight_is_kept():
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.array([1.0, 2.0], np.float32), name="w")
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(TypeError, match=r"^data for variable 'w' is \(1\+2j\), a complex; a float32 variable "
                                            "takes real numbers$"):
            session.write_variable_data(w, 1 + 2j)
        np.testing.assert_array_equal(session.get_tensor_data(w), [1.0, 2.0])


def test_integer_division_truncates_toward_zero_and_refuses_a_zero_divisor():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.array([7, -7, 9, 0], np.int32), name="a")
        b = popxl.variable(np.array([2, 2, -4, 3], np.int32), name="b")
        quotient = a / b
        out = popxl.d2h_stream(quotient.shape, quotient.dtype, name="q")
        ops.host_store(out, quotient)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run({})[out], np.trunc(np.array([7, -7, 9, 0]) / [2, 2, -4, 3]))
        session.write_variable_data(b, np.array([2, 0, 0, 3], np.int32))
        with pytest.raises(ReplicaExecutionError, match=r"op div\S* \(div\) .*ZeroDivisionError: integer division "
                                                        "by zero: 2 of the 4 divisor elements are 0"):
            session.run({})
