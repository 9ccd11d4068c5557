"""Variable updates: in-place ops on their first input, for optimisers and accumulators.

The accumulators follow popxl: ``t`` and ``X`` have one shape (no broadcasting) but may differ in
dtype; the factor is a number (fixed when the graph is built) or a scalar tensor. The Adam family
lives in ``adam_updates.py`` and is re-exported here, as popxl.ops.var_updates has them all.
"""
from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np

from workbench.ir import Tensor, TensorSpec

from .adam_updates import adam_updater, adam_var_update, adamax_updater, lamb_updater
from .arguments import expect_tensors
from .registry import OpDef, create_op, register
from .rules import broadcast_shape, check_dtype, normalize_axis, same_dtype

__all__ = ["accumulate_", "accumulate_square_", "accumulate_mean_", "accumulate_moving_average_",
           "accumulate_moving_average_square_", "sparse_accumulate_", "accumulator_scale_",
           "accumulator_zero_", "copy_var_update_", "adam_updater", "lamb_updater", "adamax_updater",
           "adam_var_update"]

Factor = Union[float, Tensor]


def check_factor(op_type: str, name: str, spec: TensorSpec) -> None:
    """A hyperparameter given as a tensor must be a single number."""
    check_dtype(op_type, spec, "number")
    if int(np.prod(spec.shape)) != 1:
        raise ValueError(f"{op_type}: {name} must be a scalar tensor (one element), got shape {spec.shape}")


def factor_input(op_type: str, name: str, value: Optional[Factor], default: Optional[float] = None):
    """``(tensor inputs, attribute)`` for a hyperparameter: a tensor is an input and the attribute
    is None; a number (or the default) is the attribute."""
    if isinstance(value, Tensor):
        return [value], None
    if value is None:
        value = default
    if value is None:
        return [], None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{op_type}: {name} must be a number or a scalar Tensor, got {value!r}")
    return [], float(value)


# ----- accumulators: t = update(t, X, f) -----
def _accumulator_infer(op_type: str, with_value: bool):
    def infer(specs, attrs):
        target = specs[0]
        check_dtype(op_type, target, "number")
        if with_value:
            check_dtype(op_type, specs[1], "number")
            if specs[1].shape != target.shape:
                raise ValueError(f"{op_type}: X must have the shape of the updated tensor {target.shape} "
                                 f"(no broadcasting), got {specs[1].shape}")
        if attrs["f"] is None:
            check_factor(op_type, attrs["factor_name"], specs[-1])
        return [TensorSpec(target.shape, target.dtype)]
    return infer


def _zero(target: np.ndarray) -> np.ndarray:
    target[...] = 0
    return target


def _store(target: np.ndarray, value) -> np.ndarray:
    """Write ``value`` into ``target`` in ``target``'s dtype."""
    np.copyto(target, value, casting="unsafe")
    return target


def _register_accumulator(op_type: str, update: Callable, increment: Optional[Callable] = None, *,
                          popart_class: str) -> None:
    """``update(t, X, f)`` gives the new value of ``t``. Where that is ``t + increment(X, f)``, the
    kernel adds in place, without a temporary of ``t``'s size, and the op can write into another array
    (``OpDef.into``)."""
    def factor_of(op):
        f = op.attrs["f"]
        return (lambda extra: f) if f is not None else (lambda extra: float(extra[0].reshape(())))

    def build(op, env):
        factor = factor_of(op)
        if increment is not None:
            return lambda t, x, *extra: _add_into(t, t, increment(x, factor(extra)))
        return lambda t, x, *extra: _store(t, update(t, x, factor(extra)))

    def into(op, env):
        factor = factor_of(op)
        return lambda out, t, x, *extra: _add_into(out, t, increment(x, factor(extra)))

    register(OpDef(op_type, _accumulator_infer(op_type, True), build, modifies=(0,), aliases=((0, 0),), pure_update=True,
                   into=into if increment is not None else None, popart_class=popart_class))


def _add_into(out: np.ndarray, t: np.ndarray, value) -> np.ndarray:
    """``t + value`` written into ``out`` in its dtype, as ``_store`` casts (the same numbers as
    NumPy's out-of-place ``t + value``)."""
    np.add(t, value, out=out, casting="unsafe")
    return out


_register_accumulator("accumulate_", lambda t, x, f: t + f * x, lambda x, f: f * x, popart_class="AccumulateOp")
_register_accumulator("accumulate_square_", lambda t, x, f: t + f * np.square(x), lambda x, f: f * np.square(x),
                      popart_class="AccumulateOp")
_register_accumulator("accumulate_mean_", lambda t, x, step: (step / (step + 1)) * t + x / (step + 1),
                      popart_class="AccumulateOp")
_register_accumulator("accumulate_moving_average_", lambda t, x, f: f * t + (1 - f) * x, popart_class="AccumulateOp")
_register_accumulator("accumulate_moving_average_square_", lambda t, x, f: f * t + (1 - f) * np.square(x),
                      popart_class="AccumulateOp")


def _scale_kernel(op, env):
    """A number 0 zeroes ``t`` outright (NaN and inf included), as popxl does; a tensor multiplies."""
    f = op.attrs["f"]
    if f == 0:
        return _zero
    if f is not None:
        return lambda t: _scale_into(t, f)
    return lambda t, f_: _scale_into(t, float(f_.reshape(())))


def _scale_into(t: np.ndarray, f) -> np.ndarray:
    np.multiply(t, f, out=t, casting="unsafe")
    return t


register(OpDef("accumulator_scale_", _accumulator_infer("accumulator_scale_", False), _scale_kernel,
               modifies=(0,), aliases=((0, 0),), pure_update=True, popart_class="AccumulatorScaleOp"))


def _accumulate(op_type: str, t: Tensor, X: Optional[Tensor], f, factor_name: str = "f",
                default: Optional[float] = None) -> Tensor:
    expect_tensors(op_type, t=t, **({"X": X} if X is not None else {}))
    extra, value = factor_input(op_type, factor_name, f, default)
    if value is None and not extra:
        raise ValueError(f"{op_type}: {factor_name} is required (a number or a scalar Tensor)")
    inputs = [t] + ([X] if X is not None else []) + extra
    return create_op(op_type, inputs, {"f": value, "factor_name": factor_name},
                     output_names=[f"{op_type}_{t.name}"]).outputs[0]


def accumulate_(t: Tensor, X: Tensor, f: Optional[Factor] = None) -> Tensor:
    """In place: ``t = t + f * X`` (``f`` defaults to 1). Returns ``t`` updated (an alias)."""
    return _accumulate("accumulate_", t, X, f, default=1.0)


def accumulate_square_(t: Tensor, X: Tensor, f: Factor = 1.0) -> Tensor:
    """In place: ``t = t + f * X**2``."""
    return _accumulate("accumulate_square_", t, X, f)


def accumulate_mean_(t: Tensor, X: Tensor, step: Factor) -> Tensor:
    """In place: ``t = step/(step+1) * t + X/(step+1)``, the running mean of the values seen when
    ``step`` values were averaged before."""
    return _accumulate("accumulate_mean_", t, X, step, factor_name="step")


def accumulate_moving_average_(t: Tensor, X: Tensor, f: Factor) -> Tensor:
    """In place: ``t = f * t + (1 - f) * X``."""
    return _accumulate("accumulate_moving_average_", t, X, f)


def accumulate_moving_average_square_(t: Tensor, X: Tensor, f: Factor) -> Tensor:
    """In place: ``t = f * t + (1 - f) * X**2``."""
    return _accumulate("accumulate_moving_average_square_", t, X, f)


def accumulator_scale_(t: Tensor, f: Factor) -> Tensor:
    """In place: ``t = f * t``; a number 0 sets ``t`` to zeros outright (NaN and inf included)."""
    return _accumulate("accumulator_scale_", t, None, f)


# ----- zero and copy -----
def _copy(target: np.ndarray, value: np.ndarray) -> np.ndarray:
    target[...] = value
    return target


def _copy_infer(specs, attrs):
    target = specs[0]
    same_dtype("copy_var_update_", specs[:2])
    if broadcast_shape("copy_var_update_", target.shape, specs[1].shape) != target.shape:
        raise ValueError(f"copy_var_update_: the update of shape {specs[1].shape} does not fit the updated "
                         f"tensor of shape {target.shape}")
    return [TensorSpec(target.shape, target.dtype)]


register(OpDef("accumulator_zero_", lambda specs, attrs: [specs[0]], lambda op, env: _zero,
               modifies=(0,), aliases=((0, 0),), pure_update=True, popart_class="AccumulatorScaleOp"))
register(OpDef("copy_var_update_", _copy_infer, lambda op, env: _copy, modifies=(0,), aliases=((0, 0),),
               pure_update=True, popart_class="CopyVarUpdateOp"))


def accumulator_zero_(t: Tensor) -> Tensor:
    """In place: set every element of ``t`` to zero."""
    expect_tensors("accumulator_zero_", t=t)
    return create_op("accumulator_zero_", [t], output_names=[f"accumulator_zero__{t.name}"]).outputs[0]


def copy_var_update_(t: Tensor, X: Tensor) -> Tensor:
    """Overwrite ``t`` with ``X`` in place."""
    return create_op("copy_var_update_", [t, X]).outputs[0]


# ----- sparse accumulate -----
def _sparse_infer(specs, attrs):
    """The dtypes are checked here; the axis and X's shape, which popxl does not check when it builds the op,
    when a Session compiles it (``_sparse_axis``)."""
    target, indices = specs[0], specs[2]
    check_dtype("sparse_accumulate_", target, "number")
    check_dtype("sparse_accumulate_", indices, "int")
    if attrs["f"] is None:
        check_factor("sparse_accumulate_", "f", specs[3])
    return [TensorSpec(target.shape, target.dtype)]


def _sparse_axis(op) -> int:
    """The op's axis counted from 0, once it is checked against ``t`` and X's shape."""
    target, value, indices = op.inputs[0].spec, op.inputs[1].spec, op.inputs[2].spec
    axis = normalize_axis("sparse_accumulate_", op.attrs["axis"], len(target.shape))
    expected = target.shape[:axis] + indices.shape + target.shape[axis + 1:]
    if value.shape != expected:
        raise ValueError(f"sparse_accumulate_: X must have shape {expected} (t's shape {target.shape} with "
                         f"axis {axis} replaced by the indices' shape {indices.shape}), got {value.shape}")
    return axis


def _sparse_kernel(op, env):
    """Scatter-add ``f * X`` into the rows ``indices`` of ``t`` along ``axis``; indices outside the
    axis are skipped. ``W`` (a layout reference) takes no part in the arithmetic."""
    axis, f = _sparse_axis(op), op.attrs["f"]
    index_rank = op.inputs[2].rank
    length = op.inputs[0].shape[axis]
    index_axes = list(range(axis, axis + index_rank))

    def update(t, x, indices, factor, *reference):
        factor = np.reshape(factor, ())
        valid = (indices >= 0) & (indices < length)
        rows = np.moveaxis(x, index_axes, list(range(index_rank)))[valid]
        scaled = (rows * factor).astype(t.dtype, copy=False)
        np.add.at(np.moveaxis(t, axis, 0), indices[valid], scaled)
        return t

    if f is not None:
        return lambda t, x, indices, *reference: update(t, x, indices, f)
    return update


register(OpDef("sparse_accumulate_", _sparse_infer, _sparse_kernel, modifies=(0,), aliases=((0, 0),),
               pure_update=True, popart_class="SparseAccumulateOp"))


def sparse_accumulate_(t: Tensor, X: Tensor, indices: Tensor, axis: int = 0, f: Optional[Factor] = None,
                       W: Optional[Tensor] = None) -> Tensor:
    """In place: add ``f * X`` to the slices of ``t`` picked by ``indices`` along ``axis``, the
    reverse of ``gather`` (repeated indices add up). ``W`` names the tensor whose layout ``t``
    shares on the IPU; it does not change the result."""
    expect_tensors("sparse_accumulate_", t=t, X=X, indices=indices, **({"W": W} if W is not None else {}))
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"sparse_accumulate_: axis must be an int, got {axis!r}")
    extra, value = factor_input("sparse_accumulate_", "f", f, 1.0)
    inputs = [t, X, indices] + extra + ([W] if W is not None else [])
    return create_op("sparse_accumulate_", inputs, {"axis": int(axis), "f": value},
                     output_names=[f"sparse_accumulate__{t.name}"]).outputs[0]
