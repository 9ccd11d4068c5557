"""Gathers and scatters along an axis, and one-hot encoding.

Gather follows ``numpy.take``. Without ``zero_OOR`` the IPU leaves out-of-range indices undefined;
here they wrap around the axis (so negative indices count from the end, as in NumPy).
"""
from __future__ import annotations

from typing import Literal, Optional

import numpy as np

from workbench.ir import Constant, Tensor, TensorSpec, constant, dtypes

from . import grad_blocks as blocks
from .arguments import expect_tensors
from .elementwise import add, equal, fmod, greater, logical_and, mul, sub
from .elementwise_nary import where
from .reductions import sum as reduce_sum
from .registry import OpDef, apply, register
from .rules import check_dtype, normalize_axis, same_dtype

__all__ = ["gather", "groupedgather", "tied_gather", "scatter", "scatter_reduce", "onehot"]

ScatterReductionType = Literal["sum", "min", "max", "none"]


# ----- gather -----
def _gather_shape(op_type: str, data: TensorSpec, indices: TensorSpec, axis: int) -> tuple[int, ...]:
    check_dtype(op_type, indices, "int")
    return data.shape[:axis] + indices.shape + data.shape[axis + 1:]


def _gather_infer(op_type: str):
    def infer(specs, attrs):
        return [TensorSpec(_gather_shape(op_type, specs[0], specs[1], attrs["axis"]), specs[0].dtype)]
    return infer


def _take(axis: int, zero_out_of_range: bool, length: int, index_position: int):
    """``np.take`` along ``axis``; with ``zero_out_of_range`` indices outside [0, length) give 0."""
    if not zero_out_of_range:
        return lambda t, indices: np.take(t, indices, axis, mode="wrap")

    def take(t, indices):
        valid = (indices >= 0) & (indices < length)
        picked = np.take(t, np.where(valid, indices, 0), axis)
        mask = valid.reshape((1,) * index_position + valid.shape + (1,) * (picked.ndim - index_position
                                                                             - valid.ndim))
        return np.where(mask, picked, np.zeros((), t.dtype))
    return take


def _gather_kernel(op, env):
    axis = op.attrs["axis"]
    return _take(axis, op.attrs["zero_OOR"], op.inputs[0].shape[axis], axis)


def _in_range(op, indices: Tensor, length: int) -> tuple[Tensor, Optional[Tensor]]:
    """The indices as the gather read them (wrapped into [0, length)) and, with ``zero_OOR``, the
    mask of those that read a value."""
    bound = constant(length, dtype=indices.dtype)
    if not op.attrs["zero_OOR"]:
        return fmod(add(fmod(indices, bound), bound), bound), None
    valid = logical_and(greater(indices, constant(-1, dtype=indices.dtype)), greater(bound, indices))
    return where(valid, indices, constant(0, dtype=indices.dtype)), valid


def _gather_grad(op, grads, fwd):
    """Scatter-add the gradient rows back to the rows they were gathered from."""
    grad, t, axis = grads[0], op.inputs[0], op.attrs["axis"]
    if grad is None:
        return [None, None]
    indices, valid = _in_range(op, fwd(op.inputs[1]), t.shape[axis])
    count = indices.nelms
    rows = blocks.reshape(grad, t.shape[:axis] + (count,) + t.shape[axis + 1:])
    if valid is not None:
        rows = blocks.masked(blocks.reshape(valid, (1,) * axis + (count,) + (1,) * (t.rank - axis - 1)), rows)
    return [blocks.scatter_add(rows, blocks.reshape(indices, (count,)), axis, t.shape[axis]), None]


register(OpDef("gather", _gather_infer("gather"), _gather_kernel, grad=_gather_grad, popart_class="GatherOp",
               poplibs_plan="multi_slice"))
register(OpDef("tied_gather", _gather_infer("tied_gather"), _gather_kernel, grad=_gather_grad,
               poplibs_plan="multi_slice",
               popart_class="TiedGatherOp"))


def gather(t: Tensor, indices: Tensor, axis: int = 0, available_memory_proportion: Optional[float] = None,
           zero_OOR: bool = False) -> Tensor:
    """Pick the entries ``indices`` of ``t`` along ``axis`` (``numpy.take``); the result has the
    indices' shape in place of that axis. ``zero_OOR`` gives zeros for out-of-range indices."""
    expect_tensors("gather", t=t)
    return apply("gather", t, indices, axis=normalize_axis("gather", axis, t.rank), zero_OOR=bool(zero_OOR))


def tied_gather(t: Tensor, indices: Tensor, axis: int = 0, available_memory_proportion: Optional[float] = None,
                zero_OOR: bool = False) -> Tensor:
    """The same numbers as ``gather``, for a table shared with a matmul (its gradient differs)."""
    expect_tensors("tied_gather", t=t)
    return apply("tied_gather", t, indices, axis=normalize_axis("tied_gather", axis, t.rank),
                 zero_OOR=bool(zero_OOR))


def _grouped_infer(specs, attrs):
    data, indices, groups = specs[0], specs[1], attrs["group_size"]
    if not data.shape or not indices.shape or data.shape[0] != groups or indices.shape[0] != groups:
        raise ValueError(f"groupedgather: t {data.shape} and indices {indices.shape} must both have a leading "
                         f"group dimension of group_size={groups}")
    inner = TensorSpec(data.shape[1:], data.dtype)
    shape = _gather_shape("groupedgather", inner, TensorSpec(indices.shape[1:], indices.dtype), attrs["axis"])
    return [TensorSpec((groups,) + shape, data.dtype)]


def _grouped_kernel(op, env):
    axis = op.attrs["axis"]
    take = _take(axis, op.attrs["zero_OOR"], op.inputs[0].shape[axis + 1], axis)
    return lambda t, indices: np.stack([take(table, rows) for table, rows in zip(t, indices)])


def _grouped_grad(op, grads, fwd):
    """Per group, scatter-add the gradient rows back to the rows of that group's table."""
    grad, t, axis = grads[0], op.inputs[0], op.attrs["axis"] + 1
    if grad is None:
        return [None, None]
    indices, valid = _in_range(op, fwd(op.inputs[1]), t.shape[axis])
    groups, count = t.shape[0], indices.nelms // t.shape[0]
    lined_up = (groups,) + (1,) * (axis - 1) + (count,) + (1,) * (t.rank - axis - 1)
    rows = blocks.reshape(grad, t.shape[:axis] + (count,) + t.shape[axis + 1:])
    if valid is not None:
        rows = blocks.masked(blocks.reshape(valid, lined_up), rows)
    every = blocks.broadcast_indices(blocks.reshape(indices, lined_up), rows.shape)
    return [blocks.scatter_add(rows, every, axis, t.shape[axis]), None]


register(OpDef("groupedgather", _grouped_infer, _grouped_kernel, grad=_grouped_grad, popart_class="GroupedGatherOp",
               poplibs_plan="multi_slice"))


def groupedgather(t: Tensor, indices: Tensor, axis: int = 0, group_size: Optional[int] = 1,
                  available_memory_proportion: Optional[float] = None, zero_OOR: bool = False) -> Tensor:
    """One ``gather`` per group: ``t`` and ``indices`` have a leading dimension of ``group_size``,
    and group ``g`` of the result gathers ``indices[g]`` from ``t[g]`` along ``axis`` (an axis of
    ``t[g]``)."""
    expect_tensors("groupedgather", t=t)
    axis = normalize_axis("groupedgather", axis, max(t.rank - 1, 1))
    return apply("groupedgather", t, indices, axis=axis, group_size=int(group_size), zero_OOR=bool(zero_OOR))


# ----- scatter -----
def _scatter_infer(specs, attrs):
    data, indices, values = specs
    check_dtype("scatter", indices, "int")
    same_dtype("scatter", [data, values])
    if indices.shape != values.shape or len(indices.shape) != len(data.shape) or any(
            i > d for i, d in zip(indices.shape, data.shape)):
        raise ValueError(f"scatter: indices {indices.shape} and values {values.shape} must have the same shape, "
                         f"of the rank of t {data.shape} and no longer than t in any dimension")
    return [TensorSpec(data.shape, data.dtype)]


def _element_key(shape, axis: int):
    """A function from runtime indices to the key addressing, for every position of ``shape``, the
    element whose coordinate ``axis`` is the index there (open grids for the other axes)."""
    grid = tuple(np.ogrid[tuple(slice(0, n) for n in shape)])
    before, after = grid[:axis], grid[axis + 1:]
    return lambda indices: before + (indices,) + after


def _scatter_kernel(op, env):
    key = _element_key(op.inputs[1].shape, op.attrs["axis"])

    def scatter(t, indices, values):
        out = t.copy()
        out[key(indices)] = values
        return out
    return scatter


def _position_ids(shape) -> Tensor:
    return constant(np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int32).reshape(shape))


def _scatter_grad(op, grads, fwd):
    """``t`` gets the gradient where nothing was written; each of ``values`` the gradient at the
    element it wrote, if no later repeat of its index overwrote it."""
    grad, axis = grads[0], op.attrs["axis"]
    if grad is None:
        return [None, None, None]
    indices, values = fwd(op.inputs[1]), op.inputs[2]
    kept = apply("scatter", grad, indices, blocks.zeros(values.shape, values.dtype), axis=axis)
    ids = _position_ids(values.shape)
    last = apply("scatter", blocks.zeros(op.inputs[0].shape, dtypes.int32), indices, ids, axis=axis)
    survives = equal(blocks.take_elements(last, indices, axis), ids)
    return [kept, None, blocks.masked(survives, blocks.take_elements(grad, indices, axis))]


register(OpDef("scatter", _scatter_infer, _scatter_kernel, grad=_scatter_grad, popart_class="ScatterOp"))


def scatter(t: Tensor, indices: Tensor, values: Tensor, axis: int = 0,
            available_memory_proportion: Optional[float] = None) -> Tensor:
    """A copy of ``t`` where, for every position ``p`` of ``indices``, the element at ``p`` with
    coordinate ``axis`` replaced by ``indices[p]`` becomes ``values[p]`` (ONNX ScatterElements)."""
    expect_tensors("scatter", t=t)
    return apply("scatter", t, indices, values, axis=normalize_axis("scatter", axis, t.rank))


def _expanded_indices(indices: tuple, data: tuple, axis: int) -> tuple:
    """The shape the indices broadcast from: a vector lines up with ``axis``."""
    shape = (1,) * axis + indices if len(indices) == 1 else indices
    return shape + (1,) * (len(data) - len(shape))


def _scatter_reduce_infer(specs, attrs):
    data, indices = specs[0], specs[1]
    axis = attrs["axis"]
    check_dtype("scatter_reduce", indices, "int")
    expanded = _expanded_indices(indices.shape, data.shape, axis)
    others = [d for i, d in enumerate(expanded) if i != axis and d != 1]
    if len(expanded) != len(data.shape) or any(e > d for e, d in zip(expanded, data.shape)) or (
            expanded != data.shape and others):
        raise ValueError(f"scatter_reduce: indices of shape {indices.shape} neither match data {data.shape} nor "
                         f"broadcast to it along axis {axis}")
    shape = data.shape[:axis] + (attrs["axis_size"],) + data.shape[axis + 1:]
    if len(specs) == 3:
        same_dtype("scatter_reduce", [data, specs[2]])
        if specs[2].shape != shape:
            raise ValueError(f"scatter_reduce: initial_values has shape {specs[2].shape}, expected {shape}")
    return [TensorSpec(shape, data.dtype)]


_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def _scatter_reduce_kernel(op, env):
    data, indices, out = op.inputs[0].spec, op.inputs[1].spec, op.outputs[0].spec
    axis, reduction = op.attrs["axis"], op.attrs["reduction"]
    expanded = _expanded_indices(indices.shape, data.shape, axis)
    key_of = _element_key(data.shape, axis)
    dtype = out.dtype.as_numpy()
    fill = {"sum": 0, "none": 0, "max": _lowest(dtype), "min": _highest(dtype)}[reduction]

    def scatter_reduce(values, index, initial=None):
        result = np.full(out.shape, fill, dtype) if initial is None else initial.copy()
        key = key_of(np.broadcast_to(index.reshape(expanded), data.shape))
        if reduction == "none":
            result[key] = values
        else:
            _REDUCE[reduction].at(result, key, values)
        if initial is None and reduction in ("max", "min"):
            touched = np.zeros(out.shape, np.bool_)
            touched[key] = True
            result[~touched] = 0
        return result
    return scatter_reduce


def _lowest(dtype: np.dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _highest(dtype: np.dtype):
    return np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).max


def _scatter_reduce_grad(op, grads, fwd):
    """Each entry of ``data`` gets the gradient at the position it went to: always for 'sum';
    for 'max'/'min' if it is the value that ended up there; for 'none' if no later write
    replaced it. ``initial_values`` gets the gradient where it survived the reduction."""
    grad, data = grads[0], op.inputs[0]
    if grad is None:
        return [None] * len(op.inputs)
    axis, reduction, length = op.attrs["axis"], op.attrs["reduction"], op.attrs["axis_size"]
    indices = fwd(op.inputs[1])

    def back(t: Tensor) -> Tensor:
        if indices.rank == 1:
            return apply("gather", t, indices, axis=axis, zero_OOR=False)
        return blocks.take_elements(t, indices, axis)

    data_grad, initial_grad = back(grad), grad
    if reduction in ("max", "min"):
        out = fwd(op.outputs[0])
        data_grad = blocks.masked(equal(fwd(data), back(out)), data_grad)
        if len(op.inputs) == 3:
            initial_grad = blocks.masked(equal(fwd(op.inputs[2]), out), grad)
    elif reduction == "none":
        ids = _position_ids(data.shape)
        last = apply("scatter_reduce", ids, indices, reduction="none", axis=axis, axis_size=length)
        data_grad = blocks.masked(equal(back(last), ids), data_grad)
        if len(op.inputs) == 3:
            initial_grad = apply("scatter_reduce", blocks.zeros(data.shape, data.dtype), indices, grad,
                                 reduction="none", axis=axis, axis_size=length)
    return [data_grad, None] + ([initial_grad] if len(op.inputs) == 3 else [])


register(OpDef("scatter_reduce", _scatter_reduce_infer, _scatter_reduce_kernel, grad=_scatter_reduce_grad,
               poplibs_plan="multi_slice",
               popart_class="ScatterReduceOp"))


def scatter_reduce(data: Tensor, indices: Tensor, reduction: ScatterReductionType,
                   initial_values: Optional[Tensor] = None, axis: int = 0, axis_size: Optional[int] = None,
                   enable_index_broadcast: int = True,
                   available_memory_proportion: Optional[float] = None) -> Tensor:
    """Scatter the entries of ``data`` along ``axis`` to positions ``indices`` of a result of length
    ``axis_size`` there, combining collisions by ``reduction`` ('sum', 'max', 'min' or 'none': the
    last write wins). The result starts from ``initial_values``, else from zeros (positions no
    entry reaches stay 0). ``indices`` has the shape of ``data`` or is a vector along ``axis``."""
    if initial_values is None and axis_size is None:
        raise ValueError("scatter_reduce: one of initial_values and axis_size must be specified")
    if reduction not in ("sum", "min", "max", "none"):
        raise ValueError(f"scatter_reduce: the reduction must be one of ['sum', 'min', 'max', 'none'], got "
                         f"{reduction!r}")
    if not enable_index_broadcast:
        raise NotImplementedError("scatter_reduce: enable_index_broadcast=False is not supported; indices "
                                  "broadcast along the axis")
    expect_tensors("scatter_reduce", data=data)
    axis = normalize_axis("scatter_reduce", axis, data.rank)
    if axis_size is None:
        axis_size = initial_values.shape[axis]
    if int(axis_size) < 1:
        raise ValueError(f"scatter_reduce: axis_size must be > 0, got {axis_size}")
    inputs = (data, indices) if initial_values is None else (data, indices, initial_values)
    return apply("scatter_reduce", *inputs, reduction=reduction, axis=axis, axis_size=int(axis_size))


# ----- one-hot -----
def _onehot_infer(specs, attrs):
    indices, values = specs[0], specs[2]
    check_dtype("onehot", indices, "int")
    if values.nelms != 2:
        raise ValueError(f"onehot: values must hold two entries [off_value, on_value], got shape {values.shape}")
    axis = attrs["axis"]
    return [TensorSpec(indices.shape[:axis] + (attrs["depth"],) + indices.shape[axis:], values.dtype)]


def _onehot_kernel(op, env):
    axis, depth = op.attrs["axis"], op.attrs["depth"]
    rank = op.inputs[0].rank
    classes = np.arange(depth).reshape((depth,) + (1,) * (rank - axis))
    new_axis = (slice(None),) * axis + (None,)

    def onehot(indices, num_classes, values):
        off, on = values.reshape(2)
        wrapped = np.where(indices < 0, indices + depth, indices)
        return np.where(wrapped[new_axis] == classes, on, off)
    return onehot


def _onehot_grad(op, grads, fwd):
    """``values[1]`` gets the gradient summed over the hot positions, ``values[0]`` over the rest."""
    grad, values = grads[0], op.inputs[2]
    if grad is None:
        return [None, None, None]
    hot = apply("onehot", fwd(op.inputs[0]), fwd(op.inputs[1]), constant(np.array([0, 1]), dtype=values.dtype),
                axis=op.attrs["axis"], depth=op.attrs["depth"])
    on = reduce_sum(mul(grad, hot))
    pair = blocks.concat([blocks.reshape(sub(reduce_sum(grad), on), (1,)), blocks.reshape(on, (1,))], 0)
    return [None, None, blocks.reshape(pair, values.shape)]


register(OpDef("onehot", _onehot_infer, _onehot_kernel, grad=_onehot_grad, popart_class="OnehotOp"))


def onehot(t: Tensor, num_classes: Tensor, values: Tensor, axis: int) -> Tensor:
    """One-hot encode the class indices ``t``: a new axis of length ``num_classes`` at ``axis``
    holds ``values[1]`` at the index and ``values[0]`` elsewhere (indices out of range give a row of
    ``values[0]``; negative ones count from the end). ``num_classes`` must be a constant."""
    expect_tensors("onehot", t=t)
    if not isinstance(num_classes, Constant) or num_classes.nelms != 1:
        raise ValueError("onehot: num_classes must be a one-element constant tensor (popxl.constant); its "
                         "value fixes the output shape")
    depth = int(num_classes.data.flat[0])
    if depth < 1:
        raise ValueError(f"onehot: num_classes must be positive, got {depth}")
    if not -(t.rank + 1) <= axis <= t.rank:
        raise ValueError(f"onehot: axis {axis} is out of range for indices of rank {t.rank} (expected "
                         f"{-(t.rank + 1)}..{t.rank})")
    axis = axis + t.rank + 1 if axis < 0 else axis
    return apply("onehot", t, num_classes, values, axis=int(axis), depth=depth)
