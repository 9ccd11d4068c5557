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
