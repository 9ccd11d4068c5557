"""Neural-network ops: softmax, normalisations, the negative log-likelihood loss, interpolation.

Normalisations follow PopART's GroupNorm: the input is [N, C, ...], statistics are taken per
sample and group of channels over the channels of the group and every further axis, and weight
and bias hold one value per channel (axis 1). ``layer_norm`` is ``group_norm`` with one group, as
in popxl, so it normalises each sample over all axes but the first; for the usual [tokens, hidden]
input that is the last axis. Float16 inputs are computed in float32 and rounded once at the end.
"""
from __future__ import annotations

from typing import Literal, Optional, Tuple, Union

import numpy as np

from workbench.ir import Tensor, TensorSpec, constant, dtypes

from . import grad_blocks as blocks
from .arguments import expect_tensors
from .nn_grads import batch_norm_grad, group_norm_grad, nll_grad, nll_with_softmax_grad_grad
from .reductions import sum as reduce_sum
from .registry import OpDef, apply, apply_many, register
from .rules import broadcast_shape, check_dtype, normalize_axis, same_dtype

__all__ = ["softmax", "group_norm", "layer_norm", "batch_norm_inference", "nll_loss",
           "nll_loss_with_softmax_grad", "interpolate"]

REDUCTION_TYPE = Literal["mean", "sum", "none"]


def _compute_type(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.float16 else dtype


# ----- softmax -----
def _softmax_infer(specs, attrs):
    check_dtype("softmax", specs[0], "float")
    return [TensorSpec(specs[0].shape, specs[0].dtype)]


def _softmax_kernel(op, env):
    axis = op.attrs["axis"]
    dtype = op.inputs[0].dtype.as_numpy()
    compute = _compute_type(dtype)

    def softmax(x):
        e = x.astype(compute, copy=False) - np.maximum.reduce(x, axis, keepdims=True)
        np.exp(e, out=e)
        e /= np.add.reduce(e, axis, keepdims=True)
        return e.astype(dtype, copy=False)
    return softmax


def _softmax_grad(op, grads, fwd):
    """y * (g - sum(g * y)) along the softmax axis."""
    if grads[0] is None:
        return [None]
    y, grad = fwd(op.outputs[0]), grads[0]
    return [y * (grad - reduce_sum(grad * y, axis=op.attrs["axis"], keepdims=True))]


register(OpDef("softmax", _softmax_infer, _softmax_kernel, grad=_softmax_grad, popart_class="SoftmaxOp"))


def softmax(t: Tensor, axis: int) -> Tensor:
    """exp(t) normalised to sum to one along ``axis``."""
    expect_tensors("softmax", t=t)
    return apply("softmax", t, axis=normalize_axis("softmax", axis, t.rank))


# ----- normalisations -----
def _per_channel(op_type: str, t: TensorSpec, params, names) -> None:
    check_dtype(op_type, t, "float")
    same_dtype(op_type, [t, *params])
    if len(t.shape) < 2:
        raise ValueError(f"{op_type}: the input must be [N, C, ...], got shape {t.shape}")
    for spec, name in zip(params, names):
        if spec.shape != (t.shape[1],):
            raise ValueError(f"{op_type}: {name} must have shape ({t.shape[1]},), one value per channel of "
                             f"the input {t.shape}, got {spec.shape}")


def _group_norm_infer(specs, attrs):
    _per_channel("group_norm", specs[0], specs[1:], ("weight", "bias"))
    shape, groups = specs[0].shape, attrs["num_groups"]
    if groups < 1 or shape[1] % groups:
        raise ValueError(f"group_norm: num_groups={groups} must divide the {shape[1]} channels of {shape}")
    stats = TensorSpec((shape[0] * groups,), specs[0].dtype)
    return [TensorSpec(shape, specs[0].dtype), stats, stats]


def _channel_shape(rank: int, channels: int) -> tuple[int, ...]:
    return (1, channels) + (1,) * (rank - 2)


def _group_norm_kernel(op, env):
    shape, groups, eps = op.inputs[0].shape, op.attrs["num_groups"], op.attrs["eps"]
    dtype = op.inputs[0].dtype.as_numpy()
    compute = _compute_type(dtype)
    per_channel = _channel_shape(len(shape), shape[1])

    def group_norm(x, weight, bias):
        grouped = x.astype(compute, copy=False).reshape(shape[0], groups, -1)
        mean = grouped.mean(-1, keepdims=True)
        inv_std = 1 / np.sqrt(grouped.var(-1, keepdims=True) + compute.type(eps))
        normed = ((grouped - mean) * inv_std).reshape(shape)
        y = normed * weight.reshape(per_channel) + bias.reshape(per_channel)
        return y.astype(dtype), mean.reshape(-1).astype(dtype), inv_std.reshape(-1).astype(dtype)
    return group_norm


register(OpDef("group_norm", _group_norm_infer, _group_norm_kernel, grad=group_norm_grad, popart_class="GroupNormOp"))


def group_norm(t: Tensor, weight: Tensor, bias: Tensor, num_groups: int, eps: float = 1e-5) -> Tensor:
    """Normalise each sample of ``t`` ([N, C, ...]) per group of ``C / num_groups`` channels, then
    scale by ``weight`` and shift by ``bias`` (one value per channel)."""
    return apply_many("group_norm", t, weight, bias, num_groups=int(num_groups), eps=float(eps))[0]


def layer_norm(t: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """``group_norm`` with a single group: each sample is normalised over all its other axes."""
    return group_norm(t, weight, bias, num_groups=1, eps=eps)


def _batch_norm_infer(specs, attrs):
    _per_channel("batch_norm_inference", specs[0], specs[1:], ("scale", "bias", "mean", "var"))
    return [TensorSpec(specs[0].shape, specs[0].dtype)]


def batch_norm_factors(op):
    """``factors(scale, bias, mean, var)``: the one scale and one shift per channel that batch norm in
    inference applies, each shaped to broadcast over the input."""
    shape, eps = op.inputs[0].shape, op.attrs["epsilon"]
    compute = _compute_type(op.inputs[0].dtype.as_numpy())
    per_channel = _channel_shape(len(shape), shape[1])

    def factors(scale, bias, mean, var):
        factor = scale.astype(compute) / np.sqrt(var.astype(compute) + compute.type(eps))
        shift = bias.astype(compute) - mean.astype(compute) * factor
        return factor.reshape(per_channel), shift.reshape(per_channel)
    return factors


def _batch_norm_kernel(op, env):
    dtype = op.inputs[0].dtype.as_numpy()
    compute = _compute_type(dtype)
    factors = batch_norm_factors(op)

    def batch_norm(x, scale, bias, mean, var):
        """One scale and one shift per channel, applied in two passes over one new array."""
        factor, shift = factors(scale, bias, mean, var)
        y = np.multiply(x, factor, dtype=compute)
        y += shift
        return y.astype(dtype, copy=False)
    return batch_norm


register(OpDef("batch_norm_inference", _batch_norm_infer, _batch_norm_kernel, grad=batch_norm_grad,
               popart_class="BatchNormOp"))


def batch_norm_inference(t: Tensor, scale: Tensor, bias: Tensor, mean: Tensor, var: Tensor,
                         epsilon: float = 1e-5, momentum: float = 0.9) -> Tensor:
    """(t - mean) / sqrt(var + epsilon) * scale + bias per channel (axis 1) with the given running
    statistics; ``momentum`` only matters in training."""
    return apply("batch_norm_inference", t, scale, bias, mean, var, epsilon=float(epsilon),
                 momentum=float(momentum))


# ----- negative log-likelihood -----
def _nll_checks(op_type: str, probs: TensorSpec, labels: TensorSpec, labels_dtype: str = "int") -> None:
    check_dtype(op_type, probs, "float")
    check_dtype(op_type, labels, labels_dtype)
    if not probs.shape or labels.shape != probs.shape[:-1]:
        raise ValueError(f"{op_type}: labels must have the shape of probs without its last (class) axis: "
                         f"probs {probs.shape}, labels {labels.shape}")


def _softmax_grad_checks(probs: TensorSpec, labels: TensorSpec) -> None:
    """As PopART's fused op reads them: the labels, flattened, give one class per row of the probs
    flattened to [rows, C] (so [N, 1] labels suit [N, C] probs)."""
    check_dtype("nll_loss_with_softmax_grad", probs, "float")
    check_dtype("nll_loss_with_softmax_grad", labels, "number")  # popxl takes float labels here
    if not probs.shape or labels.nelms != int(np.prod(probs.shape[:-1])):
        raise ValueError("nll_loss_with_softmax_grad: labels must have the shape of probs without its last (class) "
                         f"axis, or as many elements: probs {probs.shape}, labels {labels.shape}")


def _loss_spec(probs: TensorSpec, labels: TensorSpec, reduction: str) -> TensorSpec:
    return TensorSpec(labels.shape if reduction == "none" else (), probs.dtype)


def _nll_infer(specs, attrs):
    _nll_checks("nll_loss", specs[0], specs[1])
    return [_loss_spec(specs[0], specs[1], attrs["reduction"])]


def _nll_parts(op):
    """Per-sample losses of flattened probs and labels, and the mask of samples that count; also each
    sample's position of its label in the flattened probs (meaningful where ``in_range``)."""
    classes = op.inputs[0].shape[-1]
    dtype = op.inputs[0].dtype.as_numpy()
    compute = _compute_type(dtype)
    eps = compute.type(6.104e-05 if dtype == np.float16 else 1e-7)
    ignore, log_prob = op.attrs["ignore_index"], op.attrs.get("log_prob", False)

    samples = op.inputs[1].nelms
    starts = np.arange(samples) * classes  # where each sample's row begins in the flattened probs

    def parts(probs, labels):
        rows = probs.reshape(-1, classes).astype(compute, copy=False)
        flat = labels.reshape(-1).astype(np.int64, copy=False)  # float labels count by their integer part
        in_range = (flat >= 0) & (flat < classes)
        positions = starts + flat
        picked = rows.take(positions, mode="clip")  # a label out of range picks 0 below
        picked[~in_range] = 0
        losses = -picked if log_prob else -np.log(np.maximum(picked, eps))
        mask = None if ignore is None else flat != ignore
        return rows, positions, in_range, (losses if mask is None else losses * mask), mask
    return parts


def _reduce_loss(losses, mask, reduction: str, shape, dtype):
    if reduction == "none":
        return losses.reshape(shape).astype(dtype)
    total = losses.sum()
    if reduction == "mean":
        total = total / (len(losses) if mask is None else max(int(mask.sum()), 1))
    return np.asarray(total, dtype)


def _nll_kernel(op, env):
    parts = _nll_parts(op)
    reduction, shape = op.attrs["reduction"], op.inputs[1].shape
    dtype = op.outputs[0].dtype.as_numpy()

    def nll(probs, labels):
        _, _, _, losses, mask = parts(probs, labels)
        return _reduce_loss(losses, mask, reduction, shape, dtype)
    return nll


register(OpDef("nll_loss", _nll_infer, _nll_kernel, grad=nll_grad, popart_class="NllOp"))


def _check_reduction(op_type: str, reduction: str) -> str:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op_type}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return reduction


def nll_loss(probs: Tensor, labels: Tensor, ignore_index: Optional[int] = None, reduction: REDUCTION_TYPE = "mean",
             log_prob: bool = False) -> Tensor:
    """Negative log-likelihood of the class ``labels`` under ``probs`` ([..., C]), i.e.
    -log(probs[label]) (or -probs[label] with ``log_prob``), reduced by 'mean', 'sum' or 'none'.
    Labels equal to ``ignore_index`` count as zero and are left out of the mean."""
    return apply("nll_loss", probs, labels, ignore_index=ignore_index, log_prob=bool(log_prob),
                 reduction=_check_reduction("nll_loss", reduction))


def _nll_grad_infer(specs, attrs):
    probs, labels, loss_grad = specs
    _softmax_grad_checks(probs, labels)
    check_dtype("nll_loss_with_softmax_grad", loss_grad, "float")
    if broadcast_shape("nll_loss_with_softmax_grad", loss_grad.shape, labels.shape) != labels.shape:
        raise ValueError(f"nll_loss_with_softmax_grad: loss_grad of shape {loss_grad.shape} does not broadcast "
                         f"to the per-sample losses {labels.shape}")
    return [_loss_spec(probs, labels, attrs["reduction"]), TensorSpec(probs.shape, probs.dtype)]


def _nll_grad_kernel(op, env):
    parts = _nll_parts(op)
    reduction, shape = op.attrs["reduction"], op.inputs[1].shape
    dtype = op.outputs[0].dtype.as_numpy()

    def nll_with_grad(probs, labels, loss_grad):
        rows, positions, in_range, losses, mask = parts(probs, labels)
        grad = rows.copy()
        everywhere = bool(in_range.all())
        grad.reshape(-1)[positions if everywhere else positions[in_range]] -= 1
        scale = loss_grad.astype(rows.dtype, copy=False)
        if scale.ndim == 0 and mask is None and everywhere:  # the usual case: one factor for all
            grad *= scale / len(positions) if reduction == "mean" else scale
        else:
            # A label out of range picks no probability: its loss is a constant, with no gradient.
            scale = np.broadcast_to(scale, shape).reshape(-1, 1) * in_range[:, None]
            if mask is not None:
                scale = scale * mask[:, None]
            if reduction == "mean":
                scale = scale / (len(positions) if mask is None else max(int(mask.sum()), 1))
            grad *= scale
        return (_reduce_loss(losses, mask, reduction, shape, dtype),
                grad.reshape(probs.shape).astype(dtype, copy=False))
    return nll_with_grad


register(OpDef("nll_loss_with_softmax_grad", _nll_grad_infer, _nll_grad_kernel, grad=nll_with_softmax_grad_grad,
               popart_class="NlllWithSoftmaxGradDirectOp"))


def nll_loss_with_softmax_grad(probs: Tensor, labels: Tensor, loss_grad: Union[float, Tensor] = 1,
                               ignore_index: Optional[int] = None, reduction: REDUCTION_TYPE = "mean"
                               ) -> Tuple[Tensor, Tensor]:
    """The ``nll_loss`` of softmax output ``probs`` and its gradient with respect to the softmax's
    input x: ``loss_grad * (probs - onehot(labels))``, scaled as the reduction scales the loss (zero
    for samples whose label is ignored or out of range). As in popxl, the labels may be a float tensor:
    each counts by its integer part."""
    expect_tensors("nll_loss_with_softmax_grad", probs=probs, labels=labels)
    _softmax_grad_checks(probs.spec, labels.spec)
    reduction = _check_reduction("nll_loss_with_softmax_grad", reduction)
    if not isinstance(loss_grad, Tensor):
        loss_grad = constant(loss_grad, dtypes.float32)
    loss, grad = apply_many("nll_loss_with_softmax_grad", probs, labels, loss_grad, ignore_index=ignore_index,
                            reduction=reduction)
    return loss, grad


# ----- interpolation -----
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")


def _source_index(length: int, out: int, scale: float, coordinate: str, nearest: str) -> np.ndarray:
    """For each output position along one axis, the input position nearest to it (ONNX Resize)."""
    x = np.arange(out, dtype=np.float64)
    if coordinate == "asymmetric":
        source = x / scale
    elif coordinate == "align_corners":
        source = x * (length - 1) / (out - 1) if out > 1 else np.zeros(out)
    elif coordinate == "pytorch_half_pixel" and out == 1:
        source = np.zeros(out)
    else:
        source = (x + 0.5) / scale - 0.5
    rounded = {"round_prefer_floor": np.ceil(source - 0.5), "round_prefer_ceil": np.floor(source + 0.5),
               "floor": np.floor(source), "ceil": np.ceil(source)}[nearest]
    return np.clip(rounded, 0, length - 1).astype(np.intp)


def _interpolate_infer(specs, attrs):
    shape, scales = specs[0].shape, attrs["scale_factor"]
    if len(scales) != len(shape):
        raise ValueError(f"interpolate: scale_factor needs one entry per axis of the input ({len(shape)}), got "
                         f"{len(scales)}")
    out = tuple(int(np.floor(d * s)) for d, s in zip(shape, scales))
    if any(s <= 0 for s in scales) or any(o < 1 for o in out):
        raise ValueError(f"interpolate: scale_factor {scales} turns shape {shape} into {out}; every axis must "
                         "keep at least one element")
    return [TensorSpec(out, specs[0].dtype)]


def _interpolate_kernel(op, env):
    attrs = op.attrs
    shape, out = op.inputs[0].shape, op.outputs[0].shape
    key = np.ix_(*(_source_index(n, o, s, attrs["coordinate_transformation_mode"], attrs["nearest_mode"])
                   for n, o, s in zip(shape, out, attrs["scale_factor"])))
    return lambda t: t[key]


def _interpolate_grad(op, grads, fwd):
    """Axis by axis, sum the gradient back onto the input element each output position copied."""
    grad = grads[0]
    if grad is None:
        return [None]
    attrs, shape = op.attrs, op.inputs[0].shape
    for axis, (n, o, scale) in enumerate(zip(shape, op.outputs[0].shape, attrs["scale_factor"])):
        source = _source_index(n, o, scale, attrs["coordinate_transformation_mode"], attrs["nearest_mode"])
        if n != o or not np.array_equal(source, np.arange(n)):
            grad = blocks.scatter_add(grad, constant(source.astype(np.int32)), axis, n)
    return [grad]


register(OpDef("interpolate", _interpolate_infer, _interpolate_kernel, grad=_interpolate_grad, popart_class="ResizeOp"))


def interpolate(t: Tensor, scale_factor: Optional[Tuple[float, ...]] = (1.0, 1.0, 1.0, 1.0),
                mode: Optional[str] = "nearest", nearest_mode: Optional[str] = "round_prefer_floor",
                coordinate_transformation_mode: Optional[str] = "half_pixel") -> Tensor:
    """Resize ``t``: each axis becomes floor(length * scale_factor) long and takes the nearest input
    element (ONNX Resize rules for ``nearest_mode`` and ``coordinate_transformation_mode``)."""
    if mode not in ("nearest", "linear", "cubic"):
        raise ValueError(f"interpolate: mode {mode!r} is not valid, must be nearest, linear or cubic")
    if nearest_mode not in _NEAREST_MODES:
        raise ValueError(f"interpolate: nearest_mode {nearest_mode!r} is not valid, must be one of "
                         f"{', '.join(_NEAREST_MODES)}")
    if coordinate_transformation_mode not in _COORDINATE_MODES:
        raise ValueError(f"interpolate: coordinate_transformation_mode {coordinate_transformation_mode!r} is not "
                         f"valid, must be one of {', '.join(_COORDINATE_MODES)}")
    if mode != "nearest":
        raise NotImplementedError(f"interpolate: mode {mode!r} is not implemented; only 'nearest' is")
    if coordinate_transformation_mode == "tf_crop_and_resize":
        raise NotImplementedError("interpolate: coordinate_transformation_mode 'tf_crop_and_resize' is not "
                                  "implemented (it needs a region of interest)")
    return apply("interpolate", t, scale_factor=tuple(float(s) for s in scale_factor), mode=mode,
                 nearest_mode=nearest_mode, coordinate_transformation_mode=coordinate_transformation_mode)
