"""Small programs the widget tests draw, and a way to click a plotly FigureWidget point in a test."""
import numpy as np
from plotly.callbacks import Points

import popxl
import popxl.ops as ops


def add_one(t: popxl.Tensor) -> popxl.Tensor:
    return t + 1


def call_tree_program(repeat_count=5):
    """main: repeat ``repeat_count`` x body (body calls add_one), then a conditional whose then-branch
    calls add_one and whose else-branch doubles; plus a graph nobody calls."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        flag = popxl.variable(True, popxl.bool, name="flag")
        g = ir.create_graph(add_one, x)

        def body(t):
            (u,) = ops.call(g, t)
            return u

        def then_branch(t):
            (u,) = ops.call(g, t)
            return u

        def else_branch(t):
            return t * 2

        body_graph = ir.create_graph(body, x)
        then_graph = ir.create_graph(then_branch, x)
        else_graph = ir.create_graph(else_branch, x)
        unused = ir.create_graph(add_one, x)
        (y,) = ops.repeat(body_graph, repeat_count, x)
        (z,) = ops.conditional(flag, then_graph, else_graph, [y], [y])
        stream = popxl.d2h_stream(z.shape, z.dtype, name="z")
        ops.host_store(stream, z)
    return ir, dict(g=g, body=body_graph, then=then_graph, other=else_graph, unused=unused, z=stream)


def chain(count: int, ir=None):
    """A host_load, ``count`` - 2 alternating adds and tanhs of float32[4], and a host_store."""
    ir = ir or popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([4], popxl.float32, name="x")
        x = ops.host_load(x_stream)
        one = popxl.constant(np.ones(4, np.float32), name="one")
        for index in range(count - 2):
            x = ops.add(x, one) if index % 2 == 0 else ops.tanh(x)
        y_stream = popxl.d2h_stream(x.shape, x.dtype, name="y")
        ops.host_store(y_stream, x)
    return ir, x_stream, y_stream


def click(figure_widget, trace_name: str, key) -> None:
    """Click the point of ``trace_name`` whose customdata is ``key``, as the browser would."""
    trace = next(t for t in figure_widget.data if t.name == trace_name)
    index = list(trace.customdata).index(key)
    trace._dispatch_on_click(Points(point_inds=[index], xs=[trace.x[index]], ys=[trace.y[index]],
                                    trace_name=trace.name, trace_index=0), None)


def trace(figure, name: str, **meta):
    """The one trace called ``name`` (whose ``meta`` matches ``meta``, when given)."""
    found = [t for t in figure.data if t.name == name and all((t.meta or {}).get(k) == v for k, v in meta.items())]
    assert len(found) == 1, f"{len(found)} traces named {name!r} with {meta}"
    return found[0]
