"""Programs run as every instance of a job (``poprun``/``mpiexec ... python job.py PROGRAM``), or as one
process holding all replicas (``POPDIST_NUM_TOTAL_REPLICAS=4 python job.py PROGRAM``). Each prints
``instance I: RESULT`` lines that the tests compare."""
import hashlib
import sys

import numpy as np

import popdist
import popxl
import popxl.ops as ops
from popxl.transforms import autodiff

WIDTH, BATCH, STEPS = 16, 4, 8


def say(what: str, value) -> None:
    print(f"instance {popdist.getInstanceIndex()}: {what} {value}", flush=True)


def digest(arrays) -> str:
    sha = hashlib.sha256()
    for array in arrays:
        sha.update(np.ascontiguousarray(array).tobytes())
    return sha.hexdigest()[:16]


def local_part(data: np.ndarray, ir: popxl.Ir) -> np.ndarray:
    """This instance's replicas of ``[steps, replicas, ...]`` host data, shaped as ``run`` expects."""
    offset, local = popdist.getReplicaIndexOffset(), ir.instance_replication_factor
    part = data[:, offset: offset + local]
    return part if local > 1 else part[:, 0]


def mlp() -> None:
    """Data-parallel training: autodiff, mean all-reduce of the gradients, SGD, 8 steps."""
    rng = np.random.default_rng(0)
    ir = popxl.Ir(replication="popdist")
    ir.num_host_transfers = STEPS
    replicas = ir.replication_factor
    with ir.main_graph:
        x_stream = popxl.h2d_stream([BATCH, WIDTH], popxl.float32, name="x")
        y_stream = popxl.h2d_stream([BATCH, WIDTH], popxl.float32, name="y")
        loss_stream = popxl.d2h_stream([], popxl.float32, name="loss")
        weights = [popxl.variable(rng.normal(0, WIDTH ** -0.5, (WIDTH, WIDTH)).astype(np.float32), name="W0"),
                   popxl.variable(np.zeros(WIDTH, np.float32), name="b0"),
                   popxl.variable(rng.normal(0, WIDTH ** -0.5, (WIDTH, WIDTH)).astype(np.float32), name="W1")]

        def forward(x, y, w0, b0, w1):
            out = ops.relu(x @ w0 + b0) @ w1
            return ops.mean((out - y) * (out - y))

        fwd = ir.create_graph(forward, x_stream.spec, y_stream.spec, *weights)
        grad_info = autodiff(fwd, grads_required=fwd.inputs[2:])

        def step(ws: popxl.TensorByRef):
            site = ops.call_with_info(fwd, ops.host_load(x_stream), ops.host_load(y_stream), *ws)
            ops.host_store(loss_stream, site.parent_output(0))
            grads = ops.call(grad_info.graph, popxl.constant(1.0, popxl.float32),
                             inputs_dict=grad_info.inputs_dict(site))
            for w, g in zip(ws, grads):
                ops.var_updates.accumulate_(w, ops.collectives.replicated_all_reduce(g, op="mean"), -0.1)

        ops.repeat(ir.create_graph(step, weights), STEPS, weights)
    x = rng.normal(size=(STEPS, replicas, BATCH, WIDTH)).astype(np.float32)
    y = rng.normal(size=(STEPS, replicas, BATCH, WIDTH)).astype(np.float32)
    with popxl.Session(ir, "ipu_hw") as session:
        outputs = session.run({x_stream: local_part(x, ir), y_stream: local_part(y, ir)})
    say("losses", outputs[loss_stream].shape)
    say("digest", digest(session.get_tensor_data(w) for w in weights))


if __name__ == "__main__":
    globals()[sys.argv[1]]()
