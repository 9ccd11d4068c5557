"""Reductions over axes (sum, mean, median, max, ... with ``axis``/``keepdims``), argmax/argmin,
cumsum, topk, histogram and lamb_square.

Results keep the input's dtype (indices are int32, histogram counts uint32, lamb_square float32).
Half-precision inputs accumulate in float32, integer means in float64, and are rounded back.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable, List, Optional, Tuple, Union

import numpy as np

from workbench.ir import Op, Tensor, TensorSpec, constant, dtypes

from .arguments import expect_tensors
from .casting import cast
from .creation import init
from .elementwise import add, div, equal, exp, mul, sign, sub
from .elementwise_nary import where
from .registry import OpDef, apply, apply_many, create_op, register
from .rules import check_dtype, normalize_axes, normalize_axis

__all__ = ["sum", "mean", "median", "max", "min", "prod", "l1", "l2", "logsum", "logsumexp", "sumsquare",
           "lamb_square", "argmax", "argmin", "cumsum", "topk", "histogram"]

Axis = Optional[Union[int, Iterable[int]]]
# make(axes, keepdims, accumulator dtype) -> kernel over one array
MakeReduction = Callable[[Tuple[int, ...], bool, np.dtype], Callable[[np.ndarray], np.ndarray]]


def _reduced_shape(shape: Tuple[int, ...], axes: Tuple[int, ...], keepdims: bool) -> Tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _axes(op_type: str, spec: TensorSpec, axis) -> Tuple[int, ...]:
    if not spec.shape and axis is not None and axis != ():
        raise ValueError(f"{op_type}: a scalar tensor has no axis {axis!r} to reduce; use axis=None")
    return normalize_axes(op_type, axis, len(spec.shape))


def _check_not_empty(op_type: str, spec: TensorSpec, axes: Iterable[int]) -> None:
    empty = [a for a in axes if spec.shape[a] == 0]
    if empty:
        raise ValueError(f"{op_type}: cannot reduce over axis {empty[0]} of length 0 "
                         f"(tensor shape {spec.shape})")


def _reduction(op_type: str, make: MakeReduction, doc: str, *, allowed: str = "number",
               needs_elements: bool = False, grad=None, popart_class: str = "", with_indices: bool = False):
    """Register an axis reduction and return its front-end function ``f(t, axis=None, keepdims=False)``.
    ``with_indices``: the op has a second output, the int32 position of each result among the
    elements it was chosen from (the kernel returns both); the front end returns the first."""

    def infer(specs, attrs):
        spec = specs[0]
        check_dtype(op_type, spec, allowed)
        if not isinstance(attrs["keepdims"], (bool, np.bool_)):
            raise TypeError(f"{op_type}: keepdims must be a bool, got {attrs['keepdims']!r}")
        axes = _axes(op_type, spec, attrs["axis"])
        if needs_elements:
            _check_not_empty(op_type, spec, axes)
        shape = _reduced_shape(spec.shape, axes, attrs["keepdims"])
        return [TensorSpec(shape, spec.dtype)] + ([TensorSpec(shape, dtypes.int32)] if with_indices else [])

    def build(op: Op, env):
        axes = normalize_axes(op_type, op.attrs["axis"], op.inputs[0].rank)
        out = op.outputs[0].dtype.as_numpy()
        accumulator = np.dtype(np.float32) if out == np.float16 else out
        kernel = make(axes, bool(op.attrs["keepdims"]), accumulator)
        if accumulator == out:
            return kernel
        if with_indices:
            return lambda a: _values_as(kernel(a), out)
        return lambda a: kernel(a).astype(out)

    register(OpDef(op_type, infer, build, grad=grad, popart_class=popart_class))

    def front(t: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
        if axis is not None and not isinstance(axis, (int, np.integer)):
            try:
                axis = tuple(axis)
            except TypeError:
                raise TypeError(f"{op_type}: axis must be an int, an iterable of ints or None, "
                                f"got {axis!r}") from None
        return apply_many(op_type, t, axis=axis, keepdims=keepdims)[0]

    front.__name__ = front.__qualname__ = op_type
    front.__doc__ = doc
    return front


# ----- gradients: ``kept(t, op)`` lines a result up with the input, reduced axes kept as size 1 -----
def _kept(t: Tensor, op: Op) -> Tensor:
    x = op.inputs[0]
    shape = _reduced_shape(x.shape, normalize_axes(op.type, op.attrs["axis"], x.rank), True)
    return t if t.shape == shape else apply("reshape", t, shape=shape)


def _spread(t: Tensor, op: Op) -> Tensor:
    """``t`` (of the reduction's output shape) repeated over the reduced axes."""
    x = op.inputs[0]
    return add(_kept(t, op), init(x.shape, t.dtype))


def _number(value: float, like: Tensor) -> Tensor:
    return constant(value, dtype=like.dtype)


def _selected_grad(op, grads, fwd):
    """max, min, median: the gradient goes to the elements equal to the result."""
    x, grad = fwd(op.inputs[0]), _kept(grads[0], op)
    return [where(equal(x, _kept(fwd(op.outputs[0]), op)), grad, _number(0, grad))]


def _mean_grad(op, grads, fwd):
    x = op.inputs[0]
    count = math.prod(x.shape[a] for a in normalize_axes("mean", op.attrs["axis"], x.rank))
    # A mean over no elements has an empty input, whose gradient is empty whatever the factor.
    return [_spread(mul(grads[0], _number(1.0 / count if count else 0.0, x)), op)]


def _logsumexp_grad(op, grads, fwd):
    """g softmax(x) over the reduced axes."""
    x = fwd(op.inputs[0])
    return [mul(_kept(grads[0], op), exp(sub(x, _kept(fwd(op.outputs[0]), op))))]


def _mean(axes, keepdims, accumulator):
    if np.issubdtype(accumulator, np.floating):
        return lambda a: np.mean(a, axes, accumulator, keepdims=keepdims)
    return lambda a: np.mean(a, axes, np.float64, keepdims=keepdims).astype(accumulator)


def _values_as(result: Tuple[np.ndarray, np.ndarray], dtype) -> Tuple[np.ndarray, np.ndarray]:
    return result[0].astype(dtype), result[1]


def _median(axes, keepdims, accumulator):
    """The lower of the two middle values for an even count, as the IPU's sort-and-pick does, and
    its position among the reduced elements (the reduced axes flattened in order)."""
    ends = tuple(range(-len(axes), 0))

    def median(a):
        moved = np.moveaxis(a, axes, ends)
        count = math.prod(moved.shape[moved.ndim - len(axes):])
        flat = moved.reshape(moved.shape[:moved.ndim - len(axes)] + (count,))
        middle = (count - 1) // 2
        positions = np.argpartition(flat, middle, axis=-1)[..., middle:middle + 1]
        values = np.take_along_axis(flat, positions, -1)[..., 0]
        indices = positions[..., 0].astype(np.int32)
        if keepdims:
            return np.expand_dims(values, axes), np.expand_dims(indices, axes)
        return values, indices
    return median


def _logsumexp(axes, keepdims, accumulator):
    """log(sum(exp(a))) with the largest element factored out so that nothing overflows."""
    def logsumexp(a):
        a = a.astype(accumulator, copy=False)
        peak = np.max(a, axes, keepdims=True)
        peak = np.where(np.isfinite(peak), peak, 0)
        total = np.sum(np.exp(a - peak), axes, keepdims=keepdims)
        return np.log(total) + (peak if keepdims else np.squeeze(peak, axes))
    return logsumexp


sum = _reduction(  # noqa: A001 - popxl's name
    "sum", lambda axes, keep, acc: lambda a: np.add.reduce(a, axes, acc, keepdims=keep),
    "Sum of the elements over ``axis`` (all axes when None).", grad=lambda op, g, fwd: [_spread(g[0], op)],
    popart_class="ReduceSumOp")
mean = _reduction("mean", _mean, "Arithmetic mean over ``axis`` (all axes when None); integer means "
                  "truncate toward zero.", grad=_mean_grad, popart_class="ReduceMeanOp")
median = _reduction("median", _median, "Median over ``axis`` (all axes when None); for an even count, "
                    "the lower of the two middle values.", needs_elements=True, grad=_selected_grad,
                    popart_class="ReduceMedianOp", with_indices=True)
max = _reduction(  # noqa: A001 - popxl's name
    "max", lambda axes, keep, acc: lambda a: np.maximum.reduce(a, axes, keepdims=keep),
    "Largest element over ``axis`` (all axes when None).", needs_elements=True, grad=_selected_grad,
    popart_class="ReduceMaxOp")
min = _reduction(  # noqa: A001 - popxl's name
    "min", lambda axes, keep, acc: lambda a: np.minimum.reduce(a, axes, keepdims=keep),
    "Smallest element over ``axis`` (all axes when None).", needs_elements=True, grad=_selected_grad,
    popart_class="ReduceMinOp")
prod = _reduction("prod", lambda axes, keep, acc: lambda a: np.prod(a, axes, acc, keepdims=keep),
                  "Product of the elements over ``axis`` (all axes when None).",
                  grad=lambda op, g, fwd: [mul(_kept(g[0], op), div(_kept(fwd(op.outputs[0]), op),
                                                                     fwd(op.inputs[0])))], popart_class="ReduceProdOp")
l1 = _reduction("l1", lambda axes, keep, acc: lambda a: np.sum(np.abs(a), axes, acc, keepdims=keep),
                "L1 norm: sum of absolute values over ``axis`` (all axes when None).",
                grad=lambda op, g, fwd: [mul(_kept(g[0], op), sign(fwd(op.inputs[0])))], popart_class="ReduceL1Op")
l2 = _reduction(
    "l2", lambda axes, keep, acc: lambda a: np.sqrt(np.sum(np.square(a, dtype=acc), axes, acc,
                                                           keepdims=keep)),
    "L2 norm: square root of the sum of squares over ``axis`` (all axes when None).", allowed="float",
    grad=lambda op, g, fwd: [mul(_kept(g[0], op), div(fwd(op.inputs[0]), _kept(fwd(op.outputs[0]), op)))],
                popart_class="ReduceL2Op")
logsum = _reduction(
    "logsum", lambda axes, keep, acc: lambda a: np.log(np.sum(a, axes, acc, keepdims=keep)),
    "Natural log of the sum over ``axis`` (all axes when None).", allowed="float",
    grad=lambda op, g, fwd: [_spread(div(g[0], exp(fwd(op.outputs[0]))), op)], popart_class="ReduceLogSumOp")
logsumexp = _reduction("logsumexp", _logsumexp, "Natural log of the sum of exponentials over ``axis`` "
                       "(all axes when None), computed without overflow.", allowed="float",
                       needs_elements=True, grad=_logsumexp_grad, popart_class="ReduceLogSumExpOp")
sumsquare = _reduction(
    "sumsquare", lambda axes, keep, acc: lambda a: np.sum(np.square(a, dtype=acc), axes, acc, keepdims=keep),
    "Sum of squares over ``axis`` (all axes when None).",
    grad=lambda op, g, fwd: [mul(_kept(g[0], op), mul(fwd(op.inputs[0]), _number(2, g[0])))],
                       popart_class="ReduceSumSquareOp")


# ----- lamb_square -----
def _lamb_square_infer(specs, attrs):
    check_dtype("lamb_square", specs[0], "number")
    return [TensorSpec((), dtypes.float32)]


def _lamb_square_grad(op, grads, fwd):
    """2 x g, in the input's type."""
    x = fwd(op.inputs[0])
    if not x.dtype.is_floating_point:
        return [None]
    return [mul(x, cast(mul(grads[0], _number(2, grads[0])), x.dtype))]


register(OpDef("lamb_square", _lamb_square_infer,
               lambda op, env: lambda a: np.sum(np.square(a, dtype=np.float32)), grad=_lamb_square_grad,
               popart_class="LambSquareOp"))


def lamb_square(t: Tensor) -> Tensor:
    """Sum of the squares of all elements, as a float32 scalar (the norms of the LAMB optimiser)."""
    return apply("lamb_square", t)


# ----- argmax / argmin / cumsum: one axis, named dim -----
def _dim(op_type: str, spec: TensorSpec, dim) -> int:
    if not spec.shape:
        raise ValueError(f"{op_type}: needs a tensor with at least one dimension, got a scalar")
    return normalize_axis(op_type, dim, len(spec.shape))


def _arg_reduction(op_type: str, fn: Callable, doc: str, popart_class: str):
    def infer(specs, attrs):
        spec = specs[0]
        check_dtype(op_type, spec, "number")
        dim = _dim(op_type, spec, attrs["dim"])
        _check_not_empty(op_type, spec, [dim])
        return [TensorSpec(_reduced_shape(spec.shape, (dim,), bool(attrs["keepdim"])), dtypes.int32)]

    def build(op: Op, env):
        dim = normalize_axis(op_type, op.attrs["dim"], op.inputs[0].rank)
        keepdim = bool(op.attrs["keepdim"])
        return lambda a: fn(a, dim, keepdims=keepdim).astype(np.int32)

    register(OpDef(op_type, infer, build, popart_class=popart_class))

    def front(t: Tensor, dim: Optional[int] = 0, keepdim: Optional[bool] = False) -> Tensor:
        return apply(op_type, t, dim=dim, keepdim=keepdim)

    front.__name__ = front.__qualname__ = op_type
    front.__doc__ = doc
    return front


argmax = _arg_reduction("argmax", np.argmax, "Index (int32) of the largest element along ``dim``; the "
                        "first one on ties.", popart_class="ArgMaxOp")
argmin = _arg_reduction("argmin", np.argmin, "Index (int32) of the smallest element along ``dim``; the "
                        "first one on ties.", popart_class="ArgMinOp")


def _cumsum_infer(specs, attrs):
    check_dtype("cumsum", specs[0], "number")
    _dim("cumsum", specs[0], attrs["dim"])
    return [TensorSpec(specs[0].shape, specs[0].dtype)]


def _cumsum_kernel(op: Op, env):
    """Input 1 is the axis as a constant tensor (PopART's CumSum has it as an input); the axis
    attribute holds the same number, read here once."""
    dim = normalize_axis("cumsum", op.attrs["dim"], op.inputs[0].rank)
    out = op.outputs[0].dtype.as_numpy()
    if out == np.float16:
        return lambda a, _dim: np.cumsum(a, dim, np.float32).astype(out)
    return lambda a, _dim: np.cumsum(a, dim, out)


def _cumsum_grad(op, grads, fwd):
    """The running sum from the end: total - cumsum(g) + g; the axis input gets no gradient."""
    grad = grads[0]
    dim = normalize_axis("cumsum", op.attrs["dim"], op.inputs[0].rank)
    total = apply("sum", grad, axis=(dim,), keepdims=True)
    return [add(sub(total, cumsum(grad, dim)), grad), None]


register(OpDef("cumsum", _cumsum_infer, _cumsum_kernel, grad=_cumsum_grad, popart_class="CumSumOp"))


def cumsum(t: Tensor, dim: Optional[int] = 0) -> Tensor:
    """Running sum along ``dim``: element i is the sum of elements 0..i."""
    expect_tensors("cumsum", t=t)
    _cumsum_infer([t.spec], {"dim": dim})  # checked before the axis constant is made
    return create_op("cumsum", [t, constant(int(dim), dtypes.int64, name="dim")], {"dim": dim}).outputs[0]


# ----- topk -----
def _topk_infer(specs, attrs):
    spec = specs[0]
    check_dtype("topk", spec, "number")
    axis = _dim("topk", spec, attrs["axis"])
    k, length = attrs["k"], spec.shape[axis]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"topk: k must be an int, got {k!r}")
    if not 1 <= k <= length:
        raise ValueError(f"topk: k={k} is out of range for axis {axis} of length {length} "
                         f"(expected 1..{length})")
    shape = spec.shape[:axis] + (int(k),) + spec.shape[axis + 1:]
    return [TensorSpec(shape, spec.dtype), TensorSpec(shape, dtypes.int32)]


def _topk_kernel(op: Op, env):
    """A stable sort of a key that orders the wanted elements first: ``-a`` (floats) or ``~a``
    (integers, never overflowing) for the largest, ``a`` itself for the smallest."""
    axis = normalize_axis("topk", op.attrs["axis"], op.inputs[0].rank)
    first_k = (slice(None),) * axis + (slice(0, op.attrs["k"]),)
    key: Optional[np.ufunc]
    if not op.attrs["largest"]:
        key = None
    elif op.inputs[0].dtype.is_floating_point:
        key = np.negative
    else:
        key = np.invert

    def topk(a):
        order = np.argsort(key(a) if key else a, axis=axis, kind="stable")[first_k]
        return np.take_along_axis(a, order, axis), order.astype(np.int32)
    return topk


def _topk_grad(op, grads, fwd):
    """Each value's gradient goes back to the element it came from; the indices have none."""
    if grads[0] is None:
        return [None]
    x = op.inputs[0]
    axis = normalize_axis("topk", op.attrs["axis"], x.rank)
    return [apply("scatter", init(x.shape, x.dtype), fwd(op.outputs[1]), grads[0], axis=axis)]


register(OpDef("topk", _topk_infer, _topk_kernel, grad=_topk_grad, popart_class="TopKOp"))


def topk(t: Tensor, k: int, axis: int, largest: bool, sorted: bool,  # noqa: A002 - popxl's name
         available_memory_proportion: Optional[float] = None) -> Tuple[Tensor, Tensor]:
    """The k largest (or smallest) elements along ``axis`` and their int32 indices. Values always come
    out in order, best first (popxl leaves the order open when ``sorted`` is False); ties keep
    index order."""
    values, indices = apply_many("topk", t, k=k, axis=axis, largest=bool(largest), sorted=bool(sorted))
    return values, indices


# ----- histogram -----
def _histogram_infer(specs, attrs):
    spec = specs[0]
    if spec.dtype not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"histogram: expected a float16 or float32 tensor, got {spec.dtype.name}")
    return [TensorSpec((len(attrs["levels"]) + 1,), dtypes.uint32)]


def _histogram_kernel(op: Op, env):
    """Bin i counts the elements x with levels[i-1] <= x < levels[i] (open-ended at both ends)."""
    levels = np.asarray(op.attrs["levels"], dtype=op.inputs[0].dtype.as_numpy())
    bins = len(levels) + 1
    absolute = op.attrs["absolute_of_input"]

    def histogram(a):
        values = np.abs(a) if absolute else a
        return np.bincount(np.searchsorted(levels, values.ravel(), side="right"),
                           minlength=bins).astype(np.uint32)
    return histogram


register(OpDef("histogram", _histogram_infer, _histogram_kernel, popart_class="HistogramOp"))


def histogram(t: Tensor, levels: List[float], absolute_of_input: bool) -> Tensor:
    """Count the elements falling in each bin delimited by the increasing ``levels``: below
    levels[0], [levels[0], levels[1]), ..., from levels[-1] up. uint32 counts, len(levels) + 1 of them;
    with ``absolute_of_input`` the magnitudes are counted."""
    levels = [float(level) for level in levels]
    if any(low >= high for low, high in zip(levels, levels[1:])):
        raise ValueError(f"histogram: the levels {levels} are not a strictly increasing list")
    return apply("histogram", t, levels=tuple(levels), absolute_of_input=bool(absolute_of_input))
