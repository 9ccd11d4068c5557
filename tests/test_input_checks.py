"""Inputs that popxl refuses are refused up front, with an error naming what was given and what was
expected, and nothing changes: the variables keep their values and the next valid run works."""
import subprocess
import sys

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from test_session_errors import X, assert_unchanged_then_runs, attached  # noqa: F401 - attached is a fixture


@pytest.mark.parametrize("given", [[], [X], (X,)])
def test_run_takes_a_dict_not_a_list(attached, given):
    session = attached[0]
    with pytest.raises(TypeError, match=f"session inputs must be a dict from popxl.HostToDeviceStream to NumPy "
                                        f"arrays, got {type(given).__name__}"):
        session.run(given)
    assert_unchanged_then_runs(*attached)


def test_run_with_outputs_takes_a_dict_of_outputs(attached):
    session, x_h2d = attached[:2]
    with pytest.raises(TypeError, match="session outputs must be a dict from popxl.DeviceToHostStream to NumPy "
                                        "arrays, got list"):
        session.run_with_outputs({x_h2d: X}, [np.zeros((2, 3), np.float32)])
    assert_unchanged_then_runs(*attached)


def test_a_read_only_output_array_is_refused_before_the_run(attached):
    session, x_h2d, w, w_d2h = attached
    outputs = session.create_host_outputs()
    outputs[w_d2h].setflags(write=False)
    runs = session.run_count
    with pytest.raises(ValueError, match="output array for stream 'w_out' is read-only; expected a writable "
                                         r"array \(session.create_host_outputs\(\) makes them\)"):
        session.run_with_outputs({x_h2d: X}, outputs)
    assert session.run_count == runs and session.last_trace is None
    assert_unchanged_then_runs(*attached)


def test_the_stream_of_another_ir_with_the_same_name_is_named_as_such(attached):
    session, x_h2d = attached[:2]
    twin_ir = popxl.Ir()
    with twin_ir.main_graph:
        twin = popxl.h2d_stream([2, 3], popxl.float32, name="x")
    with pytest.raises(ValueError, match=r"session inputs: stream 'x' belongs to Ir\[id=\d+\], not to the "
                                         r"session's Ir\[id=\d+\]; expected the session Ir's own stream 'x'"):
        session.run({twin: X})
    with pytest.raises(ValueError, match=r"unexpected key\(s\) 'x' \(a stream of Ir\[id=\d+\], not of the "
                                         r"session's Ir\[id=\d+\]\)"):
        session.run({x_h2d: X, twin: X})
    assert_unchanged_then_runs(*attached)


@pytest.mark.parametrize("shape", [[2.5], [2.0, 3], (np.float32(2),)])
def test_a_stream_shape_of_floats_is_refused_not_truncated(shape):
    ir = popxl.Ir()
    with ir.main_graph:
        for make in (popxl.h2d_stream, popxl.d2h_stream):
            with pytest.raises(TypeError, match=r"shape must be an iterable of ints, got .*\(the dimension "
                                                r".* is a .*float"):
                make(shape, popxl.float32, name="x")
    assert ir.get_all_h2d_streams() == set() and not ir._streams


def test_stream_shapes_of_numpy_ints_are_still_ints():
    ir = popxl.Ir()
    with ir.main_graph:
        stream = popxl.h2d_stream(np.array([2, 3]), popxl.float32, name="x")
    assert stream.shape == (2, 3) and all(type(d) is int for d in stream.shape)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_variables_are_refused(dtype):
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(TypeError, match=f"variable 'z' has {np.dtype(dtype)} data, but popxl tensors cannot "
                                            "be complex .* expected bool, int or float data"):
            popxl.variable(np.ones(2, dtype), name="z")
        with pytest.raises(TypeError, match="variable 'variable' has complex64 data"):
            popxl.variable(np.ones(2, np.float32), popxl.complex64)
    assert ir.main_graph.variables == ()


def test_a_nul_character_in_a_graph_name_is_refused_when_the_graph_is_made():
    ir = popxl.Ir()
    with pytest.raises(ValueError, match=r"graph name 'a\\x00b' contains a NUL character; expected a name "
                                         "without one"):
        ir.create_empty_graph("a\0b")
    assert [g.name for g in ir.graphs] == [""]
    popxl.Session(ir, "ipu_model")


def test_kernels_print_no_numpy_warnings_and_give_ieee_results():
    """exp overflows to inf and 0/0 is nan, silently, in a run and in a stepped run (checked in a fresh
    process: Python prints a warning only the first time a place raises it)."""
    script = """
import numpy as np, popxl, popxl.ops as ops
ir = popxl.Ir()
with ir.main_graph:
    x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
    y = ops.concat([ops.exp(x), ops.div(x - x, x - x)])
    out = popxl.d2h_stream(y.shape, y.dtype, name="y")
    ops.host_store(out, y)
stream = ir.get_all_h2d_streams().pop()
with popxl.Session(ir, "ipu_model") as session:
    session.progress = False
    print(session.run({stream: np.array([1000, 0], np.float32)})[out])
    stepper = session.stepper({stream: np.array([1000, 0], np.float32)})
    stepper.continue_()
    print(stepper.outputs[out])
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.split() == ["[inf", "1.", "nan", "nan]"] * 2
