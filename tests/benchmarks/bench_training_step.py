"""A whole training step, against the same step written by hand in NumPy (and JAX when it is installed).

The step: a 784-256-256-10 MLP on a batch of 32 per replica, softmax cross-entropy, gradients by
autodiff of the forward graph, a mean all-reduce of the gradients across replicas and SGD with
``ops.scaled_add_``; one ``session.run`` per step. The hand-written NumPy step with 4 replicas runs
one thread per replica that meet at a barrier to average the gradients. JAX (``pip install
ipu-workbench[bench]``) runs ``jit`` for one replica and ``shard_map`` with ``pmean`` over R host
devices. Every figure is measured in the same process with one BLAS thread, and reported as a ratio;
the ratio to JAX is given for each round too (their spread, and how many rounds reach JAX's speed),
with the replicas run as 'auto' picks (worker processes where the cores allow).

Run with ``python -m pytest tests/benchmarks/bench_training_step.py -o python_files='bench_*.py' -s``.
"""
import os
import statistics
import threading
import time
from typing import Optional

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=16")  # before JAX loads

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import popxl  # noqa: E402
import popxl.ops as ops  # noqa: E402
from workbench.runtime.options import default_run_options, set_default_run_options  # noqa: E402

# To compare: ``WORKBENCH_BUCKET_REPLICAS=0`` has replicas in processes all-reduce op by op, a larger
# number buckets the all-reduces where a process holds up to that many replicas (RunOptions.bucket_replicas).
if "WORKBENCH_BUCKET_REPLICAS" in os.environ:
    set_default_run_options(default_run_options().with_changes(
        bucket_replicas=int(os.environ["WORKBENCH_BUCKET_REPLICAS"])))

SIZES, BATCH, LR = (784, 256, 256, 10), 32, 0.01
WARMUP, ROUNDS, CHUNK = 10, 10, 20  # steps before timing; timed chunks of steps
# A pause before each timed chunk. Idle BLAS threads (OpenBLAS's spin for up to about 0.1 s after a
# product) and JAX's thread pool keep cores busy for a while after their work: without the pause each
# side's chunk is timed beside the other's spinning threads (on a 16-core machine JAX's 4-replica step
# measured 2.9 ms right after the workbench's and 1.8 ms after a pause).
SETTLE_SECONDS = 0.3


def settled_seconds(run) -> float:
    """Wall-clock seconds of ``run()``, started once the machine has had ``SETTLE_SECONDS`` to go quiet."""
    time.sleep(SETTLE_SECONDS)
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def initial_weights():
    rng = np.random.default_rng(0)
    weights = []
    for fan_in, fan_out in zip(SIZES, SIZES[1:]):
        weights.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32))
        weights.append(np.zeros(fan_out, np.float32))
    return weights


def batches(replicas: int, steps: int):
    """``steps`` batches of images and labels, each ``[replicas * BATCH, ...]``."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((steps, replicas * BATCH, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], (steps, replicas * BATCH)).astype(np.int32)
    return x, labels


# ----- this project -----
def forward(x, labels, *weights):
    h = x
    for i in range(0, len(weights), 2):
        h = h @ weights[i] + weights[i + 1]
        if i < len(weights) - 2:
            h = ops.relu(h)
    return ops.nll_loss(ops.softmax(h, axis=-1), labels)


def training_ir(replicas: int):
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        x_stream = popxl.h2d_stream([BATCH, SIZES[0]], popxl.float32, name="x")
        label_stream = popxl.h2d_stream([BATCH], popxl.int32, name="labels")
        loss_stream = popxl.d2h_stream([], popxl.float32, name="loss")
        weights = [popxl.variable(w, name=f"w{i}") for i, w in enumerate(initial_weights())]
        fwd = ir.create_graph(forward, popxl.TensorSpec((BATCH, SIZES[0]), popxl.float32),
                              popxl.TensorSpec((BATCH,), popxl.int32), *weights)
        grad_info = popxl.transforms.autodiff(fwd, grads_required=fwd.inputs[2:])
        x, labels = ops.host_load(x_stream), ops.host_load(label_stream)
        fwd_info = ops.call_with_info(fwd, x, labels, *weights)
        ops.host_store(loss_stream, fwd_info.parent_output(0))
        grads = ops.call(grad_info.graph, popxl.constant(1.0, popxl.float32),
                         inputs_dict=grad_info.inputs_dict(fwd_info))
        for weight, grad in zip(weights, grads):
            if replicas > 1:
                grad = ops.collectives.replicated_all_reduce(grad, op="mean")
            ops.scaled_add_(weight, grad, b=-LR)
    return ir, x_stream, label_stream, loss_stream, weights


def per_replica(a: np.ndarray, replicas: int) -> np.ndarray:
    return a if replicas == 1 else a.reshape(replicas, BATCH, *a.shape[1:])


# Each way of training is a class whose ``steps(first, count)`` trains on batches first..first+count-1
# and whose ``finish()`` gives back (final weights, losses of every step).
class Workbench:
    def __init__(self, replicas: int, x, labels):
        self.replicas = replicas
        ir, self.x_stream, self.label_stream, self.loss_stream, self.weights = training_ir(replicas)
        self.session = popxl.Session(ir, "ipu_model")
        self.session.progress = False
        self.session.__enter__()
        self.inputs = [{self.x_stream: per_replica(x[i], replicas),
                        self.label_stream: per_replica(labels[i], replicas)} for i in range(len(x))]
        self.outputs = self.session.create_host_outputs()
        self.losses = []

    def steps(self, first: int, count: int):
        session, inputs, outputs = self.session, self.inputs, self.outputs
        for step in range(first, first + count):
            session.run_with_outputs(inputs[step], outputs)
            self.losses.append(outputs[self.loss_stream].copy())

    def finish(self):
        trained = self.session.get_tensors_data(self.weights)
        self.session.__exit__(None, None, None)
        return [trained[w] for w in self.weights], np.array(self.losses)


def numpy_gradients(x, labels, weights):
    """The loss and the gradient of each weight, for one replica's batch."""
    activations, h = [x], x
    for i in range(0, len(weights), 2):
        h = h @ weights[i] + weights[i + 1]
        if i < len(weights) - 2:
            h = np.maximum(h, 0)
            activations.append(h)
    exp = np.exp(h - h.max(axis=-1, keepdims=True))
    probs = exp / exp.sum(axis=-1, keepdims=True)
    rows = np.arange(len(labels))
    loss = -np.mean(np.log(probs[rows, labels]))
    grad = probs
    grad[rows, labels] -= 1
    grad /= len(labels)
    grads = [None] * len(weights)
    for i in range(len(weights) - 2, -1, -2):
        inputs = activations[i // 2]
        grads[i], grads[i + 1] = inputs.T @ grad, grad.sum(axis=0)
        if i:
            grad = (grad @ weights[i].T) * (inputs > 0)
    return loss, grads


class NumPyOneReplica:
    def __init__(self, replicas: int, x, labels):
        self.x, self.labels, self.weights, self.losses = x, labels, initial_weights(), []

    def steps(self, first: int, count: int):
        for step in range(first, first + count):
            loss, grads = numpy_gradients(self.x[step], self.labels[step], self.weights)
            for w, g in zip(self.weights, grads):
                w -= LR * g
            self.losses.append(loss)

    def finish(self):
        return self.weights, np.array(self.losses)


class NumPyThreads:
    """One thread per replica with its own weights: at a barrier each adds up everyone's gradients
    (an all-reduce), then updates its weights. The threads wait between calls of ``steps``."""

    def __init__(self, replicas: int, x, labels):
        self.replicas, self.x, self.labels = replicas, x, labels
        self.weights = [initial_weights() for _ in range(replicas)]
        self.losses = np.zeros((len(x), replicas), np.float32)
        self.shared = [None] * replicas
        self.barrier = threading.Barrier(replicas)
        self.gate = threading.Barrier(replicas + 1)  # the caller and the replicas, at each call
        self.work = (0, 0)
        self.threads = [threading.Thread(target=self._replica, args=(r,), daemon=True) for r in range(replicas)]
        for thread in self.threads:
            thread.start()

    def _replica(self, r: int):
        own, rows = self.weights[r], slice(r * BATCH, (r + 1) * BATCH)
        while True:
            self.gate.wait()
            first, count = self.work
            if count == 0:
                return
            for step in range(first, first + count):
                self.losses[step, r], self.shared[r] = numpy_gradients(self.x[step][rows],
                                                                       self.labels[step][rows], own)
                self.barrier.wait()
                for i, w in enumerate(own):
                    total = self.shared[0][i].copy()
                    for other in self.shared[1:]:
                        total += other[i]
                    w -= LR * (total / self.replicas)
                self.barrier.wait()
            self.gate.wait()

    def steps(self, first: int, count: int):
        self.work = (first, count)
        self.gate.wait()
        self.gate.wait()

    def finish(self):
        self.work = (0, 0)
        self.gate.wait()
        return self.weights[0], self.losses


class Jax:
    """``jit`` for one replica, ``shard_map`` with ``pmean`` over host devices for several."""

    def __init__(self, replicas: int, x, labels):
        jax = pytest.importorskip("jax")
        import jax.numpy as jnp

        def loss_fn(weights, xs, ys):
            h = xs
            for i in range(0, len(weights), 2):
                h = h @ weights[i] + weights[i + 1]
                if i < len(weights) - 2:
                    h = jnp.maximum(h, 0)
            log_probs = jax.nn.log_softmax(h, axis=-1)
            return -jnp.mean(jnp.take_along_axis(log_probs, ys[:, None], axis=-1))

        def step(weights, xs, ys):
            loss, grads = jax.value_and_grad(loss_fn)(weights, xs, ys)
            if replicas > 1:
                grads = jax.lax.pmean(grads, "replicas")
                loss = loss[None]
            return [w - LR * g for w, g in zip(weights, grads)], loss

        if replicas == 1:
            self.run = jax.jit(step, donate_argnums=0)
        else:
            from jax.sharding import Mesh, PartitionSpec as P
            if len(jax.devices()) < replicas:
                pytest.skip(f"JAX sees {len(jax.devices())} devices, needs {replicas}")
            mesh = Mesh(np.array(jax.devices()[:replicas]), ("replicas",))
            specs = dict(mesh=mesh, in_specs=(P(), P("replicas"), P("replicas")), out_specs=(P(), P("replicas")))
            # Unchecked replication: each device differentiates its own copy of the weights, so the
            # gradients are per replica until pmean (as in the other programs).
            if hasattr(jax, "shard_map"):
                sharded = jax.shard_map(step, check_vma=False, **specs)
            else:
                from jax.experimental.shard_map import shard_map
                sharded = shard_map(step, check_rep=False, **specs)
            self.run = jax.jit(sharded, donate_argnums=0)
        self.x, self.labels = x, labels
        self.weights = [jnp.asarray(w) for w in initial_weights()]
        self.losses = []

    def steps(self, first: int, count: int):
        for step in range(first, first + count):
            self.weights, loss = self.run(self.weights, self.x[step], self.labels[step])
            # Each step ends on the host, as a session run does (steps queued without end deadlock
            # XLA's CPU collectives on a machine with fewer cores than devices).
            self.losses.append(np.asarray(loss))

    def finish(self):
        return [np.asarray(w) for w in self.weights], np.array(self.losses)


def measure(replicas: int, kinds: dict, rounds: Optional[dict] = None) -> dict:
    """Seconds per step of each way of training, the best of ``ROUNDS`` chunks of ``CHUNK`` steps,
    the ways taking turns, each chunk after a settling pause, so that other work on the machine weighs on
all alike (``rounds``, when
    given, receives each way's seconds per step of every round). Every way trains on the same
    batches; the results are checked against the first (this project)."""
    x, labels = batches(replicas, WARMUP + ROUNDS * CHUNK)
    runners = {}
    for name, kind in kinds.items():
        try:
            runners[name] = kind(replicas, x, labels)
        except pytest.skip.Exception:
            continue
    best = dict.fromkeys(runners, float("inf"))
    per_round = {name: [] for name in runners} if rounds is None else rounds
    with threadpool_limits(1, user_api="blas"):
        for runner in runners.values():
            runner.steps(0, WARMUP)
        for chunk in range(ROUNDS):
            for name, runner in runners.items():
                first = WARMUP + chunk * CHUNK
                seconds = settled_seconds(lambda: runner.steps(first, CHUNK)) / CHUNK
                best[name] = min(best[name], seconds)
                per_round.setdefault(name, []).append(seconds)
    results = {name: runner.finish() for name, runner in runners.items()}
    ours_weights, ours_losses = results.pop("workbench")
    for name, (weights, losses) in results.items():
        np.testing.assert_allclose(ours_losses.reshape(-1), np.asarray(losses).reshape(-1), rtol=1e-3,
                                   atol=1e-4, err_msg=name)
        for weight, reference in zip(ours_weights, weights):
            np.testing.assert_allclose(weight, reference, rtol=1e-3, atol=1e-4, err_msg=name)
    return best


def report(name: str, ours: float, baselines: dict, target: str) -> dict:
    ratios = {label: ours / seconds for label, seconds in baselines.items()}
    figures = ", ".join(f"{label} {1 / seconds:.0f}" for label, seconds in baselines.items())
    print(f"\n{name}: steps/s workbench {1 / ours:.0f}, {figures}; time ratios "
          + ", ".join(f"{ratio:.2f} vs {label}" for label, ratio in ratios.items()) + f" ({target})")
    return ratios


def round_ratios(rounds: dict, baseline: str) -> list[float]:
    """The workbench's time over ``baseline``'s, round by round; printed with their spread."""
    ratios = [ours / theirs for ours, theirs in zip(rounds["workbench"], rounds.get(baseline, []))]
    if ratios:
        print(f"per round vs {baseline}: min {min(ratios):.2f} median {statistics.median(ratios):.2f} "
              f"max {max(ratios):.2f}; at its speed or faster in {sum(r <= 1.0 for r in ratios)}/{len(ratios)}")
    return ratios



def test_training_step_one_replica():
    best = measure(1, {"workbench": Workbench, "NumPy": NumPyOneReplica, "JAX jit": Jax})
    ours = best.pop("workbench")
    ratios = report("training step, 1 replica", ours, best, "target <= 1.2 vs NumPy")
    assert ratios["NumPy"] <= 1.2


def test_training_step_four_replicas():
    rounds: dict = {}
    best = measure(4, {"workbench": Workbench, "NumPy threads": NumPyThreads, "JAX shard_map": Jax}, rounds)
    ours = best.pop("workbench")
    ratios = report("training step, 4 replicas", ours, best, "target < 1 vs NumPy threads, <= 1 vs JAX")
    per_round = round_ratios(rounds, "JAX shard_map")
    assert ratios["NumPy threads"] < 1.0
    assert all(ratio <= 1.0 for ratio in per_round)  # every round, when JAX is installed


def test_training_step_sixteen_replicas():
    rounds: dict = {}
    best = measure(16, {"workbench": Workbench, "JAX shard_map": Jax}, rounds)
    ours = best.pop("workbench")
    report("training step, 16 replicas", ours, best, "target <= 1 vs JAX in every round")
    assert all(ratio <= 1.0 for ratio in round_ratios(rounds, "JAX shard_map"))
