"""Lowering rules of RandomUniform, RandomNormal and their -Like forms (ai.onnx, version 1): values
drawn anew each time the op runs, from the node's ``seed`` or, without one, a seed of its own (its
name and the count of random ops lowered before it: two calls of one subgraph draw apart) mixed with
the session's seed (``Session.setRandomSeed``)."""
from __future__ import annotations

import zlib

from workbench.ops import random_fill

from .. import dtypes
from .table import NodeContext, lowers


_COUNT = "random ops"  # the NodeContext.model_state key counting the random ops lowered so far


def op_seed(ctx: NodeContext) -> tuple[int, bool]:
    """The seed of a random op's generator and whether the session's seed is mixed in: the node's
    ``seed`` attribute alone, else one of its own with the session's."""
    if "seed" in ctx.attrs:
        return int(ctx.attrs["seed"]), False
    count = ctx.model_state[_COUNT] = ctx.model_state.get(_COUNT, 0) + 1
    return zlib.crc32(f"{ctx.node.name}/{ctx.node.output[0]}/{count}".encode()), True


def _shape_and_dtype(ctx: NodeContext, like: bool) -> tuple:
    if like:
        x = ctx.input(0)
        dtype = dtypes.workbench_dtype(int(ctx.attrs["dtype"])) if "dtype" in ctx.attrs else x.dtype
        return tuple(x.shape), dtype
    return tuple(int(d) for d in ctx.attrs["shape"]), dtypes.workbench_dtype(int(ctx.attrs.get("dtype", 1)))


def _uniform(ctx: NodeContext, like: bool):
    shape, dtype = _shape_and_dtype(ctx, like)
    return [random_fill.random_uniform_fill(shape, dtype, float(ctx.attrs.get("low", 0.0)),
                                            float(ctx.attrs.get("high", 1.0)), *op_seed(ctx))]


def _normal(ctx: NodeContext, like: bool):
    shape, dtype = _shape_and_dtype(ctx, like)
    return [random_fill.random_normal_fill(shape, dtype, float(ctx.attrs.get("mean", 0.0)),
                                           float(ctx.attrs.get("scale", 1.0)), *op_seed(ctx))]


lowers("RandomUniform", 1)(lambda ctx: _uniform(ctx, like=False))
lowers("RandomUniformLike", 1)(lambda ctx: _uniform(ctx, like=True))
lowers("RandomNormal", 1)(lambda ctx: _normal(ctx, like=False))
lowers("RandomNormalLike", 1)(lambda ctx: _normal(ctx, like=True))
