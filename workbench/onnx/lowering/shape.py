"""Lowering rules of ONNX's shape and data-movement ops: Reshape, Flatten, Squeeze/Unsqueeze,
Transpose, Concat, Split, Slice, Gather, Pad, Tile, Expand, Constant and the ops computed from shapes."""
from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from workbench import ops
from workbench.ir import constant
from workbench.ops.registry import apply

from .indices import integer_indices
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
    for start, end, axis, step in zip(starts, ends, axes, steps):
        x = _slice_axis(x, int(axis) % x.rank, int(start), int(end), int(step))
    return [x]


def _slice_axis(x, axis: int, start: int, end: int, step: int):
    """One axis of an ONNX Slice: a step of 1 or -1 slices; a larger one then subsamples."""
    size = x.shape[axis]
    begin, stop, stride = slice(start, end, step).indices(size)
    count = len(range(begin, stop, stride))
    if count == size and stride == 1:
        return x
    unit = 1 if stride > 0 else -1
    last = begin + (count - 1) * stride if count else begin
    y = ops.slice(x, [begin], [last + unit if last + unit >= 0 else -size - 1], [unit], [axis])
    if abs(stride) > 1 and count:
        strides = [1] * x.rank
        strides[axis] = abs(stride)
        y = ops.subsample(y, strides)
    return y


@lowers("Gather", 1, 11)
def _gather(ctx: NodeContext):
    x = ctx.input(0)
    axis = int(ctx.attrs.get("axis", 0)) % x.rank
    return [ops.gather(x, integer_indices(ctx.input(1)), axis)]


@lowers("Constant", 1, 9, 11)
def _constant(ctx: NodeContext):
    if "value" not in ctx.attrs:
        unsupported = next((name for name in ctx.attrs if not name.startswith("__")), "value")
        raise LoweringError(f"The Constant op attribute '{unsupported}' is not supported.")
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


@lowers("Tile", 1)
def _tile_1(ctx: NodeContext):
    """Tile-1: ``tiles`` copies along one ``axis`` (both inputs constant)."""
    x = ctx.input(0)
    count, axis = int(ctx.value(1).reshape(-1)[0]), int(ctx.value(2).reshape(-1)[0])
    return [ops.concat([x] * count, axis % x.rank) if count != 1 else x]


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
    """The running sum along the axis; ``reverse``: from the end; ``exclusive``: each element left out of its
    own sum (the sums shifted by one, starting at 0)."""
    x = ctx.input(0)
    axis = int(ctx.value(1)) % x.rank
    reverse, exclusive = bool(ctx.attrs.get("reverse", 0)), bool(ctx.attrs.get("exclusive", 0))
    flip = lambda t: ops.slice(t, start=[-1], stop=None, step=[-1], axis=[axis])  # noqa: E731
    y = ops.cumsum(flip(x) if reverse else x, axis)
    if exclusive:
        y = ops.sub(y, flip(x) if reverse else x)
    return [flip(y) if reverse else y]


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
