"""A small program for the export tests: a call, a repeat, a conditional and an oddly named constant."""
import numpy as np

import popxl
import popxl.ops as ops

ODD_NAME = 'c"<q>{\\'


def multiply(a, b):
    return a * b


def double(a):
    return a + a


def increment(a):
    return a + 1.0


def decrement(a):
    return a - 1.0


def build_program():
    """x -> call(multiply) -> repeat(double, 3) -> conditional(increment, decrement) -> + odd -> y."""
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2], popxl.float32, name="x")
        w = popxl.variable(np.array([1.0, 2.0], np.float32), name="w")
        odd = popxl.constant(np.array([10.0, 20.0], np.float32), name=ODD_NAME)
        x = ops.host_load(x_stream)
        body = ir.create_graph(multiply, x, w)
        (called,) = ops.call(body, x, w)
        twice = ir.create_graph(double, called)
        (repeated,) = ops.repeat(twice, 3, called)
        then_graph = ir.create_graph(increment, repeated)
        else_graph = ir.create_graph(decrement, repeated)
        flag = popxl.constant(True, name="flag")
        (chosen,) = ops.conditional(flag, then_graph, else_graph, [repeated], [repeated])
        y = chosen + odd
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
    return ir, dict(x_stream=x_stream, y_stream=y_stream, w=w, odd=odd, body=body, twice=twice,
                    then_graph=then_graph, else_graph=else_graph)
