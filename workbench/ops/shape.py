"""Shape and layout ops: reshape, transpose, squeeze, concat, split, subsample, identity, detach.

Out-of-place views (``view=True``) hand back NumPy views; the runtime copies when an in-place write
would go through one. The in-place variants (``reshape_``, ``transpose_``, ``detach_``) write
nothing themselves, but their output *is* their input's memory (``aliases``), so a later in-place
write through the result reaches the original.
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Union

import numpy as np

from workbench.ir import Tensor, TensorSpec
from workbench.ir.errors import ShapeInferenceError

from . import grad_blocks as blocks
from .arguments import expect_tensors
from .registry import OpDef, apply, apply_many, register
from .rules import normalize_axis

__all__ = ["reshape", "reshape_", "flatten", "flatten_", "transpose", "transpose_", "squeeze", "concat",
           "concat_", "split", "subsample", "identity", "rename", "detach", "detach_"]


def _identity_kernel(op, env):
    return _same


def _same(a: np.ndarray) -> np.ndarray:
    return a


def _like_input(specs, attrs) -> list[TensorSpec]:
    return [TensorSpec(specs[0].shape, specs[0].dtype)]


# ----- reshape -----
def _resolve_shape(op_type: str, t: Tensor, shape: Iterable[int]) -> tuple[int, ...]:
    """``shape`` with its -1 (if any) replaced by the length that keeps the element count."""
    expect_tensors(op_type, t=t)
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{op_type}: shape must be a sequence of ints, got {shape!r}") from None
    if any(d < -1 or d == 0 for d in shape):
        raise ValueError(f"Invalid shape value in reshape. Must be >0 or -1. Shape: {shape} ({op_type})")
    if shape.count(-1) > 1:
        raise ValueError(f"Reshape shape can contain at most one '-1' value. Shape: {shape} ({op_type})")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if t.nelms % known:
            raise ValueError(f"{op_type}: cannot reshape tensor {t.id!r} of shape {t.shape} ({t.nelms} "
                             f"elements) into {shape}")
        shape = tuple(t.nelms // known if d == -1 else d for d in shape)
    return shape


def _reshape_infer(op_type: str):
    def infer(specs, attrs):
        source, shape = specs[0], attrs["shape"]
        if int(np.prod(shape, dtype=np.int64)) != source.nelms:
            raise ValueError(f"{op_type}: cannot reshape {source.shape} ({source.nelms} elements) into "
                             f"{shape} ({int(np.prod(shape, dtype=np.int64))} elements)")
        return [TensorSpec(shape, source.dtype)]
    return infer


def _reshape_kernel(op, env):
    shape = op.attrs["shape"]
    return lambda a: a.reshape(shape)


def _reshape_in_place_kernel(op, env):
    """A true view when the memory is written in place later; NumPy then refuses to copy silently
    (a reshape of a non-contiguous alias, e.g. after ``transpose_``, cannot be a view)."""
    shape = op.attrs["shape"]
    if not env.is_written(op.inputs[0]):
        return lambda a: a.reshape(shape)

    def reshape_view(a):
        try:
            return np.reshape(a, shape, copy=False)
        except ValueError:
            raise ValueError(f"reshape_: {op.inputs[0].id!r} is not contiguous in memory here (an alias made by "
                             "transpose_ or slice_?), so its reshape cannot share its memory; use reshape, "
                             "which copies") from None
    return reshape_view


def _reshape_grad(op, grads, fwd):
    return [None if grads[0] is None else blocks.reshape(grads[0], op.inputs[0].shape)]


register(OpDef("reshape", _reshape_infer("reshape"), _reshape_kernel, grad=_reshape_grad, view=True,
               popart_class="ReshapeOp"))
register(OpDef("reshape_", _reshape_infer("reshape_"), _reshape_in_place_kernel, grad=_reshape_grad,
               aliases=((0, 0),), popart_class="ReshapeInplaceOp"))


def reshape(t: Tensor, shape: Sequence[int]) -> Tensor:
    """A tensor with the elements of ``t`` in row-major order and the given shape; one entry may be
    -1 and is then inferred."""
    return apply("reshape", t, shape=_resolve_shape("reshape", t, shape))


def reshape_(t: Tensor, shape: Sequence[int]) -> Tensor:
    """Like ``reshape``, but the result aliases ``t``: in-place writes through it change ``t``."""
    return apply("reshape_", t, shape=_resolve_shape("reshape_", t, shape))


def flatten(t: Tensor) -> Tensor:
    """``t`` as a 1-D tensor (a reshape to ``(-1,)``)."""
    return reshape(t, (-1,))


def flatten_(t: Tensor) -> Tensor:
    """``t`` as a 1-D tensor aliasing ``t`` (a ``reshape_`` to ``(-1,)``)."""
    return reshape_(t, (-1,))


# ----- transpose -----
def _permutation(op_type: str, t: Tensor, permutation: Optional[Iterable[int]]) -> tuple[int, ...]:
    expect_tensors(op_type, t=t)
    if permutation is None:
        return tuple(reversed(range(t.rank)))
    permutation = tuple(int(p) for p in permutation)
    too_large = tuple(p for p in permutation if p >= t.rank)
    if too_large:
        raise ValueError(f"Values in permutation must be less than the number of dimensions of the tensor "
                         f"({t.rank}): {permutation}. ({op_type}: found {too_large} for a tensor of rank {t.rank})")
    if sorted(permutation) != list(range(t.rank)):
        raise ValueError(f"{op_type}: permutation {permutation} must list each axis 0..{t.rank - 1} "
                         "exactly once")
    return permutation


def _transpose_infer(specs, attrs):
    shape = specs[0].shape
    return [TensorSpec(tuple(shape[p] for p in attrs["permutation"]), specs[0].dtype)]


def _transpose_kernel(op, env):
    permutation = op.attrs["permutation"]
    return lambda a: a.transpose(permutation)


def _transpose_grad(op, grads, fwd):
    """The inverse permutation puts the gradient's axes back."""
    if grads[0] is None:
        return [None]
    return [blocks.transpose(grads[0], np.argsort(op.attrs["permutation"]))]


register(OpDef("transpose", _transpose_infer, _transpose_kernel, grad=_transpose_grad, view=True,
               popart_class="TransposeOp"))
register(OpDef("transpose_", _transpose_infer, _transpose_kernel, grad=_transpose_grad, aliases=((0, 0),),
               popart_class="TransposeInplaceOp"))


def transpose(t: Tensor, permutation: Optional[Sequence[int]] = None) -> Tensor:
    """Permute the axes of ``t``; by default reverse them."""
    return apply("transpose", t, permutation=_permutation("transpose", t, permutation))


def transpose_(t: Tensor, permutation: Optional[Sequence[int]] = None) -> Tensor:
    """Like ``transpose``, with the result aliasing ``t``."""
    return apply("transpose_", t, permutation=_permutation("transpose_", t, permutation))


def squeeze(t: Tensor, axes: Optional[List[int]] = None) -> Tensor:
    """Remove axes of length one (all of them when ``axes`` is None); made with ``reshape``."""
    expect_tensors("squeeze", t=t)
    if axes is None:
        return reshape(t, [d for d in t.shape if d != 1])
    axes = sorted(normalize_axis("squeeze", a, t.rank) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"squeeze: axes contains duplicates: {axes}")
    for axis in axes:
        if t.shape[axis] != 1:
            raise ValueError(f"squeeze: can't squeeze axis {axis} of tensor {t.id!r} (shape {t.shape}): its "
                             f"length is {t.shape[axis]}, not 1")
    return reshape(t, [d for i, d in enumerate(t.shape) if i not in axes])


# ----- concat and split -----
def _concat_infer(op_type: str):
    def infer(specs, attrs):
        dtypes_ = [spec.dtype for spec in specs]
        if len(set(dtypes_)) > 1:
            raise TypeError(f"All inputs to a concat operation must have the same type: {dtypes_}. "
                            f"({op_type}: cast them to one dtype with ops.cast)")
        dtype = dtypes_[0]
        first = specs[0].shape
        axis = attrs["axis"]
        for spec in specs[1:]:
            if len(spec.shape) != len(first) or any(
                    a != b for i, (a, b) in enumerate(zip(spec.shape, first)) if i != axis):
                raise ShapeInferenceError(f"{op_type}: shapes {[s.shape for s in specs]} differ outside axis {axis}; "
                                 "all dimensions but the concatenation axis must match")
        length = sum(spec.shape[axis] for spec in specs)
        return [TensorSpec(first[:axis] + (length,) + first[axis + 1:], dtype)]
    return infer


def _concat_kernel(op, env):
    axis = op.attrs["axis"]
    return lambda *arrays: np.concatenate(arrays, axis)


def _concat_grad(op, grads, fwd):
    """Each input gets its own stretch of the gradient."""
    if grads[0] is None:
        return [None] * len(op.inputs)
    lengths = tuple(t.shape[op.attrs["axis"]] for t in op.inputs)
    if len(lengths) == 1:
        return [grads[0]]
    return list(apply_many("split", grads[0], axis=op.attrs["axis"], splits=lengths))


register(OpDef("concat", _concat_infer("concat"), _concat_kernel, grad=_concat_grad, popart_class="ConcatOp"))
register(OpDef("concat_", _concat_infer("concat_"), _concat_kernel, grad=_concat_grad, popart_class="ConcatInplaceOp"))


def _concat_args(op_type: str, ts: Iterable[Tensor], axis: int) -> tuple[list[Tensor], int]:
    ts = list(ts)
    if not ts:
        raise ValueError(f"{op_type}: needs at least one tensor to concatenate")
    if isinstance(ts[0], Tensor):
        if ts[0].rank == 0:
            raise ValueError(f"{op_type}: cannot concatenate scalars; reshape them to shape (1,) first")
        axis = normalize_axis(op_type, axis, ts[0].rank)
    return ts, axis


def concat(ts: Iterable[Tensor], axis: int = 0) -> Tensor:
    """Concatenate tensors along ``axis`` into a new tensor."""
    ts, axis = _concat_args("concat", ts, axis)
    return apply("concat", *ts, axis=axis)


def concat_(ts: Iterable[Tensor], axis: int = 0) -> Tensor:
    """Concatenate tensors along ``axis``. popxl makes the result alias every input; NumPy cannot
    view several arrays as one, so here the result is a copy: in-place writes through it do not
    reach the inputs."""
    ts, axis = _concat_args("concat_", ts, axis)
    return apply("concat_", *ts, axis=axis)


def _split_infer(specs, attrs):
    shape = specs[0].shape
    axis, splits = attrs["axis"], attrs["splits"]
    return [TensorSpec(shape[:axis] + (length,) + shape[axis + 1:], specs[0].dtype) for length in splits]


def _split_kernel(op, env):
    """Copies, not views: the runtime tracks views through output 0 only. A single part is a
    single output, so the kernel returns an array rather than a tuple."""
    axis = op.attrs["axis"]
    boundaries = list(np.cumsum(op.attrs["splits"])[:-1])
    if not boundaries:
        return np.copy
    return lambda a: tuple(part.copy() for part in np.split(a, boundaries, axis))


def _split_grad(op, grads, fwd):
    """The parts' gradients side by side; zeros for parts no gradient reaches."""
    parts = [blocks.optional_zeros(g, t) for g, t in zip(grads, op.outputs)]
    return [blocks.concat(parts, op.attrs["axis"]) if len(parts) > 1 else parts[0]]


register(OpDef("split", _split_infer, _split_kernel, grad=_split_grad, popart_class="SplitOp"))


def split(t: Tensor, splits: Union[int, List[int]], axis: int = 0) -> List[Tensor]:
    """Split ``t`` along ``axis`` into ``splits`` equal parts, or into parts of the listed lengths."""
    expect_tensors("split", t=t)
    axis = normalize_axis("split", axis, t.rank)
    length = t.shape[axis]
    if isinstance(splits, (int, np.integer)):
        if splits < 1 or length % splits:
            raise ValueError(f"split: {splits} does not equally divide axis {axis} of tensor {t.id!r} "
                             f"(length {length})")
        splits = [length // splits] * int(splits)
    lengths = tuple(int(s) for s in splits)
    if any(s < 0 for s in lengths) or sum(lengths) != length:
        raise ShapeInferenceError(f"split: lengths {list(lengths)} must be non-negative and add up to the length "
                         f"{length} of axis {axis}")
    return list(apply_many("split", t, axis=axis, splits=lengths))


# ----- subsample -----
def _subsample_infer(specs, attrs):
    strides = attrs["strides"]
    shape = specs[0].shape
    return [TensorSpec(tuple(-(-d // s) for d, s in zip(shape, strides)), specs[0].dtype)]


def _subsample_kernel(op, env):
    key = tuple(slice(None, None, s) for s in op.attrs["strides"])
    return lambda a: a[key]


def _subsample_grad(op, grads, fwd):
    """The gradient spread back to every ``strides``-th position, zeros in between."""
    if grads[0] is None:
        return [None]
    axes = range(op.inputs[0].rank)
    return [blocks.place(grads[0], op.inputs[0].shape, [0] * len(axes), op.attrs["strides"], axes)]


register(OpDef("subsample", _subsample_infer, _subsample_kernel, grad=_subsample_grad, view=True,
               popart_class="SubsampleOp"))


def subsample(t: Tensor, strides: Union[int, Iterable[int]]) -> Tensor:
    """Every ``strides[i]``-th element along each axis ``i``, starting with the first. Axes beyond
    the strides given keep every element (stride 1), as in popxl."""
    expect_tensors("subsample", t=t)
    strides = [strides] if isinstance(strides, (int, np.integer)) else list(strides)
    if len(strides) > t.rank:
        raise ValueError(f"subsample: {len(strides)} strides given for a tensor of rank {t.rank}; give at "
                         "most one stride per axis")
    strides += [1] * (t.rank - len(strides))
    if any(int(s) < 1 for s in strides):
        raise ValueError(f"subsample: strides must be >= 1, got {strides}")
    return apply("subsample", t, strides=tuple(int(s) for s in strides))


# ----- identity and detach -----
def _identity_grad(op, grads, fwd):
    return [grads[0]]


register(OpDef("identity", _like_input, _identity_kernel, grad=_identity_grad, view=True, popart_class="IdentityOp"))
register(OpDef("detach", _like_input, _identity_kernel, view=True, stop_gradient=True, popart_class="DetachOp"))
register(OpDef("detach_", _like_input, _identity_kernel, aliases=((0, 0),), stop_gradient=True,
               popart_class="DetachInplaceOp"))


def identity(t: Tensor, output_name: Optional[str] = None) -> Tensor:
    """A tensor equal to ``t``, named ``output_name`` (default ``identity_<name>``)."""
    expect_tensors("identity", t=t)
    return apply("identity", t, name=output_name or f"identity_{t.name}")


rename = identity


def detach(t: Tensor) -> Tensor:
    """Equal to ``t``; gradients do not flow back through it."""
    return apply("detach", t)


def detach_(t: Tensor) -> Tensor:
    """Like ``detach``, with the result aliasing ``t``."""
    return apply("detach_", t)
