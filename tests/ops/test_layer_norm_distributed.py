"""The layer norm of popxl-addons' LayerNormDistributedOp: rows whose columns are split across a replica
group are normalised over all their columns; its gradient op takes the output gradient
as that of the whitened input (no scale), as the C++ op does."""
import numpy as np

import popxl
import popxl.ops as ops
from workbench.ops.layer_norm_distributed import layer_norm_distributed

REPLICAS, ROWS, COLUMNS = 2, 3, 8
EPS = 1e-5
RNG = np.random.default_rng(1)
X = RNG.standard_normal((ROWS, COLUMNS)).astype(np.float32) * 2 + 1
DY = RNG.standard_normal((ROWS, COLUMNS)).astype(np.float32)
SCALE = RNG.uniform(0.5, 2.0, COLUMNS).astype(np.float32)
BIAS = RNG.standard_normal(COLUMNS).astype(np.float32)


def split(a):
    """Each replica's columns, stacked on a new first axis."""
    return np.stack(np.split(a, REPLICAS, axis=-1))


def run():
    ir = popxl.Ir(replication=REPLICAS)
    width = COLUMNS // REPLICAS
    with ir.main_graph:
        streams = {name: popxl.h2d_stream(shape, popxl.float32, name=name)
                   for name, shape in [("x", (ROWS, width)), ("dy", (ROWS, width)), ("scale", (width,)),
                                       ("bias", (width,))]}
        x, dy, scale, bias = (ops.host_load(s) for s in streams.values())
        graph = ir.create_graph(lambda x, s, b: layer_norm_distributed(x, s, b, EPS)[0], x, scale, bias)
        call_info = ops.call_with_info(graph, x, scale, bias)
        grad_info = popxl.transforms.autodiff(graph)
        grads = ops.call(grad_info.graph, dy, inputs_dict=grad_info.inputs_dict(call_info))
        outs = {}
        for name, t in zip(["y", "dx", "dscale", "dbias"], [call_info.outputs[0], *grads]):
            outs[name] = popxl.d2h_stream(t.shape, t.dtype, name=name)
            ops.host_store(outs[name], t)
    data = {streams["x"]: split(X), streams["dy"]: split(DY), streams["scale"]: split(SCALE),
            streams["bias"]: split(BIAS)}
    with popxl.Session(ir, "ipu_model") as session:
        results = session.run(data)
    return {name: np.concatenate(list(results[s]), axis=-1) for name, s in outs.items()}


def test_rows_normalise_over_every_members_columns_and_the_gradient_leaves_out_the_scale():
    out = run()
    mean = X.mean(axis=1, keepdims=True)
    inv_std = 1 / np.sqrt(X.var(axis=1, keepdims=True) + EPS)
    whitened = (X - mean) * inv_std
    np.testing.assert_allclose(out["y"], whitened * SCALE + BIAS, rtol=1e-5, atol=1e-5)
    dx = inv_std * (DY - DY.mean(axis=1, keepdims=True) - whitened * (DY * whitened).mean(axis=1, keepdims=True))
    np.testing.assert_allclose(out["dx"], dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["dscale"], (DY * whitened).sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["dbias"], DY.sum(axis=0), rtol=1e-5, atol=1e-5)
