"""Indexing ops: static slices, ``Tensor.__getitem__`` and slices at runtime offsets.

``dynamic_slice``/``dynamic_update`` read their offsets at run time. Out-of-range offsets follow
Poplar's dynamic-slice vertices: an offset at or past the end of its axis counts as 0, and a slice
running over the end of the axis wraps around to its start.
"""
from __future__ import annotations

import builtins
from typing import Any, Iterable, List, Optional, Sequence, Union

import numpy as np

from workbench.ir import Tensor, TensorSpec, constant, dtypes

from . import grad_blocks as blocks
from .arguments import expect_tensors
from .elementwise_nary import where
from .gather_scatter import gather
from .registry import OpDef, apply, register
from .rules import broadcast_shape, check_dtype, normalize_axis, same_dtype
from .shape import squeeze, subsample

__all__ = ["slice", "slice_", "dynamic_slice", "dynamic_update", "dynamic_update_"]

INT_MIN = -2 ** 31
INT_MAX = 2 ** 31 - 1

IntOrList = Optional[Union[int, List[Optional[int]]]]


# ----- static slices -----
def _slice_lists(op_type: str, t: Tensor, start: IntOrList, stop: IntOrList, step: IntOrList,
                 axis: Optional[Union[int, List[int]]]) -> dict:
    """popxl's argument rules: scalars become one-element lists, missing entries get defaults."""
    expect_tensors(op_type, t=t)
    given = {name: [value] if isinstance(value, (int, np.integer)) else value
             for name, value in (("start", start), ("stop", stop), ("step", step), ("axis", axis))}
    lengths = {name: len(value) for name, value in given.items() if value is not None}
    count = next(iter(lengths.values()))
    for name, length in lengths.items():
        if length != count:
            raise ValueError(f"{op_type}: start, stop, step and axis must have the same length; `{name}` has "
                             f"length {length} != {count}")
    steps = [1 if s is None else int(s) for s in given["step"] or [None] * count]
    if any(s not in (1, -1) for s in steps):
        raise ValueError(f"{op_type}: each step must be 1 or -1, got {steps}; for larger steps index the "
                         "tensor (t[::2]) or use ops.subsample")
    axes = [normalize_axis(op_type, a, t.rank) for a in (given["axis"] or range(count))]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op_type}: axis {axes} slices an axis twice")
    starts = [(0 if s > 0 else -1) if v is None else int(v)
              for v, s in zip(given["start"] or [None] * count, steps)]
    stops = [(INT_MAX if s > 0 else INT_MIN) if v is None else int(v)
             for v, s in zip(given["stop"] or [None] * count, steps)]
    return {"start": tuple(starts), "stop": tuple(stops), "step": tuple(steps), "axis": tuple(axes)}


def _slice_key(shape: Sequence[int], attrs) -> tuple:
    """The NumPy key of an ONNX-style slice: indices clamp to the axis as Python slices do."""
    key = [builtins.slice(None)] * len(shape)
    for start, stop, step, axis in zip(attrs["start"], attrs["stop"], attrs["step"], attrs["axis"]):
        first, end, step = builtins.slice(start, stop, step).indices(shape[axis])
        key[axis] = builtins.slice(first, None if end < 0 else end, step)
    return tuple(key)


def _slice_infer(specs, attrs):
    shape = specs[0].shape
    sliced = tuple(len(range(*part.indices(n))) for part, n in zip(_slice_key(shape, attrs), shape))
    return [TensorSpec(sliced, specs[0].dtype)]


def _slice_kernel(op, env):
    key = _slice_key(op.inputs[0].shape, op.attrs)
    return lambda a: a[key]


def _slice_grad(op, grads, fwd):
    """The gradient put back where the slice came from (reversed along backward axes), zeros
    around it."""
    grad, shape = grads[0], op.inputs[0].shape
    if grad is None:
        return [None]
    for axis, part in enumerate(_slice_key(shape, op.attrs)):
        first, _, step = part.indices(shape[axis])
        count = grad.shape[axis]
        if count == shape[axis] and step == 1:
            continue
        if step < 0:
            grad, first = blocks.reverse(grad, axis), first - count + 1
        grad = blocks.pad(grad, axis, first, shape[axis] - first - count)
    return [grad]


register(OpDef("slice", _slice_infer, _slice_kernel, grad=_slice_grad, view=True, popart_class="SliceOp"))
register(OpDef("slice_", _slice_infer, _slice_kernel, grad=_slice_grad, aliases=((0, 0),),
               popart_class="SliceInplaceOp"))


def slice(t: Tensor, start: IntOrList = None, stop: IntOrList = None, step: IntOrList = None,
          axis: Optional[Union[int, List[int]]] = None) -> Tensor:
    """Elements of ``t`` from ``start`` (inclusive) to ``stop`` (exclusive) along each ``axis``.

    Each argument is an int or a list with one entry per sliced axis; ``axis`` defaults to 0, 1, ...
    ``step`` is 1 or -1 (backwards). Negative indices count from the end; ``t`` itself is returned
    when start, stop and step are all None.
    """
    if start is None and stop is None and step is None:
        return t
    return apply("slice", t, **_slice_lists("slice", t, start, stop, step, axis))


def slice_(t: Tensor, start: IntOrList = None, stop: IntOrList = None, step: IntOrList = None,
           axis: Optional[Union[int, List[int]]] = None) -> Tensor:
    """Like ``slice``, with the result aliasing ``t``: in-place writes through it change ``t``."""
    if start is None and stop is None and step is None:
        return t
    return apply("slice_", t, **_slice_lists("slice_", t, start, stop, step, axis))


# ----- Tensor.__getitem__ -----
def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def getitem(t: Tensor, key: Any) -> Tensor:
    """``t[key]``: ints and slices slice (NumPy rules; int-indexed axes are removed), an integer
    tensor or host array gathers rows, a boolean one zeroes the elements where it is False."""
    if _is_int(key) or isinstance(key, builtins.slice) or (
            isinstance(key, tuple) and all(_is_int(k) or isinstance(k, builtins.slice) for k in key)):
        return _basic_index(t, key if isinstance(key, tuple) else (key,))
    if isinstance(key, (list, np.ndarray)):
        array = np.asarray(key)
        if array.dtype == np.bool_ or np.issubdtype(array.dtype, np.integer):
            _check_advanced(t, array.shape, array.dtype == np.bool_)
            key = constant(array)
    if isinstance(key, Tensor):
        if key.dtype.is_int:
            _check_advanced(t, key.shape, False)
            return gather(t, key)
        if key.dtype is dtypes.bool_:
            _check_advanced(t, key.shape, True)
            return where(key, t, constant(0, dtype=t.dtype))
    raise TypeError("only integers, slices (`:`), integer tensors and boolean tensors are valid indices; "
                    f"not {type(key).__name__}: {key!r}")


def _check_advanced(t: Tensor, shape: tuple, is_mask: bool) -> None:
    """Check an index tensor before anything is added to the graph."""
    if is_mask:
        broadcast_shape("getitem", shape, t.shape)
    elif not t.shape:
        raise IndexError(f"tensor {t.id!r} is a scalar; there is no axis to gather from")


def _basic_index(t: Tensor, key: tuple) -> Tensor:
    if len(key) > t.rank:
        raise IndexError(f"too many indices for tensor {t.id!r} of shape {t.shape}: {len(key)} given")
    starts: list[Optional[int]] = []
    stops: list[Optional[int]] = []
    steps: list[Optional[int]] = []
    strides, int_axes = [1] * t.rank, []
    for axis, item in enumerate(key):
        if _is_int(item):
            length = t.shape[axis]
            if not -length <= item < length:
                raise IndexError(f"index {item} is out of bounds for axis {axis} with size {length}")
            starts.append(int(item))
            stops.append(INT_MAX if item == -1 else int(item) + 1)
            steps.append(1)
            int_axes.append(axis)
            continue
        step = 1 if item.step is None else int(item.step)
        if step == 0:
            raise ValueError("slice step cannot be zero")
        starts.append(item.start)
        stops.append(item.stop)
        steps.append(1 if step > 0 else -1)
        strides[axis] = abs(step)
    out = slice(t, starts, stops, steps, list(range(len(key))))
    if any(s > 1 for s in strides):
        out = subsample(out, strides)
    if int_axes:
        out = squeeze(out, int_axes)
    return out


# ----- slices at runtime offsets -----
def _dynamic_args(op_type: str, t: Tensor, axes: Iterable[int], sizes: Iterable[int]) -> dict:
    expect_tensors(op_type, t=t)
    axes = tuple(normalize_axis(op_type, a, t.rank) for a in axes)
    sizes = tuple(int(s) for s in sizes)
    if len(axes) != len(sizes) or len(set(axes)) != len(axes):
        raise ValueError(f"{op_type}: axes {list(axes)} must be distinct and as many as sizes {list(sizes)}")
    for axis, size in zip(axes, sizes):
        if not 1 <= size <= t.shape[axis]:
            raise ValueError(f"{op_type}: size {size} for axis {axis} must be between 1 and the axis length "
                             f"{t.shape[axis]}")
    return {"axes": axes, "sizes": sizes}


def _check_index(op_type: str, index: TensorSpec, axes: Sequence[int]) -> None:
    check_dtype(op_type, index, "int")
    if len(index.shape) > 1 or index.nelms != len(axes):
        raise ValueError(f"{op_type}: index must hold one offset per axis ({len(axes)}), got shape "
                         f"{index.shape}")


def _sliced_shape(shape: Sequence[int], attrs) -> tuple[int, ...]:
    sliced = list(shape)
    for axis, size in zip(attrs["axes"], attrs["sizes"]):
        sliced[axis] = size
    return tuple(sliced)


def _region(shape: Sequence[int], axes: Sequence[int], sizes: Sequence[int]):
    """A function from the runtime offsets to the key of the region they select."""
    rank = len(shape)
    spans = list(zip(axes, sizes, [shape[a] for a in axes]))

    def key(index: np.ndarray):
        parts: list = [builtins.slice(None)] * rank
        wrapped = False
        for (axis, size, length), offset in zip(spans, np.ravel(index).tolist()):
            start = offset if 0 <= offset < length else 0
            if start + size <= length:
                parts[axis] = builtins.slice(start, start + size)
            else:
                parts[axis] = (start + np.arange(size)) % length
                wrapped = True
        if not wrapped:
            return tuple(parts)
        return np.ix_(*(np.arange(n)[p] if isinstance(p, builtins.slice) else p for n, p in zip(shape, parts)))
    return key


def _dynamic_slice_infer(specs, attrs):
    _check_index("dynamic_slice", specs[1], attrs["axes"])
    return [TensorSpec(_sliced_shape(specs[0].shape, attrs), specs[0].dtype)]


def _dynamic_slice_kernel(op, env):
    key = _region(op.inputs[0].shape, op.attrs["axes"], op.attrs["sizes"])
    return lambda t, index: t[key(index)]


def _dynamic_update_infer(op_type: str):
    """t_update's shape is not checked here, as popxl does not check it when it builds the op, but when a
    Session compiles it (``_checked_update_shape``)."""
    def infer(specs, attrs):
        _check_index(op_type, specs[1], attrs["axes"])
        same_dtype(op_type, [specs[0], specs[2]])
        return [TensorSpec(specs[0].shape, specs[0].dtype)]
    return infer


def _checked_update_shape(op) -> tuple[int, ...]:
    """The shape of the replaced slice, which t_update must have, or have less its leading 1 (PopART then
    puts the 1 back)."""
    expected = _sliced_shape(op.inputs[0].shape, op.attrs)
    given = op.inputs[2].shape
    if given != expected and (1,) + given != expected:
        raise ValueError(f"{op.type}: t_update has shape {given}; the slice it replaces has shape {expected}")
    return expected


def _dynamic_update_kernel(in_place: bool):
    def build(op, env):
        key = _region(op.inputs[0].shape, op.attrs["axes"], op.attrs["sizes"])
        sliced = _checked_update_shape(op)

        def update(t, index, t_update):
            out = t if in_place else t.copy()
            out[key(index)] = t_update.reshape(sliced)
            return out
        return update
    return build


def _region_attrs(op) -> dict:
    return {name: op.attrs[name] for name in ("axes", "sizes", "no_overlap")}


def _dynamic_slice_grad(op, grads, fwd):
    """The gradient written into zeros at the same runtime offsets; the offsets get none."""
    if grads[0] is None:
        return [None, None]
    t = op.inputs[0]
    return [apply("dynamic_update", blocks.zeros(t.shape, t.dtype), fwd(op.inputs[1]), grads[0],
                  **_region_attrs(op)), None]


def _dynamic_update_grad(op, grads, fwd):
    """``t`` gets the gradient outside the updated region, ``t_update`` the region itself."""
    if grads[0] is None:
        return [None, None, None]
    index, update = fwd(op.inputs[1]), op.inputs[2]
    kept = apply("dynamic_update", grads[0], index, blocks.zeros(update.shape, update.dtype), **_region_attrs(op))
    region = apply("dynamic_slice", grads[0], index, **_region_attrs(op))
    if region.shape != update.shape:  # an update given without the slice's leading 1
        region = apply("reshape", region, shape=update.shape)
    return [kept, None, region]


register(OpDef("dynamic_slice", _dynamic_slice_infer, _dynamic_slice_kernel, grad=_dynamic_slice_grad, view=True,
               popart_class="dynamic.DynamicSliceOp"))
register(OpDef("dynamic_update", _dynamic_update_infer("dynamic_update"), _dynamic_update_kernel(False),
               grad=_dynamic_update_grad, popart_class="dynamic.DynamicUpdateOp"))
register(OpDef("dynamic_update_", _dynamic_update_infer("dynamic_update_"), _dynamic_update_kernel(True),
               modifies=(0,), aliases=((0, 0),), pure_update=True, popart_class="dynamic.DynamicUpdateInplaceOp"))


def dynamic_slice(t: Tensor, index: Tensor, axes: List[int], sizes: List[int], no_overlap: bool) -> Tensor:
    """The slice of ``t`` starting at the runtime offsets ``index`` (one per axis in ``axes``) with
    the given ``sizes``. ``no_overlap`` only matters for gradients."""
    return apply("dynamic_slice", t, index, no_overlap=bool(no_overlap),
                 **_dynamic_args("dynamic_slice", t, axes, sizes))


def dynamic_update(t: Tensor, index: Tensor, t_update: Tensor, axes: Iterable[int], sizes: Iterable[int],
                   no_overlap: bool) -> Tensor:
    """A copy of ``t`` with the slice at the runtime offsets ``index`` replaced by ``t_update``."""
    return apply("dynamic_update", t, index, t_update, no_overlap=bool(no_overlap),
                 **_dynamic_args("dynamic_update", t, axes, sizes))


def dynamic_update_(t: Tensor, index: Tensor, t_update: Tensor, axes: Iterable[int], sizes: Iterable[int],
                    no_overlap: bool) -> Tensor:
    """Like ``dynamic_update``, writing into ``t`` in place."""
    return apply("dynamic_update_", t, index, t_update, no_overlap=bool(no_overlap),
                 **_dynamic_args("dynamic_update_", t, axes, sizes))
