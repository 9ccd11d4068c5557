"""With PopART's ``enableInplaceAmbiguityChecking`` on, a Session refuses a graph whose result depends
on how unordered in-place ops are scheduled; without it, they run in the order they were made."""
import numpy as np
import pytest

import popart
import popxl
import popxl.ops as ops
from workbench.analysis.inplace_ambiguity import find_inplace_ambiguity

A = np.array([[-1.0, 0.5], [2.0, -3.0]], np.float32)


def _store(x):
    stream = popxl.d2h_stream(x.shape, x.dtype)
    ops.host_store(stream, x)
    return stream


def _checked(ir):
    ir._pb_ir.getSessionOptions().enableInplaceAmbiguityChecking = True
    return ir


def _run(ir, stream):
    with popxl.Session(ir, "ipu_model") as session:
        return session.run()[stream]


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _relu_then_gelu_in_place(ordered: bool):
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(ordered):
        a = popxl.variable(A, name="a")
        ops.relu_(a)
        stream = _store(ops.gelu_(a))
    return ir, stream


def test_two_unordered_in_place_ops_on_one_variable_are_refused_when_checked():
    ir, _ = _relu_then_gelu_in_place(ordered=False)
    found = find_inplace_ambiguity(ir.main_graph)
    assert (found.modifier.type, found.user.type, found.modified.name) == ("relu_", "gelu_", "a")
    with pytest.raises(popart.popart_exception, match=r"^Inplacing ambiguity detected\. The tensor a is "
                                                      r"modified by 'relu_'.*used by 'gelu_'"):
        popxl.Session(_checked(ir), "ipu_model")
    assert ir._owner is None  # the Ir stays buildable


def test_in_sequence_orders_them_and_the_result_is_the_written_order():
    ir, stream = _relu_then_gelu_in_place(ordered=True)
    assert find_inplace_ambiguity(ir.main_graph) is None
    np.testing.assert_allclose(_run(_checked(ir), stream), _gelu(np.maximum(A, 0)), rtol=1e-6)


def test_unchecked_unordered_ops_run_in_creation_order():
    ir, stream = _relu_then_gelu_in_place(ordered=False)
    assert popart.SessionOptions().enableInplaceAmbiguityChecking is False  # PopART's default
    np.testing.assert_allclose(_run(ir, stream), _gelu(np.maximum(A, 0)), rtol=1e-6)


def test_a_reader_and_a_writer_joined_by_a_tensor_are_ordered():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(A, name="a")
        b = a + 1  # read before the write, because the write consumes b
        stream = _store(ops.add_(a, b))
    np.testing.assert_allclose(_run(_checked(ir), stream), A + A + 1)


def test_an_unordered_reader_of_an_alias_is_refused():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(A, name="a")
        b = ops.relu(a)
        c = ops.relu_(a)
        _store(ops.add_(b, c))
    found = find_inplace_ambiguity(ir.main_graph)
    assert (found.modifier.type, found.user.type) == ("relu_", "relu")


def test_the_check_covers_called_graphs():
    ir = popxl.Ir()

    def body(x, y):
        ops.relu_(x)
        return ops.add_(x, y)

    with ir.main_graph:
        a = popxl.variable(A, name="a")
        graph = ir.create_graph(body, a, a)
        _store(ops.call(graph, a, a)[0])
    assert find_inplace_ambiguity(ir.main_graph) is None
    assert find_inplace_ambiguity(graph).modifier.type == "relu_"
    with pytest.raises(popart.popart_exception, match="Inplacing ambiguity detected"):
        popxl.Session(_checked(ir), "ipu_model")
