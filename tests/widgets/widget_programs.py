"""Small programs the widget tests draw, and a way to click a point of a drawn figure in a test."""
import numpy as np

import popxl
import popxl.ops as ops
from support.programs import add_one, call_tree_program  # noqa: F401  (the widget tests import them from here)


def chain(count: int, ir=None):
    """A host_load (an init and the load), ``count`` - 3 alternating adds and tanhs of float32[4], and a
    host_store: ``count`` ops."""
    ir = ir or popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([4], popxl.float32, name="x")
        x = ops.host_load(x_stream)
        one = popxl.constant(np.ones(4, np.float32), name="one")
        for index in range(count - 3):
            x = ops.add(x, one) if index % 2 == 0 else ops.tanh(x)
        y_stream = popxl.d2h_stream(x.shape, x.dtype, name="y")
        ops.host_store(y_stream, x)
    return ir, x_stream, y_stream


def click(canvas, trace_name: str, key) -> None:
    """Click the point of ``trace_name`` whose customdata is ``key``: the message the browser sends."""
    trace = next(t for t in canvas.figure["data"] if t.get("name") == trace_name)
    assert key in trace["customdata"], f"{key!r} is not a point of {trace_name!r}"
    canvas._message(canvas, {"kind": "click", "keys": [key]}, [])


def trace(figure, name: str, **meta):
    """The one trace called ``name`` (whose ``meta`` matches ``meta``, when given)."""
    found = [t for t in figure.data if t.name == name and all((t.meta or {}).get(k) == v for k, v in meta.items())]
    assert len(found) == 1, f"{len(found)} traces named {name!r} with {meta}"
    return found[0]
