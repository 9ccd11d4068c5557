"""Gradient checks across replicas and IPUs: autodiff's gradients on every replica against central
differences of one loss, in float64.

A value may be held in several places: by the replicas of a set (``shared`` inputs, ``once``
outputs; the sets are ``holders``, by default one set of all replicas) or by several IPUs of a
replica (``tied`` inputs, ``tied_outputs``). Following the collectives' gradients, such a value
counts once in the loss and each place holding it receives its whole gradient. Everything else
counts per replica: the loss is

    L = sum over outputs j and replicas r of <P_jr, out_jr>

with random projections P, one per replica, the same within each holder set for ``once`` outputs
(and the same for all outputs of a ``tied_outputs`` group), of which only the set's first replica
(the group's first output) counts.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional, Sequence

import numpy as np

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff

from gradcheck import record_coverage


def check_replicated_gradients(fn: Callable[..., object], *arrays: np.ndarray, replicas: int = 1,
                               shared: Iterable[int] = (), once: Iterable[int] = (),
                               holders: Optional[Sequence[Sequence[int]]] = None,
                               tied: Sequence[Sequence[int]] = (), tied_outputs: Sequence[Sequence[int]] = (),
                               rtol: float = 1e-5, atol: float = 1e-6, delta: float = 1e-6,
                               seed: int = 0) -> list[np.ndarray]:
    """Check the gradients of ``fn`` for its float inputs. ``arrays[i]`` holds one value per replica
    (shape ``[replicas, *shape]``); for ``shared`` inputs one value per holder set
    (``[len(holders), *shape]``), or just ``[*shape]`` with the default single set. Inputs of a
    ``tied`` group hold the same data and are perturbed together.

    Returns the analytic gradients, ``[replicas, *shape]`` per float input.
    """
    shared = set(shared)
    sets = [list(range(replicas))] if holders is None else [list(h) for h in holders]
    data = [_per_replica(np.asarray(a), replicas, sets if i in shared else None, holders is None)
            for i, a in enumerate(arrays)]
    positions = [i for i, a in enumerate(data) if np.issubdtype(a.dtype, np.floating)]
    groups = _perturbation_groups(positions, shared, tied, replicas, sets)
    for group in groups:
        values = [data[i][r] for i, r in group]
        assert all(np.array_equal(v, values[0]) for v in values), f"inputs {group} must hold the same data"

    rng = np.random.default_rng(seed)
    forward = _Forward(fn, data, replicas)
    projections, counted = _projections(forward.output_shapes, replicas, set(once), sets, tied_outputs, rng)
    analytic, outputs = _analytic(forward, data, positions, projections, replicas)
    for j in set(once):
        assert all(np.array_equal(outputs[j][r], outputs[j][h[0]]) for h in sets for r in h), \
            f"output {j} differs between the replicas of a holder set, so it cannot count once"

    steps = [(group, index) for group in groups for index in np.ndindex(data[group[0][0]].shape[1:])]
    losses = forward.losses(_perturbed(data, steps, delta), projections, counted)
    for k, (group, index) in enumerate(steps):
        size = delta * max(1.0, abs(float(data[group[0][0]][(group[0][1],) + index])))
        numeric = (losses[2 * k] - losses[2 * k + 1]) / (2 * size)
        for i, r in group:
            value = analytic[i][(r,) + index]
            assert abs(value - numeric) <= atol + rtol * abs(numeric), (
                f"gradient of input {i} on replica {r} at {index}: autodiff {value!r}, finite differences "
                f"{numeric!r} (perturbing {group})")
    return [analytic[i] for i in positions]


def _per_replica(array: np.ndarray, replicas: int, sets, single: bool) -> np.ndarray:
    """``[replicas, *shape]``; a shared input's value copied to every replica of its holder set."""
    if np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float64)
    if sets is None:
        assert array.shape[0] == replicas, f"expected one value per replica, got shape {array.shape}"
        return array
    values = array[np.newaxis] if single else array
    assert len(values) == len(sets), f"expected one value per holder set, got shape {array.shape}"
    result = np.empty((replicas, *values.shape[1:]), values.dtype)
    for value, members in zip(values, sets):
        result[members] = value
    return result


def _perturbation_groups(positions, shared, tied, replicas, sets) -> list[list[tuple[int, int]]]:
    """Sets of (input, replica) places holding one value, perturbed together."""
    tied = [list(t) for t in tied]
    alone = [[p] for p in positions if not any(p in t for t in tied)]
    groups = []
    for inputs in tied + alone:
        if inputs[0] in shared:
            groups.extend([(i, r) for i in inputs for r in members] for members in sets)
        else:
            groups.extend([(i, r) for i in inputs] for r in range(replicas))
    return groups


def _projections(shapes, replicas, once, sets, tied_outputs, rng):
    """Per float output, projections ``[replicas, *shape]`` and the 0/1 weights of its replicas in
    the loss."""
    projections, counted = {}, {}
    for j, shape in shapes.items():
        group = next((list(t) for t in tied_outputs if j in t), [j])
        if group[0] != j:
            projections[j] = projections[group[0]]
            counted[j] = np.zeros(replicas)
            continue
        if j in once:
            projections[j], counted[j] = np.empty((replicas, *shape)), np.zeros(replicas)
            for members in sets:
                projections[j][members] = rng.standard_normal(shape)
                counted[j][members[0]] = 1
        else:
            projections[j] = rng.standard_normal((replicas, *shape))
            counted[j] = np.ones(replicas)
    return projections, counted


def _perturbed(data, steps, delta) -> list[np.ndarray]:
    """Per input, ``[2 * len(steps), replicas, *shape]``: each step's group moved up, then down."""
    stacked = [np.repeat(a[np.newaxis], 2 * len(steps), axis=0) for a in data]
    for k, (group, index) in enumerate(steps):
        first, replica = group[0]
        size = delta * max(1.0, abs(float(data[first][(replica,) + index])))
        for i, r in group:
            stacked[i][(2 * k, r) + index] += size
            stacked[i][(2 * k + 1, r) + index] -= size
    return stacked


def _host(array: np.ndarray, replicas: int) -> np.ndarray:
    """A per-replica array as a stream takes it: without the replica axis when there is one replica."""
    return array if replicas > 1 else array[0]


def _ir(replicas: int) -> popxl.Ir:
    return popxl.Ir(replication=replicas) if replicas > 1 else popxl.Ir()


class _Forward:
    """``fn`` as a graph of one Ir per use, with its float outputs."""

    def __init__(self, fn, data, replicas):
        self.fn, self.data, self.replicas = fn, data, replicas
        probe = _ir(replicas)
        with probe.main_graph:
            _, _, outputs, floats = self.build(probe)
        self.output_shapes = {j: outputs[j].shape for j in floats}

    def build(self, ir: popxl.Ir):
        graph = ir.create_empty_graph("forward")
        with graph:
            inputs = [popxl.graph_input(a.shape[1:], popxl.dtype.as_dtype(a.dtype), f"x{i}")
                      for i, a in enumerate(self.data)]
            result = self.fn(*inputs)
            outputs = list(result) if isinstance(result, (tuple, list)) else [result]
            for output in outputs:
                popxl.graph_output(output)
        return graph, inputs, outputs, [j for j, t in enumerate(outputs) if t.dtype.is_floating_point]

    def losses(self, stacked, projections, counted) -> np.ndarray:
        """The loss of each perturbed copy of the inputs, all evaluated in one run."""
        count = stacked[0].shape[0]
        ir = _ir(self.replicas)
        ir.num_host_transfers = count
        with ir.main_graph:
            graph, _, outputs, floats = self.build(ir)
            streams = [popxl.h2d_stream(a.shape[1:], popxl.dtype.as_dtype(a.dtype), f"x{i}")
                       for i, a in enumerate(self.data)]
            out_streams = {j: popxl.d2h_stream(outputs[j].shape, outputs[j].dtype, f"out{j}") for j in floats}
            body = ir.create_empty_graph("perturbed")
            with body:
                results = ops.call(graph, *[ops.host_load(s) for s in streams])
                for j, stream in out_streams.items():
                    ops.host_store(stream, results[j])
            ops.repeat(body, count)
        feeds = {s: a if self.replicas > 1 else a[:, 0] for s, a in zip(streams, stacked)}
        with popxl.Session(ir, "ipu_model") as session:
            values = session.run(feeds)
        total = np.zeros(count)
        for j, stream in out_streams.items():
            value = values[stream].reshape((count, self.replicas, -1))
            weighted = projections[j].reshape(1, self.replicas, -1) * counted[j].reshape(1, -1, 1)
            total += np.sum(value * weighted, axis=(1, 2))
        return total


def _analytic(forward: _Forward, data, positions, projections, replicas):
    ir = _ir(replicas)
    with ir.main_graph:
        graph, inputs, outputs, floats = forward.build(ir)
        required = [inputs[i] for i in positions]
        record_coverage(graph, required)
        info = autodiff(graph, grads_provided=[outputs[j] for j in floats], grads_required=required)
        streams = [popxl.h2d_stream(a.shape[1:], popxl.dtype.as_dtype(a.dtype), f"x{i}") for i, a in enumerate(data)]
        seed_streams = [popxl.h2d_stream(outputs[j].shape, outputs[j].dtype, f"seed{j}") for j in floats]
        call = ops.call_with_info(graph, *[ops.host_load(s) for s in streams])
        grads = ops.call(info.graph, *[ops.host_load(s) for s in seed_streams], inputs_dict=info.inputs_dict(call))
        grad_streams = []
        for position, grad in zip(positions, grads):
            stream = popxl.d2h_stream(grad.shape, grad.dtype, f"grad{position}")
            ops.host_store(stream, grad)
            grad_streams.append(stream)
        out_streams = {}
        for j in floats:
            out_streams[j] = popxl.d2h_stream(outputs[j].shape, outputs[j].dtype, f"out{j}")
            ops.host_store(out_streams[j], call.outputs[j])
    feeds = {s: _host(a, replicas) for s, a in zip(streams, data)}
    feeds.update({s: _host(projections[j], replicas) for s, j in zip(seed_streams, floats)})
    with popxl.Session(ir, "ipu_model") as session:
        results = session.run(feeds)
    shape = (lambda a: a) if replicas > 1 else (lambda a: a[np.newaxis])
    analytic = {p: shape(results[s]) for p, s in zip(positions, grad_streams)}
    return analytic, {j: shape(results[s]) for j, s in out_streams.items()}
