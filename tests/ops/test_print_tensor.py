"""print_tensor: the identity, printing its input each time it runs."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from helpers import run_op


def test_print_tensor_returns_its_input_and_prints_at_run_time(capsys):
    x = np.array([[1.5, 2.0], [3.0, -4.25]], np.float32)
    out = run_op(lambda t: ops.print_tensor(t, "x") * 2, x)
    np.testing.assert_array_equal(out, x * 2)
    assert capsys.readouterr().err == "x: [[1.5000000 2.0000000]\n [3.0000000 -4.2500000]]\n"  # Poplar's 'auto'


@pytest.mark.parametrize("values, text", [
    ([0.1, 0.4], "[0.1000000 0.4000000]"),  # 8 significant digits
    ([123.5, 2.0], "[123.50000 2.00000]"),  # as many as the largest leaves
    ([1e-6, 1.0], "[1.0000000e-06 1.0000000e+00]"),  # magnitudes fixed point would not show
    ([0.0, 0.0], "[0.0000000 0.0000000]"),
])
def test_auto_float_format_gives_digits_significant_digits_as_poplar_prints(capsys, values, text):
    run_op(lambda t: ops.print_tensor(t, "t"), np.array(values, np.float32))
    assert capsys.readouterr().err == f"t: {text}\n"


def test_nothing_is_printed_while_building(capsys):
    ir = popxl.Ir()
    with ir.main_graph:
        ops.print_tensor(popxl.variable(np.ones(2, np.float32), name="w"))
    assert capsys.readouterr().err == ""


def test_print_tensor_prints_on_every_run_with_the_default_title(capsys):
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.zeros(3, np.int32), name="w")
        printed = ops.print_tensor(w)
        ops.var_updates.accumulate_(w, popxl.constant(np.ones(3, np.int32)))
        assert printed.shape == (3,) and printed.dtype is popxl.int32
    with popxl.Session(ir, "ipu_model") as session:
        session.run({})
        session.run({})
    assert capsys.readouterr().err == "print_w: [0 0 0]\nprint_w: [1 1 1]\n"


def test_print_options_shape_the_text(capsys):
    x = np.arange(10, dtype=np.float32) / 3
    run_op(lambda t: ops.print_tensor(t, "t", summarise_threshold=5, edge_items=2, digits=2, float_format="fixed",
                                      separator=", ", open_bracket="(", close_bracket=")"), x)
    assert capsys.readouterr().err == "t: (0.00, 0.33, ..., 2.67, 3.00)\n"


def test_print_self_false_prints_nothing(capsys):
    out = run_op(lambda t: ops.print_tensor(t, print_self=False), np.ones(2, np.float32))
    np.testing.assert_array_equal(out, np.ones(2))
    assert capsys.readouterr().err == ""


def test_unknown_float_format_is_an_error():
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(ValueError, match="print_tensor: float_format must be one of auto, fixed"):
            ops.print_tensor(popxl.variable(np.ones(2, np.float32)), float_format="engineering")


@pytest.mark.parametrize("print_gradient", [False, True])
def test_the_gradient_passes_through_and_is_printed_when_asked(capsys, print_gradient):
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda t: ops.print_tensor(t, "x", print_gradient=print_gradient) * 3,
                                popxl.TensorSpec((2,), popxl.float32))
        grad_graph = popxl.transforms.autodiff(graph).graph
        (grad,) = ops.call(grad_graph, popxl.constant(np.array([1.0, 2.0], np.float32)))
        stream = popxl.d2h_stream(grad.shape, grad.dtype, name="grad")
        ops.host_store(stream, grad)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[stream], [3.0, 6.0])
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err == ("x_gradient: [3.0000000 6.0000000]\n" if print_gradient else "")
