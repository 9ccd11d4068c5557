"""More lowering rules, most composed from popxl ops: Resize/Upsample (nearest), ScatterElements,
PRelu, DepthToSpace/SpaceToDepth, Mod, MeanVarianceNormalization, LpNormalization, Hardmax, Shrink,
ConstantOfShape, Range, Size, EyeLike, Round, GatherElements, GatherND, LRN and GlobalLpPool."""
from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from workbench import ops
from workbench.ir import constant
from workbench.ops.registry import apply

from .table import LoweringError, NodeContext, lowers


def _scalar(value, like):
    return constant(np.array(value, like.dtype.as_numpy()), like.dtype)


def _nearest(ctx: NodeContext, x, scales):
    if ctx.attrs.get("mode", "nearest") != "nearest":
        raise LoweringError(f"{ctx.label}: only mode 'nearest' is supported")
    coordinates = ctx.attrs.get("coordinate_transformation_mode", "asymmetric" if ctx.since < 11 else "half_pixel")
    nearest = ctx.attrs.get("nearest_mode", "floor" if ctx.since < 11 else "round_prefer_floor")
    return [ops.interpolate(x, tuple(float(s) for s in scales), "nearest", nearest, coordinates)]


@lowers("Upsample", 9)
def _upsample(ctx: NodeContext):
    return _nearest(ctx, ctx.input(0), ctx.value(1).tolist())


@lowers("Resize", 10, 11)
def _resize(ctx: NodeContext):
    x = ctx.input(0)
    if ctx.since == 10:
        return _nearest(ctx, x, ctx.value(1).tolist())
    scales = ctx.value(2).tolist() if ctx.has(2) and ctx.value(2).size else None
    if scales is None:
        scales = [o / i for o, i in zip(ctx.value(3).tolist(), x.shape)]
    return _nearest(ctx, x, scales)


@lowers("ScatterElements", 11)
@lowers("Scatter", 9)
def _scatter(ctx: NodeContext):
    x = ctx.input(0)
    return [ops.scatter(x, ctx.input(1), ctx.input(2), int(ctx.attrs.get("axis", 0)) % x.rank)]


@lowers("PRelu", 6, 7, 9)
def _prelu(ctx: NodeContext):
    x, slope = ctx.input(0), ctx.input(1)
    if ctx.since == 6 and x.rank > 2 and slope.shape == (x.shape[1],):
        # PRelu-6 shares a slope per channel (axis 1); from PRelu-7 the slope broadcasts as NumPy does.
        slope = ops.reshape(slope, (x.shape[1],) + (1,) * (x.rank - 2))
    return [ops.where(ops.greater(_scalar(0, x), x), ops.mul(x, slope), x)]


@lowers("DepthToSpace", 1, 11)
def _depth_to_space(ctx: NodeContext):
    x = ctx.input(0)
    n, c, h, w = x.shape
    b = int(ctx.attrs["blocksize"])
    if ctx.attrs.get("mode", "DCR") == "DCR":
        y = ops.transpose(ops.reshape(x, (n, b, b, c // (b * b), h, w)), (0, 3, 4, 1, 5, 2))
    else:
        y = ops.transpose(ops.reshape(x, (n, c // (b * b), b, b, h, w)), (0, 1, 4, 2, 5, 3))
    return [ops.reshape(y, (n, c // (b * b), h * b, w * b))]


@lowers("SpaceToDepth", 1)
def _space_to_depth(ctx: NodeContext):
    x = ctx.input(0)
    n, c, h, w = x.shape
    b = int(ctx.attrs["blocksize"])
    y = ops.transpose(ops.reshape(x, (n, c, h // b, b, w // b, b)), (0, 3, 5, 1, 2, 4))
    return [ops.reshape(y, (n, c * b * b, h // b, w // b))]


@lowers("Mod", 10)
def _mod(ctx: NodeContext):
    a, b = ctx.input(0), ctx.input(1)
    if ctx.attrs.get("fmod", 0):
        return [ops.fmod(a, b)]
    remainder = ops.fmod(a, b)
    zero = _scalar(0, remainder)
    # Python's sign rule: a remainder whose sign differs from the divisor's moves by one divisor.
    differs = ops.logical_and(ops.logical_not(ops.equal(remainder, zero)),
                              ops.logical_not(ops.equal(ops.greater(remainder, zero), ops.greater(b, zero))))
    return [ops.where(differs, ops.add(remainder, b), remainder)]


@lowers("MeanVarianceNormalization", 9)
def _mvn(ctx: NodeContext):
    x = ctx.input(0)
    axes = tuple(int(a) % x.rank for a in ctx.attrs.get("axes", [0, 2, 3]))
    centred = ops.sub(x, ops.mean(x, axis=axes, keepdims=True))
    variance = ops.mean(ops.mul(centred, centred), axis=axes, keepdims=True)
    return [ops.div(centred, ops.add(ops.sqrt(variance), _scalar(1e-9, x)))]


@lowers("LpNormalization", 1)
def _lp_normalization(ctx: NodeContext):
    x = ctx.input(0)
    axis = int(ctx.attrs.get("axis", -1)) % x.rank
    norm = (ops.l2 if int(ctx.attrs.get("p", 2)) == 2 else ops.l1)(x, axis=axis, keepdims=True)
    # A zero norm means a zero slice, which stays zero (divided by 1, as onnxruntime does, not NaN).
    zero = ops.cast(ops.equal(norm, _scalar(0, norm)), norm.dtype)
    return [ops.div(x, ops.add(norm, zero))]


@lowers("Hardmax", 1, 11)
def _hardmax(ctx: NodeContext):
    x = ctx.input(0)
    axis = int(ctx.attrs.get("axis", 1)) % x.rank
    rows = int(np.prod(x.shape[:axis], dtype=np.int64))
    flat = ops.reshape(x, (rows, -1))
    hot = ops.onehot(ops.argmax(flat, 1), constant(np.array(flat.shape[1], np.int32)),
                     constant(np.array([0, 1], x.dtype.as_numpy()), x.dtype), 1)
    return [ops.reshape(hot, x.shape)]


@lowers("Shrink", 9)
def _shrink(ctx: NodeContext):
    x = ctx.input(0)
    bias, lambd = float(ctx.attrs.get("bias", 0.0)), float(ctx.attrs.get("lambd", 0.5))
    below = ops.greater(_scalar(-lambd, x), x)
    above = ops.greater(x, _scalar(lambd, x))
    zero = _scalar(0, x)
    return [ops.where(below, ops.add(x, _scalar(bias, x)), ops.where(above, ops.sub(x, _scalar(bias, x)), zero))]


@lowers("ConstantOfShape", 9)
def _constant_of_shape(ctx: NodeContext):
    value = ctx.attrs.get("value")
    fill = numpy_helper.to_array(value).reshape(-1)[0] if value is not None else np.float32(0)
    return [constant(np.full(ctx.output_shape(), fill, fill.dtype), downcast=False)]


@lowers("Range", 11)
def _range(ctx: NodeContext):
    start, limit, delta = (ctx.value(i).reshape(()) for i in range(3))
    return [constant(np.arange(start, limit, delta).astype(start.dtype), downcast=False)]


@lowers("Size", 1)
def _size(ctx: NodeContext):
    return [constant(np.array(int(np.prod(ctx.input(0).shape, dtype=np.int64)), np.int64), downcast=False)]


@lowers("EyeLike", 9)
def _eye_like(ctx: NodeContext):
    rows, cols = ctx.output_shape()
    dtype = ctx.output_dtype()
    return [constant(np.eye(rows, cols, int(ctx.attrs.get("k", 0)), dtype.as_numpy()), dtype, downcast=False)]


@lowers("Round", 11)
def _round(ctx: NodeContext):
    return [apply("round", ctx.input(0))]


@lowers("GatherElements", 11)
def _gather_elements(ctx: NodeContext):
    x = ctx.input(0)
    return [apply("gather_elements", x, ctx.input(1), axis=int(ctx.attrs.get("axis", 0)) % x.rank)]


@lowers("GatherND", 11)
def _gather_nd(ctx: NodeContext):
    return [apply("gather_nd", ctx.input(0), ctx.input(1), batch_dims=0)]


@lowers("LRN", 1)
def _lrn(ctx: NodeContext):
    return [apply("lrn", ctx.input(0), size=int(ctx.attrs["size"]), alpha=float(ctx.attrs.get("alpha", 1e-4)),
                  beta=float(ctx.attrs.get("beta", 0.75)), bias=float(ctx.attrs.get("bias", 1.0)))]


@lowers("GlobalLpPool", 1, 2)
def _global_lp_pool(ctx: NodeContext):
    x = ctx.input(0)
    axes = tuple(range(2, x.rank))
    p = int(ctx.attrs.get("p", 2))
    if p == 1:
        return [ops.l1(x, axis=axes, keepdims=True)]
    if p == 2:
        return [ops.l2(x, axis=axes, keepdims=True)]
    powered = ops.sum(ops.pow(ops.abs(x), _scalar(p, x)), axis=axes, keepdims=True)
    return [ops.pow(powered, _scalar(1.0 / p, x))]
