"""Programs of real size that the grouped views are tried on: a pipelined transformer trained with autodiff
on two replicas, ResNet-50 loaded through PopART, a long chain and a 10,000-op program."""
from pathlib import Path

import numpy as np

import popxl
import popxl.ops as ops


def transformer(layers: int = 6, width: int = 32, heads: int = 4, sequence: int = 8, replicas: int = 2):
    """A ``layers``-layer transformer encoder, the first half of its layers on IPU 0 and the rest on IPU 1,
    each layer in its own name scope, trained with autodiff and SGD on ``replicas`` replicas."""
    from popxl.transforms import autodiff

    rng = np.random.default_rng(0)
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        x_stream = popxl.h2d_stream([sequence, width], popxl.float32, name="tokens")
        loss_stream = popxl.d2h_stream([], popxl.float32, name="loss")
        weights = []
        for layer in range(layers):
            for name, shape in (("qkv", (width, 3 * width)), ("proj", (width, width)), ("ff1", (width, 4 * width)),
                                ("ff2", (4 * width, width))):
                weights.append(popxl.variable(rng.normal(0, width ** -0.5, shape).astype(np.float32),
                                              name=f"layer{layer}.{name}"))

        def forward(x, *ws):
            for layer in range(layers):
                if layer == layers // 2:
                    x = x.copy_to_ipu(1)
                with popxl.ipu(0 if layer < layers // 2 else 1), popxl.name_scope(f"layer{layer}"):
                    qkv_w, proj_w, ff1_w, ff2_w = ws[4 * layer:4 * layer + 4]
                    if layer >= layers // 2:
                        qkv_w, proj_w, ff1_w, ff2_w = (w.copy_to_ipu(1) for w in (qkv_w, proj_w, ff1_w, ff2_w))
                    with popxl.name_scope("attention"):
                        q, k, v = ops.split(x @ qkv_w, 3, axis=1)
                        size = width // heads
                        q = ops.transpose(ops.reshape(q, (sequence, heads, size)), (1, 0, 2))
                        k = ops.transpose(ops.reshape(k, (sequence, heads, size)), (1, 2, 0))
                        v = ops.transpose(ops.reshape(v, (sequence, heads, size)), (1, 0, 2))
                        scores = ops.softmax((q @ k) * (size ** -0.5), axis=2)
                        mixed = ops.reshape(ops.transpose(scores @ v, (1, 0, 2)), (sequence, width))
                        x = x + mixed @ proj_w
                    with popxl.name_scope("feed_forward"):
                        x = x + ops.gelu(x @ ff1_w) @ ff2_w
            with popxl.ipu(1):
                return ops.mean(x * x)

        fwd = ir.create_graph(forward, x_stream.spec, *weights)
        grad_info = autodiff(fwd, grads_required=fwd.inputs[1:])
        site = ops.call_with_info(fwd, ops.host_load(x_stream), *weights)
        ops.host_store(loss_stream, site.parent_output(0))
        grads = ops.call(grad_info.graph, popxl.constant(1.0, popxl.float32),
                         inputs_dict=grad_info.inputs_dict(site))
        with popxl.name_scope("optimizer"):
            for w, g in zip(weights, grads):
                ops.var_updates.accumulate_(w, ops.collectives.replicated_all_reduce(g, op="mean"), -0.01)
    inputs = {x_stream: rng.normal(size=(replicas, sequence, width)).astype(np.float32)}
    return ir, inputs


def resnet50_session():
    """ResNet-50 from the onnx package's test data, as a PopART inference session (one batch of zeros)."""
    import onnx
    import popart

    path = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
    model = onnx.load(str(path))
    output = model.graph.output[0].name
    session = popart.InferenceSession(fnModel=model.SerializeToString(),
                                      dataFlow=popart.DataFlow(1, {output: popart.AnchorReturnType("All")}),
                                      deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
    return session


def long_chain(count: int = 2102):
    """``count`` ops in one chain in the main graph, with no name scopes."""
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([4], popxl.float32, name="x")
        x = ops.host_load(x_stream)
        one = popxl.constant(np.ones(4, np.float32), name="one")
        for index in range(count - 3):  # the load is two ops (its target's init and itself), the store one
            x = ops.add(x, one) if index % 2 == 0 else ops.tanh(x)
        ops.host_store(popxl.d2h_stream(x.shape, x.dtype, name="y"), x)
    return ir


def wide_program(blocks: int = 100, ops_per_block: int = 100):
    """``blocks`` × ``ops_per_block`` ops (10,000 by default): residual blocks of matmuls, each in a name scope."""
    rng = np.random.default_rng(0)
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([4, 8], popxl.float32, name="x")
        x = ops.host_load(x_stream)
        made = 1
        for block in range(blocks):
            with popxl.name_scope(f"block{block}"):
                w = popxl.variable(rng.normal(size=(8, 8)).astype(np.float32), name="w")
                start = x
                while made < (block + 1) * ops_per_block - 1:
                    x = ops.relu(x @ w)
                    made += 2
                x = x + start
                made += 1
        ops.host_store(popxl.d2h_stream(x.shape, x.dtype, name="y"), x)
    return ir
