"""Small programs that several test folders build: the call-tree program of the analysis and widget tests."""
import numpy as np

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
