"""Lowering rules of ONNX's recurrent ops (RNN, GRU, LSTM) and Graphcore's LSTM, unrolled over the
sequence into popxl ops: the sequence length is static, so each step is a few matmuls and elementwise
ops. The ops of every step after the first are marked as repeating its code (``REPEATED_STEP``),
as Poplar runs a recurrent layer's step in a loop. Default activations only; no peepholes, clipping
or per-sample sequence lengths."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np

from workbench import ops
from workbench.analysis.code_size import REPEATED_STEP
from workbench.ir import constant, get_current_graph
from workbench.ops.registry import apply

from ..shapes import GRAPHCORE
from .table import LoweringError, NodeContext, lowers

_DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _check(ctx: NodeContext, peephole_input: int = -1) -> None:
    activations = ctx.attrs.get("activations")
    defaults = _DEFAULT_ACTIVATIONS[ctx.op_type]
    if activations and [a.decode() if isinstance(a, bytes) else a for a in activations] not in (defaults, defaults * 2):
        raise LoweringError(f"{ctx.label}: only the default activations are supported, got {activations}")
    if ctx.attrs.get("clip") is not None:
        raise LoweringError(f"{ctx.label}: clip is not supported")
    if ctx.has(4):
        lengths = ctx.value(4)
        if not np.all(lengths == ctx.input(0).shape[0]):
            raise LoweringError(f"{ctx.label}: sequence_lens shorter than the sequence are not supported")
    if peephole_input >= 0 and ctx.has(peephole_input):
        raise LoweringError(f"{ctx.label}: peepholes are not supported")


def _directions(ctx: NodeContext) -> list[bool]:
    """For each direction, whether it runs the sequence backwards."""
    return {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[
        ctx.attrs.get("direction", "forward")]


def _per_direction(t, d: int):
    return ops.squeeze(ops.slice(t, [d], [d + 1], None, [0]), [0])


def _initial(ctx: NodeContext, index: int, d: int, batch: int, hidden: int, like):
    if ctx.has(index):
        return _per_direction(ctx.input(index), d)
    return constant(np.zeros((batch, hidden), like.dtype.as_numpy()), like.dtype)


def _steps(x, backwards: bool) -> list:
    order = range(x.shape[0] - 1, -1, -1) if backwards else range(x.shape[0])
    return [(t, ops.squeeze(ops.slice(x, [t], [t + 1], None, [0]), [0])) for t in order]


@contextmanager
def _step(first: bool) -> Iterator[None]:
    """Mark the ops made inside as repeating an earlier step's code, unless ``first``."""
    graph = get_current_graph()
    before = len(graph.ops)
    yield
    if not first:
        for op in graph.ops[before:]:
            op.meta[REPEATED_STEP] = True


def _sigmoid(t):
    return apply("sigmoid", t)


def _gates(t, count: int) -> list:
    return list(ops.split(t, count, axis=1))


def _run(ctx: NodeContext, gate_count: int, cell_step, extra_state: bool):
    x, w, r = ctx.input(0), ctx.input(1), ctx.input(2)
    hidden = int(ctx.attrs.get("hidden_size") or r.shape[-1])
    batch = x.shape[1]
    ys, last_h, last_c = [], [], []
    for d, backwards in enumerate(_directions(ctx)):
        w_t = ops.transpose(_per_direction(w, d), (1, 0))
        r_t = ops.transpose(_per_direction(r, d), (1, 0))
        bias_w = bias_r = None
        if ctx.has(3):
            bias_w, bias_r = ops.split(_per_direction(ctx.input(3), d), 2, axis=0)
        h = _initial(ctx, 5, d, batch, hidden, x)
        c = _initial(ctx, 6, d, batch, hidden, x) if extra_state else None
        outputs = [None] * x.shape[0]
        for index, (t, x_t) in enumerate(_steps(x, backwards)):
            with _step(index == 0):
                h, c = cell_step(x_t, h, c, w_t, r_t, bias_w, bias_r, gate_count)
            outputs[t] = h
        ys.append(ops.concat([ops.reshape(o, (1, 1, batch, hidden)) for o in outputs], 0))
        last_h.append(ops.reshape(h, (1, batch, hidden)))
        if extra_state:
            last_c.append(ops.reshape(c, (1, batch, hidden)))
    y = ops.concat(ys, 1) if len(ys) > 1 else ys[0]
    y_h = ops.concat(last_h, 0) if len(last_h) > 1 else last_h[0]
    results = [y, y_h]
    if extra_state:
        results.append(ops.concat(last_c, 0) if len(last_c) > 1 else last_c[0])
    return results[:len(ctx.node.output)]


def _affine(x_t, h, w_t, r_t, bias_w, bias_r):
    a = ops.add(ops.matmul(x_t, w_t), ops.matmul(h, r_t))
    if bias_w is not None:
        a = ops.add(a, ops.add(bias_w, bias_r))
    return a


@lowers("RNN", 1, 7)
def _rnn(ctx: NodeContext):
    _check(ctx)

    def step(x_t, h, c, w_t, r_t, bias_w, bias_r, gates):
        return ops.tanh(_affine(x_t, h, w_t, r_t, bias_w, bias_r)), None
    return _run(ctx, 1, step, extra_state=False)


@lowers("LSTM", 1, 7)
def _lstm(ctx: NodeContext):
    _check(ctx, peephole_input=7)

    def step(x_t, h, c, w_t, r_t, bias_w, bias_r, gates):
        i, o, f, g = _gates(_affine(x_t, h, w_t, r_t, bias_w, bias_r), 4)
        c = ops.add(ops.mul(_sigmoid(f), c), ops.mul(_sigmoid(i), ops.tanh(g)))
        return ops.mul(_sigmoid(o), ops.tanh(c)), c
    return _run(ctx, 4, step, extra_state=True)


@lowers("GRU", 1, 3, 7)
def _gru(ctx: NodeContext):
    _check(ctx)
    before_reset = bool(ctx.attrs.get("linear_before_reset", 0))

    def step(x_t, h, c, w_t, r_t, bias_w, bias_r, gates):
        xw = ops.matmul(x_t, w_t)
        if bias_w is not None:
            xw = ops.add(xw, bias_w)
        xz, xr, xh = _gates(xw, 3)
        rz, rr, rh = ops.split(r_t, 3, axis=1)
        bz = br = bh = None
        if bias_r is not None:
            bz, br, bh = ops.split(bias_r, 3, axis=0)

        def plus(a, b):
            return a if b is None else ops.add(a, b)
        z = _sigmoid(ops.add(xz, plus(ops.matmul(h, rz), bz)))
        r = _sigmoid(ops.add(xr, plus(ops.matmul(h, rr), br)))
        if before_reset:
            candidate = ops.tanh(ops.add(xh, ops.mul(r, plus(ops.matmul(h, rh), bh))))
        else:
            candidate = ops.tanh(ops.add(xh, plus(ops.matmul(ops.mul(r, h), rh), bh)))
        one = constant(np.ones((), h.dtype.as_numpy()), h.dtype)
        return ops.add(ops.mul(ops.sub(one, z), candidate), ops.mul(z, h)), None
    return _run(ctx, 3, step, extra_state=False)


@lowers("LSTM", 1, domain=GRAPHCORE)
def _graphcore_lstm(ctx: NodeContext):
    """Graphcore's layout: ``Weights [4, in + hidden, hidden]`` (the input weights above the recurrent
    ones, transposed), ``Bias [4, hidden]`` and the gates in the order forget, input, cell, output;
    ``InitState [2, batch, hidden]`` is ``h`` then ``c``."""
    x, weights = ctx.input(0), ctx.input(1)
    seq, batch, _ = x.shape
    hidden = weights.shape[2]
    joined = ops.concat([ops.squeeze(w, [0]) for w in ops.split(weights, 4, axis=0)], 1)  # [in + hidden, 4 hidden]
    bias = ops.reshape(ctx.input(2), (4 * hidden,)) if ctx.has(2) else None
    if ctx.has(3):
        h, c = (ops.squeeze(s, [0]) for s in ops.split(ctx.input(3), 2, axis=0))
    else:
        h = c = constant(np.zeros((batch, hidden), x.dtype.as_numpy()), x.dtype)
    outputs = []
    for index, (_, x_t) in enumerate(_steps(x, False)):
        with _step(index == 0):
            a = ops.matmul(ops.concat([x_t, h], 1), joined)
            f, i, g, o = _gates(a if bias is None else ops.add(a, bias), 4)
            c = ops.add(ops.mul(_sigmoid(f), c), ops.mul(_sigmoid(i), ops.tanh(g)))
            h = ops.mul(_sigmoid(o), ops.tanh(c))
        outputs.append(ops.reshape(h, (1, batch, hidden)))
    full = int(ctx.attrs.get("output_full_sequence", 1))
    return [ops.concat(outputs, 0) if full else h, c][:len(ctx.node.output)]
