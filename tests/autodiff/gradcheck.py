"""Gradient checks: autodiff's gradients against central finite differences, in float64.

``check_gradients(fn, *arrays)`` builds a graph of ``fn``, differentiates it, runs the forward and the
gradient graph on the IPU model, and compares each input gradient with finite differences of the
forward graph itself. The outputs are reduced to one number by a fixed random projection
``L = sum_j <P_j, out_j>``, so any output shape works and every output element counts.

Each check records the op types that lay on a gradient path (``COVERED``), so that a test can tell
which gradient rules the checks exercised.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, Optional, Sequence

import numpy as np

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff

# op type -> the test files whose gradient checks ran through it
COVERED: dict[str, set[str]] = {}


def check_gradients(fn: Callable[..., object], *arrays: np.ndarray, wrt: Optional[Iterable[int]] = None,
                    rtol: float = 1e-5, atol: float = 1e-6, delta: float = 1e-6, seed: int = 0
                    ) -> dict[int, np.ndarray]:
    """Check the gradients of ``fn`` (a function of tensors returning a tensor or a tuple of tensors)
    at ``arrays``. Floating-point arrays become float64 inputs; the others (indices, masks) are passed
    as they are and get no gradient. ``wrt`` picks the inputs to check (default: every float input).

    Returns the analytic gradients by input position; raises AssertionError naming the input, the
    worst element and both values when a gradient is off.
    """
    arrays = [_as_input(a) for a in arrays]
    positions = _positions(arrays, wrt)
    rng = np.random.default_rng(seed)
    analytic, projections = _analytic_gradients(fn, arrays, positions, rng)
    numeric = _numeric_gradients(fn, arrays, positions, projections, delta)
    name = getattr(fn, "__name__", repr(fn))
    for position in positions:
        _compare(name, position, arrays[position], analytic[position], numeric[position], rtol, atol)
    return analytic


def record_coverage(graph: popxl.Graph, required: Sequence[popxl.Tensor]) -> None:
    """Note the op types of ``graph`` (and of the graphs it calls) on a path from ``required`` to an
    output, for the current test file."""
    test_file = os.environ.get("PYTEST_CURRENT_TEST", "?").split("::")[0]
    for op_type in _types_on_paths(graph, set(required), set()):
        COVERED.setdefault(op_type, set()).add(os.path.basename(test_file))


def _types_on_paths(graph: popxl.Graph, required: set, seen: set) -> set[str]:
    needs = {t for t in required if t.dtype.is_floating_point}
    on_path = []
    for op in graph.ops:
        if any(t in needs for t in op.inputs):
            needs.update(t for t in op.outputs if t.dtype.is_floating_point)
            on_path.append(op)
    reaches = {t for t in graph.outputs if t.dtype.is_floating_point}
    types = set()
    for op in reversed(on_path):
        if any(t in reaches for t in op.outputs):
            reaches.update(t for t in op.inputs if t.dtype.is_floating_point)
            types.add(op.type)
            for callee in op.called_graphs:
                if callee not in seen:
                    seen.add(callee)
                    types |= _types_on_paths(callee, set(callee.inputs), seen)
    return types


def _as_input(array) -> np.ndarray:
    array = np.asarray(array)
    return array.astype(np.float64) if np.issubdtype(array.dtype, np.floating) else array


def _positions(arrays: Sequence[np.ndarray], wrt: Optional[Iterable[int]]) -> list[int]:
    if wrt is None:
        positions = [i for i, a in enumerate(arrays) if np.issubdtype(a.dtype, np.floating)]
    else:
        positions = list(wrt)
        for i in positions:
            if not np.issubdtype(arrays[i].dtype, np.floating):
                raise ValueError(f"check_gradients: input {i} is {arrays[i].dtype}, not a float array")
    if not positions:
        raise ValueError("check_gradients: no float input to check")
    return positions


def _build_forward(ir: popxl.Ir, fn: Callable, arrays: Sequence[np.ndarray]):
    graph = ir.create_empty_graph(getattr(fn, "__name__", "fn").strip("<>"))
    with graph:
        inputs = [popxl.graph_input(a.shape, popxl.dtype.as_dtype(a.dtype), f"x{i}") for i, a in enumerate(arrays)]
        result = fn(*inputs)
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        for output in outputs:
            popxl.graph_output(output)
    floats = [i for i, t in enumerate(outputs) if t.dtype.is_floating_point]
    if not floats:
        raise ValueError("check_gradients: fn returns no float tensor to differentiate")
    return graph, inputs, outputs, floats


def _load(arrays: Sequence[np.ndarray], prefix: str):
    streams = [popxl.h2d_stream(a.shape, popxl.dtype.as_dtype(a.dtype), f"{prefix}{i}") for i, a in enumerate(arrays)]
    return streams, [ops.host_load(s) for s in streams]


def _analytic_gradients(fn, arrays, positions, rng):
    ir = popxl.Ir()
    with ir.main_graph:
        graph, inputs, outputs, floats = _build_forward(ir, fn, arrays)
        required = [inputs[i] for i in positions]
        record_coverage(graph, required)
        info = autodiff(graph, grads_provided=[outputs[i] for i in floats], grads_required=required)
        projections = {i: rng.standard_normal(outputs[i].shape).astype(outputs[i].dtype.as_numpy()) for i in floats}
        streams, loaded = _load(arrays, "x")
        fwd_call = ops.call_with_info(graph, *loaded)
        seeds = [popxl.constant(projections[i], outputs[i].dtype, name=f"seed{i}") for i in floats]
        grads = ops.call(info.graph, *seeds, inputs_dict=info.inputs_dict(fwd_call))
        out_streams = []
        for position, grad in zip(positions, grads):
            stream = popxl.d2h_stream(grad.shape, grad.dtype, f"grad{position}")
            ops.host_store(stream, grad)
            out_streams.append(stream)
    with popxl.Session(ir, "ipu_model") as session:
        results = session.run(dict(zip(streams, arrays)))
    return {p: results[s] for p, s in zip(positions, out_streams)}, projections


def _numeric_gradients(fn, arrays, positions, projections, delta):
    """Central differences, all evaluations in one run: a loop loads a perturbed copy of the inputs per
    iteration and stores the outputs."""
    steps = [(p, index) for p in positions for index in np.ndindex(arrays[p].shape)]
    count = 2 * len(steps)
    stacked = [np.repeat(a[np.newaxis], count, axis=0) for a in arrays]
    sizes = {}
    for k, (p, index) in enumerate(steps):
        h = delta * max(1.0, abs(float(arrays[p][index])))
        stacked[p][(2 * k,) + index] += h
        stacked[p][(2 * k + 1,) + index] -= h
        sizes[k] = h
    ir = popxl.Ir()
    ir.num_host_transfers = count
    with ir.main_graph:
        graph, _, outputs, floats = _build_forward(ir, fn, arrays)
        streams = [popxl.h2d_stream(a.shape, popxl.dtype.as_dtype(a.dtype), f"x{i}") for i, a in enumerate(arrays)]
        out_streams = {i: popxl.d2h_stream(outputs[i].shape, outputs[i].dtype, f"out{i}") for i in floats}
        body = ir.create_empty_graph("perturbed")
        with body:
            results = ops.call(graph, *[ops.host_load(s) for s in streams])
            for i, stream in out_streams.items():
                ops.host_store(stream, results[i])
        ops.repeat(body, count)
    with popxl.Session(ir, "ipu_model") as session:
        values = session.run(dict(zip(streams, stacked)))
    losses = sum(np.sum(values[s].reshape(count, -1).astype(np.float64) * projections[i].reshape(1, -1), axis=1)
                 for i, s in out_streams.items())
    numeric = {p: np.zeros(arrays[p].shape) for p in positions}
    for k, (p, index) in enumerate(steps):
        numeric[p][index] = (losses[2 * k] - losses[2 * k + 1]) / (2 * sizes[k])
    return numeric


def _compare(name, position, value, analytic, numeric, rtol, atol) -> None:
    if analytic.shape != numeric.shape:
        raise AssertionError(f"{name}: the gradient of input {position} has shape {analytic.shape}, "
                             f"expected {numeric.shape}")
    error = np.abs(analytic - numeric) - (atol + rtol * np.abs(numeric))
    if np.all(error <= 0):
        return
    worst = np.unravel_index(np.nanargmax(np.where(np.isnan(error), np.inf, error)), error.shape)
    raise AssertionError(
        f"{name}: the gradient of input {position} (shape {value.shape}) differs from finite differences "
        f"at {int(np.sum(~(error <= 0)))} of {error.size} elements; worst at index {tuple(map(int, worst))}: "
        f"input {value[worst]!r}, autodiff {analytic[worst]!r}, finite differences {numeric[worst]!r} "
        f"(rtol={rtol}, atol={atol})\nautodiff:\n{analytic}\nfinite differences:\n{numeric}")
