"""Lowering rules of ONNX's shape and data-movement ops: Reshape, Flatten, Squeeze/Unsqueeze,
Transpose, Concat, Split, Slice, Gather, Pad, Tile, Expand, Constant and the ops computed from shapes."""
from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from workbench import ops
from workbench.ir import constant
from workbench.ops.registry import apply

from .table import LoweringError, NodeContext, lowers


def _to_output_shape(ctx: NodeContext):
    x, shape = ctx.input(0), ctx.output_shape()
    return [x if tuple(x.shape) == shape else ops.reshape(x, shape)]


lowers("Reshape", 5)(_to_output_shape)
lowers("Flatten", 1, 9, 11)(_to_output_shape)
lowers("Squeeze", 1, 11)(_to_output_shape)
lowers("Unsqueeze", 1, 11)(_to_output_shape)


@lowers("Transpose", 1)
def _transpose(ctx: NodeContext):
    x = ctx.input(0)
    perm = ctx.attrs.get("perm") or list(reversed(range(x.rank)))
    return [ops.transpose(x, tuple(int(p) for p in perm))]


@lowers("Concat", 1, 4, 11)
def _concat(ctx: NodeContext):
    inputs = ctx.inputs()
    axis = int(ctx.attrs.get("axis", 1))
    return [ops.concat(inputs, axis % inputs[0].rank) if len(inputs) > 1 else inputs[0]]


@lowers("Split", 2, 11)
def _split(ctx: NodeContext):
    x = ctx.input(0)
    axis = int(ctx.attrs.get("axis", 0)) % x.rank
    sizes = [ctx.output_shape(i)[axis] for i in range(len(ctx.node.output))]
    return list(ops.split(x, sizes, axis)) if len(sizes) > 1 else [x]


@lowers("Slice", 1, 10, 11)
def _slice(ctx: NodeContext):
    x = ctx.input(0)
    if ctx.since < 10:
        starts, ends = ctx.attrs["starts"], ctx.attrs["ends"]
        axes, steps = ctx.attrs.get("axes") or list(range(len(starts))), [1] * len(starts)
    else:
        starts, ends = ctx.value(1).tolist(), ctx.value(2).tolist()
        axes = ctx.value(3).tolist() if ctx.has(3) else list(range(len(starts)))
        steps = ctx.value(4).tolist() if ctx.has(4) else [1] * len(starts)
    key = [slice(None)] * x.rank
    for start, end, axis, step in zip(starts, ends, axes, steps):
        key[axis % x.rank] = slice(*slice(int(start), int(end), int(step)).indices(x.shape[axis % x.rank]))
    begin = [k.start if k.start is not None else 0 for k in key]
    stop = [k.stop for k in key]
    step = [k.step or 1 for k in key]
    axis_list = [i for i, k in enumerate(key) if k != slice(None)]
    if not axis_list:
        return [x]
    # A negative step whose stop passed the front comes back from indices() as -1: keep it open.
    return [ops.slice(x, [begin[a] for a in axis_list],
                      [stop[a] if stop[a] >= 0 else -x.shape[a] - 1 for a in axis_list],
                      [step[a] for a in axis_list], axis_list)]


@lowers("Gather", 1, 11)
def _gather(ctx: NodeContext):
    x = ctx.input(0)
    axis = int(ctx.attrs.get("axis", 0)) % x.rank
    return [ops.gather(x, ctx.input(1), axis)]


@lowers("Constant", 1, 9, 11)
def _constant(ctx: NodeContext):
    if "value" not in ctx.attrs:
        raise LoweringError(f"{ctx.label}: only Constant nodes with a tensor 'value' are supported")
    value = ctx.attrs["value"]
    array = numpy_helper.to_array(value) if not isinstance(value, np.ndarray) else value
    return [constant(array, downcast=False)]


@lowers("Pad", 2, 11)
def _pad(ctx: NodeContext):
    x = ctx.input(0)
    if ctx.since < 11:
        pads, value = ctx.attrs["pads"], float(ctx.attrs.get("value", 0.0))
    else:
        pads = ctx.value(1).tolist()
        value = float(ctx.value(2)) if ctx.has(2) else 0.0
    return [apply("pad", x, pads=tuple(int(p) for p in pads), mode=ctx.attrs.get("mode", "constant"), value=value)]


@lowers("Tile", 6)
def _tile(ctx: NodeContext):
    x = ctx.input(0)
    for axis, count in enumerate(ctx.value(1).tolist()):
        if count != 1:
            x = ops.concat([x] * int(count), axis)
    return [x]


@lowers("Expand", 8)
def _expand(ctx: NodeContext):
    x, shape = ctx.input(0), ctx.output_shape()
    if tuple(x.shape) == shape:
        return [x]
    return [ops.add(x, constant(np.zeros(shape, x.dtype.as_numpy()), x.dtype))]


@lowers("CumSum", 11)
def _cumsum(ctx: NodeContext):
    if ctx.attrs.get("exclusive", 0) or ctx.attrs.get("reverse", 0):
        raise LoweringError(f"{ctx.label}: CumSum with exclusive or reverse is not supported")
    x = ctx.input(0)
    return [ops.cumsum(x, int(ctx.value(1)) % x.rank)]


@lowers("OneHot", 9, 11)
def _onehot(ctx: NodeContext):
    indices, values = ctx.input(0), ctx.input(2)
    depth = int(ctx.value(1))
    axis = int(ctx.attrs.get("axis", -1))
    y = ops.onehot(indices, constant(np.array(depth, np.int32)), values, axis if axis >= 0 else indices.rank + 1 + axis)
    return [y]


@lowers("Shape", 1)
def _shape(ctx: NodeContext):
    return [constant(np.array(ctx.input(0).shape, np.int64), downcast=False)]
