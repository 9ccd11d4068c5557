"""The small programs that several test folders build: the call-tree program of the analysis and widget
tests, the views' MLP, and the export tests' program with a call, a repeat, a conditional and an oddly
named constant."""
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


def mlp_training(replicas: int = 4, layers: int = 4, width: int = 32, batch: int = 8, steps: int = 8):
    """The views' realistic model: a ``layers``-layer MLP whose step (a repeat of ``steps``) loads a
    batch, calls the forward graph and its autodiff gradient graph, mean-all-reduces the gradients over
    ``replicas`` and applies SGD. Returns the Ir, its input streams and the inputs of one run."""
    from popxl.transforms import autodiff

    rng = np.random.default_rng(0)
    ir = popxl.Ir(replication=replicas)
    ir.num_host_transfers = steps
    with ir.main_graph:
        x_stream = popxl.h2d_stream([batch, width], popxl.float32, name="x")
        y_stream = popxl.h2d_stream([batch, width], popxl.float32, name="target")
        loss_stream = popxl.d2h_stream([], popxl.float32, name="loss")
        weights = []
        for layer in range(layers):
            weights.append(popxl.variable(rng.normal(0, width ** -0.5, (width, width)).astype(np.float32),
                                          name=f"W{layer}"))
            weights.append(popxl.variable(np.zeros(width, np.float32), name=f"b{layer}"))

        def forward(x, target, *ws):
            for layer in range(layers):
                x = x @ ws[2 * layer] + ws[2 * layer + 1]
                x = ops.relu(x) if layer < layers - 1 else x
            return ops.mean((x - target) * (x - target))

        fwd = ir.create_graph(forward, x_stream.spec, y_stream.spec, *weights)
        grad_info = autodiff(fwd, grads_required=fwd.inputs[2:])

        def step(ws: popxl.TensorByRef):
            site = ops.call_with_info(fwd, ops.host_load(x_stream), ops.host_load(y_stream), *ws)
            ops.host_store(loss_stream, site.parent_output(0))
            grads = ops.call(grad_info.graph, popxl.constant(1.0, popxl.float32),
                             inputs_dict=grad_info.inputs_dict(site))
            for w, g in zip(ws, grads):
                ops.var_updates.accumulate_(w, ops.collectives.replicated_all_reduce(g, op="mean"), -0.05)

        ops.repeat(ir.create_graph(step, weights), steps, weights)
    shape = (steps, replicas, batch, width) if replicas > 1 else (steps, batch, width)
    inputs = {x_stream: rng.normal(size=shape).astype(np.float32),
              y_stream: rng.normal(size=shape).astype(np.float32)}
    return ir, inputs


ODD_NAME = 'c"<q>{\\'


def multiply(a, b):
    return a * b


def double(a):
    return a + a


def increment(a):
    return a + 1.0


def decrement(a):
    return a - 1.0


def export_program():
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
