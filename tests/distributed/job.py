"""Programs run as every instance of a job (``poprun``/``mpiexec ... python job.py PROGRAM``), or as one
process holding all replicas (``POPDIST_NUM_TOTAL_REPLICAS=4 python job.py PROGRAM``). Each prints
``instance I: RESULT`` lines that the tests compare."""
import sys

import numpy as np

import popdist
import popxl
import popxl.ops as ops
from popxl.transforms import autodiff

from job_output import digest, say

WIDTH, BATCH, STEPS = 16, 4, 8


def local_part(data: np.ndarray, ir: popxl.Ir) -> np.ndarray:
    """This instance's replicas of ``[steps, replicas, ...]`` host data, shaped as ``run`` expects."""
    offset, local = popdist.getReplicaIndexOffset(), ir.instance_replication_factor
    part = data[:, offset: offset + local]
    part = part if local > 1 else part[:, 0]
    return part if len(data) > 1 else part[0]


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


def replica_outputs(outputs: np.ndarray, ir: popxl.Ir) -> None:
    """One line per global replica of this instance: a digest of its part of ``outputs`` (one transfer)."""
    local = outputs if ir.instance_replication_factor > 1 else outputs[None]
    for index, replica in enumerate(ir.local_replicas):
        say(f"replica {replica}", digest([local[index]]))


def grouped() -> None:
    """Groupings that span instances: grouped and all_replicas variables, a replica-sharded variable
    updated through reduce-scatter and read through all-gather, and collectives over strided groups."""
    rng = np.random.default_rng(2)
    ir = popxl.Ir(replication="popdist")
    replicas = ir.replication_factor
    across = ir.replica_grouping(stride=2, group_size=2)  # groups {0, 2} and {1, 3}
    with ir.main_graph, popxl.in_sequence():
        x_stream = popxl.h2d_stream([3], popxl.float32, name="x")
        grouped_var = popxl.variable(rng.normal(size=(2, 3)).astype(np.float32), name="grouped",
                                     replica_grouping=across)
        own = popxl.variable(rng.normal(size=(replicas, 3)).astype(np.float32), name="own",
                             replica_grouping=ir.replica_grouping(group_size=1), retrieval_mode="all_replicas")
        sharded, shard = popxl.replica_sharded_variable(np.arange(10, dtype=np.float32), name="sharded")
        x = ops.host_load(x_stream)
        ops.var_updates.accumulate_(grouped_var, ops.collectives.replicated_all_reduce(x, "add", across))
        ops.var_updates.accumulate_(own, ops.collectives.replicated_all_reduce(x, "max"))
        update = ops.collectives.replicated_reduce_scatter(
            ops.concat([x, x, x, x[:1]]), "add", configure_output_for_replicated_tensor_sharding=True)
        ops.var_updates.accumulate_(shard, update)
        gathered = ops.collectives.replicated_all_gather(x, group=across, output_shape="new_axis")
        full = ops.collectives.replicated_all_gather(shard)
        out = popxl.d2h_stream([2 * 3 + 10], popxl.float32, name="out")
        ops.host_store(out, ops.concat([gathered.reshape((6,)), full]))
    x = rng.normal(size=(1, replicas, 3)).astype(np.float32)
    with popxl.Session(ir, "ipu_hw") as session:
        outputs = session.run({x_stream: local_part(x, ir)})
        values = session.get_tensors_data([grouped_var, own, sharded])
    replica_outputs(outputs[out], ir)
    say("shapes", [values[v].shape for v in (grouped_var, own, sharded)])
    say("digest", digest(values.values()))


def pairs() -> None:
    """An all-reduce over pairs of neighbours: with 3 replicas per instance some pairs lie within an
    instance and one spans two."""
    ir = popxl.Ir(replication="popdist")
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2], popxl.float32, name="x")
        out = popxl.d2h_stream([2], popxl.float32, name="y")
        ops.host_store(out, ops.collectives.replicated_all_reduce(ops.host_load(x_stream),
                                                                  group=ir.replica_grouping(group_size=2)))
    x = np.arange(ir.replication_factor * 2, dtype=np.float32).reshape(1, -1, 2)
    with popxl.Session(ir, "ipu_hw") as session:
        replica_outputs(session.run({x_stream: local_part(x, ir)})[out], ir)


def _explode_op():
    """A test op that fails where its input is negative, as a faulty kernel would."""
    from workbench.ops.registry import OpDef, register
    from workbench.ops.rules import same_spec

    def kernel(op, env):
        def run(x):
            if (x < 0).any():
                raise FloatingPointError("negative input")
            return x.copy()
        return run
    register(OpDef("test_explode", same_spec, kernel))


def fault() -> None:
    """Replica 2 fails before an all-reduce; with ``uncaught`` the error ends the job, else every
    instance reports an error and the next run, without the fault, works everywhere."""
    from workbench.ops.registry import apply

    _explode_op()
    ir = popxl.Ir(replication="popdist")
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2], popxl.float32, name="x")
        total = ops.collectives.replicated_all_reduce(apply("test_explode", ops.host_load(x_stream)))
        out = popxl.d2h_stream([2], popxl.float32, name="total")
        ops.host_store(out, total)
    bad = np.ones((1, ir.replication_factor, 2), np.float32)
    bad[0, 2] = -1
    with popxl.Session(ir, "ipu_hw") as session:
        if sys.argv[2:] == ["uncaught"]:
            session.run({x_stream: local_part(bad, ir)})
        try:
            session.run({x_stream: local_part(bad, ir)})
        except Exception as error:
            say("error", f"{type(error).__name__}: {error}")
        good = np.ones_like(bad)
        say("next run", session.run({x_stream: local_part(good, ir)})[out].reshape(-1).tolist())


def mismatch() -> None:
    """Replicas 0 and 1 reach an all-reduce over every replica, 2 and 3 do not: an error, not a hang."""
    run_split_branches(lambda t: t * 2, then_next=True)


def crossed() -> None:
    """Replicas 0 and 1 all-reduce x, 2 and 3 all-reduce x * 2 (another op of the same shape): every
    instance says which collective it exchanges, and all refuse the exchange."""
    run_split_branches(lambda t: ops.collectives.replicated_all_reduce(t * 2), then_next=False,
                       say_window=True)


def run_split_branches(else_body, then_next: bool, say_window: bool = False) -> None:
    """A run where replicas 0 and 1 take a branch that all-reduces x and 2 and 3 the branch
    ``else_body``, reporting its error; then a run where every replica takes the then branch if
    ``then_next``, else the else branch."""
    ir = popxl.Ir(replication="popdist")
    with ir.main_graph:
        flag_stream = popxl.h2d_stream([], popxl.bool, name="flag")
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        then_graph = ir.create_graph(lambda t: ops.collectives.replicated_all_reduce(t), x)
        (y,) = ops.conditional(ops.host_load(flag_stream), then_graph, ir.create_graph(else_body, x), [x], [x])
        out = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(out, y)
    x_stream = next(s for s in ir.get_all_h2d_streams() if s.name == "x")
    x = np.ones((1, ir.replication_factor, 2), np.float32)
    flags = np.array([[True, True, False, False]])
    with popxl.Session(ir, "ipu_hw") as session:
        if say_window:
            say("through shared memory", session.executable.instances.channel.through_shared_memory)
        try:
            session.run({flag_stream: local_part(flags, ir), x_stream: local_part(x, ir)})
        except Exception as error:
            say("error", f"{type(error).__name__}: {error}")
        flags[...] = then_next
        outputs = session.run({flag_stream: local_part(flags, ir), x_stream: local_part(x, ir)})
        say("next run", outputs[out].reshape(-1).tolist())


def trace() -> None:
    """A profiled run with a branch that differs per replica: the trace holds every global replica."""
    ir = popxl.Ir(replication="popdist")
    with ir.main_graph:
        flag = ops.host_load(popxl.h2d_stream([], popxl.bool, name="flag"))
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        (y,) = ops.conditional(flag, ir.create_graph(lambda t: t * 2, x), ir.create_graph(lambda t: t + 1, x),
                               [x], [x])
        out = popxl.d2h_stream([2], popxl.float32, name="y")
        ops.host_store(out, ops.collectives.replicated_all_reduce(y))
    streams = {s.name: s for s in ir.get_all_h2d_streams()}
    flags = np.array([[True, False, False, True]])
    x = np.ones((1, ir.replication_factor, 2), np.float32)
    popdist.init()
    with popxl.Session(ir, "ipu_hw") as session:
        session.profile = True
        inputs = {streams["flag"]: local_part(flags, ir), streams["x"]: local_part(x, ir)}
        session.run(inputs)
        try:
            session.stepper(inputs)
        except NotImplementedError as error:
            say("stepper", error)
    say("backend", popdist.isBackendInitialized())
    found = session.last_trace
    summary = found.summary()
    taken = ["".join(e.op.type for e in found.of(replica=r) if e.op.type in ("mul", "add"))
             for r in range(found.replicas)]
    timed = all(0 <= e.start_seconds <= e.end_seconds < 60 for e in found.events)
    say("trace", f"{found.replicas} replicas, {len(found.events)} events, {summary.cycles} cycles, "
                 f"timed {timed}, branches {taken}")
    if len(sys.argv) > 2:
        import workbench
        popdist.execute_on_instances(0, workbench.report, session, sys.argv[2])


if __name__ == "__main__":
    globals()[sys.argv[1]]()
