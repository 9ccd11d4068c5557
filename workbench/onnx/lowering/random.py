"""Lowering rules of RandomUniform, RandomNormal and their -Like forms (ai.onnx, version 1): values
drawn anew each time the op runs, from a seed of the op's own (its name and the count of random ops
lowered before it: two calls of one subgraph draw apart) mixed with the session's seed
(``Session.setRandomSeed``). As in PopART, a node's own ``seed`` attribute is refused."""
from __future__ import annotations

import zlib

import onnx

import numpy as np

from workbench import ops
from workbench.ir import Tensor, constant, dtypes as wdtypes
from workbench.ops import random_fill

from .. import dtypes
from .table import LoweringError, NodeContext, lowers


_COUNT = "random ops"  # the NodeContext.model_state key counting the random ops lowered so far


def op_seed(ctx: NodeContext) -> int:
    """The op's own seed, which its generator mixes with the session's."""
    if "seed" in ctx.attrs:
        raise LoweringError(f"{ctx.label}: Optional seed attribute is not supported. Use session::setRandomSeed "
                            "instead.")
    count = ctx.model_state[_COUNT] = ctx.model_state.get(_COUNT, 0) + 1
    return zlib.crc32(f"{ctx.node.name}/{ctx.node.output[0]}/{count}".encode())


def _shape_and_dtype(ctx: NodeContext, like: bool) -> tuple:
    """The shape and dtype of the random tensor: float32 or float16, as Poplar draws them."""
    code = int(ctx.attrs["dtype"]) if "dtype" in ctx.attrs else None
    if code is not None and code not in _DRAWN:
        raise LoweringError(f"{ctx.label}: The data type {onnx.TensorProto.DataType.Name(code)} is not supported in "
                            "Poplar's random number generators: use FLOAT or FLOAT16")
    if like:
        x = ctx.input(0)
        return tuple(x.shape), dtypes.workbench_dtype(code) if code is not None else x.dtype
    return tuple(int(d) for d in ctx.attrs["shape"]), dtypes.workbench_dtype(code if code is not None else 1)


_DRAWN = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)


def _uniform(ctx: NodeContext, like: bool):
    shape, dtype = _shape_and_dtype(ctx, like)
    return [random_fill.random_uniform_fill(shape, dtype, float(ctx.attrs.get("low", 0.0)),
                                            float(ctx.attrs.get("high", 1.0)), op_seed(ctx))]


def _normal(ctx: NodeContext, like: bool):
    shape, dtype = _shape_and_dtype(ctx, like)
    return [random_fill.random_normal_fill(shape, dtype, float(ctx.attrs.get("mean", 0.0)),
                                           float(ctx.attrs.get("scale", 1.0)), op_seed(ctx))]


lowers("RandomUniform", 1)(lambda ctx: _uniform(ctx, like=False))
lowers("RandomUniformLike", 1)(lambda ctx: _uniform(ctx, like=True))
lowers("RandomNormal", 1)(lambda ctx: _normal(ctx, like=False))
lowers("RandomNormalLike", 1)(lambda ctx: _normal(ctx, like=True))


def dropped(ctx: NodeContext, x: Tensor, mask_shape: tuple, ratio: float) -> tuple[Tensor, Tensor]:
    """Training's dropout of ``x``: a mask of ``mask_shape`` (broadcast over ``x``) drawn anew each run keeps each
    entry with probability 1 - ratio, and the kept values are scaled by 1 / (1 - ratio); with the mask."""
    mask = ops.greater_equal(random_fill.random_uniform_fill(tuple(mask_shape), wdtypes.float32, 0.0, 1.0,
                                                             op_seed(ctx)),
                             constant(np.array(ratio, np.float32)))
    scale = constant(np.array(1.0 / (1.0 - ratio), x.dtype.as_numpy()), x.dtype)
    return ops.mul(ops.mul(x, ops.cast(mask, x.dtype)), scale), mask
