"""Convolutions and pooling over [N, C, *spatial] tensors (1, 2 or 3 spatial axes), and RoI align.

Padding lists every spatial axis's leading pad, then every trailing pad (ONNX order): for 2-D,
``(top, left, bottom, right)``. ``pad_type`` 'same_upper'/'same_lower' choose pads so that each
output axis is ceil(input / stride) long, the odd pad going at the end or the start. Windows are
NumPy strided views; the kernels themselves are in ``conv_kernels.py`` and ``pool_kernels.py``.
"""
from __future__ import annotations

from typing import List, Literal, Optional, Sequence, Tuple

import numpy as np

from workbench.ir import Constant, Tensor, TensorSpec, constant

from . import conv_grads, conv_kernels as kernels, pool_kernels
from .arguments import expect_tensors
from .registry import OpDef, apply, register
from .rules import check_dtype, same_dtype

__all__ = ["conv", "conv_transpose", "average_pool", "max_pool", "roi_align"]

PadType = Literal["not_set", "same_upper", "same_lower", "valid"]


def _ints(op_type: str, name: str, values: Optional[Sequence[int]], length: int, fill: int) -> tuple[int, ...]:
    """``values`` as ``length`` ints. None, or popxl's all-default value of another length (its
    defaults are written for 2-D), means ``fill`` everywhere."""
    if values is None or (len(values) != length and all(v == fill for v in values)):
        return (fill,) * length
    values = tuple(int(v) for v in values)
    if len(values) != length:
        raise ValueError(f"{op_type}: {name} needs {length} values for this input, got {list(values)}")
    return values


def _spatial_rank(op_type: str, t: Tensor) -> int:
    expect_tensors(op_type, t=t)
    if not 3 <= t.rank <= 5:
        raise ValueError(f"{op_type}: the input must be [N, C, *spatial] with 1 to 3 spatial axes, got shape "
                         f"{t.shape}")
    return t.rank - 2


def _pads(op_type: str, spatial: Sequence[int], extent: Sequence[int], stride: Sequence[int],
          padding: Sequence[int], pad_type: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Leading and trailing pads per axis; ``extent`` is the dilated kernel size."""
    rank = len(spatial)
    if pad_type == "not_set":
        if any(p < 0 for p in padding):
            raise ValueError(f"{op_type}: padding must be >= 0, got {list(padding)}")
        return tuple(padding[:rank]), tuple(padding[rank:])
    if pad_type == "valid":
        return (0,) * rank, (0,) * rank
    if pad_type not in ("same_upper", "same_lower"):
        raise ValueError(f"{op_type}: pad type {pad_type!r} is not valid, must be not_set, same_upper, "
                         "same_lower or valid")
    totals = [max(0, (-(-n // s) - 1) * s + e - n) for n, e, s in zip(spatial, extent, stride)]
    small = tuple(total // 2 for total in totals)
    large = tuple(total - total // 2 for total in totals)
    return (small, large) if pad_type == "same_upper" else (large, small)


def _out_length(n: int, begin: int, end: int, extent: int, stride: int, ceil_mode: bool = False) -> int:
    span = n + begin + end - extent
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= n + begin:
        out -= 1   # the last window must start inside the input or its leading pad
    return out


def _conv_params(op_type: str, t: Tensor, kernel: Sequence[int], stride, padding, dilation, pad_type) -> dict:
    rank = _spatial_rank(op_type, t)
    stride = _ints(op_type, "stride", stride, rank, 1)
    dilation = _ints(op_type, "dilation", dilation, rank, 1)
    padding = _ints(op_type, "padding", padding, 2 * rank, 0)
    if any(v < 1 for v in stride + dilation):
        raise ValueError(f"{op_type}: stride {list(stride)} and dilation {list(dilation)} must be >= 1")
    extent = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilation))
    begin, end = _pads(op_type, t.shape[2:], extent, stride, padding, pad_type)
    return {"stride": stride, "dilation": dilation, "pads_begin": begin, "pads_end": end}


# ----- convolution -----
def _conv_infer(specs, attrs):
    t, weight, groups = specs[0], specs[1], attrs["groups"]
    check_dtype("conv", t, "float")
    same_dtype("conv", specs)
    if len(weight.shape) != len(t.shape) or groups < 1 or weight.shape[0] % groups or (
            weight.shape[1] * groups != t.shape[1]):
        raise ValueError(f"conv: weight {weight.shape} must be [C_out, C_in / groups, *kernel] with C_out "
                         f"divisible by groups={groups}, for input {t.shape} (C_in={t.shape[1]})")
    extent = [(k - 1) * d + 1 for k, d in zip(weight.shape[2:], attrs["dilation"])]
    out = tuple(_out_length(n, b, e, k, s) for n, b, e, k, s in zip(
        t.shape[2:], attrs["pads_begin"], attrs["pads_end"], extent, attrs["stride"]))
    if any(o < 1 for o in out):
        raise ValueError(f"conv: the kernel {weight.shape[2:]} (dilated {extent}) does not fit the padded input "
                         f"{t.shape}")
    return [TensorSpec((t.shape[0], weight.shape[0]) + out, t.dtype)]


def _conv_kernel(op, env):
    """A constant weight (an ONNX initializer, say) is handed to the kernel, which may prepare it once."""
    attrs, weight = op.attrs, op.inputs[1]
    return kernels.conv(op.inputs[0].shape, weight.shape, attrs["stride"], attrs["dilation"],
                        tuple(zip(attrs["pads_begin"], attrs["pads_end"])), attrs["groups"],
                        op.outputs[0].shape[2:], op.inputs[0].dtype.as_numpy(),
                        weight.data if isinstance(weight, Constant) else None)


register(OpDef("conv", _conv_infer, _conv_kernel, grad=conv_grads.conv_grad, popart_class="ConvOp",
               poplibs_plan="convolution"))


def conv(t: Tensor, weight: Tensor, stride: Optional[Tuple[int]] = (1, 1),
         padding: Optional[Tuple[int]] = (0, 0, 0, 0), dilation: Optional[Tuple[int]] = (1, 1),
         groups: Optional[int] = 1, pad_type: Optional[PadType] = "not_set",
         available_memory_proportions: Optional[List[float]] = None, partials_types: Optional[List[str]] = None,
         enable_conv_dithering: Optional[List[int]] = None) -> Tensor:
    """Convolve ``t`` ([N, C_in, *spatial]) with ``weight`` ([C_out, C_in / groups, *kernel]); no
    bias. ``padding`` is (begin pads..., end pads...), for 2-D (top, left, bottom, right)."""
    expect_tensors("conv", weight=weight)
    params = _conv_params("conv", t, weight.shape[2:], stride, padding, dilation, pad_type)
    if available_memory_proportions:  # recorded for PopART's ConvOp view and the planning log (no tiles planned)
        params["available_memory_proportions"] = tuple(float(p) for p in available_memory_proportions)
    if enable_conv_dithering:  # recorded for the planning log; the simulated IPU computes alike either way
        params["enable_conv_dithering"] = tuple(int(d) for d in enable_conv_dithering)
    return apply("conv", t, weight, groups=int(groups or 1), **params)


# ----- transposed convolution -----
def _conv_transpose_infer(specs, attrs):
    t, weight, groups = specs[0], specs[1], attrs["groups"]
    check_dtype("conv_transpose", t, "float")
    same_dtype("conv_transpose", specs)
    if len(weight.shape) != len(t.shape) or groups < 1 or weight.shape[0] != t.shape[1] or t.shape[1] % groups:
        raise ValueError(f"conv_transpose: weight {weight.shape} must be [C_in, C_out / groups, *kernel] with "
                         f"C_in={t.shape[1]} divisible by groups={groups}, for input {t.shape}")
    return [TensorSpec((t.shape[0], weight.shape[1] * groups) + attrs["output_shape"], t.dtype)]


def _conv_transpose_kernel(op, env):
    attrs = op.attrs
    return kernels.conv_transpose(op.inputs[0].shape, op.inputs[1].shape, attrs["stride"], attrs["dilation"],
                                  attrs["pads_begin"], attrs["output_shape"], attrs["groups"],
                                  op.inputs[0].dtype.as_numpy())


register(OpDef("conv_transpose", _conv_transpose_infer, _conv_transpose_kernel, grad=conv_grads.conv_transpose_grad,
               poplibs_plan="convolution",
               popart_class="ConvTransposeOp"))


def conv_transpose(t: Tensor, weight: Tensor, stride: Optional[Tuple[int]] = (1, 1),
                   padding: Optional[Tuple[int]] = (0, 0, 0, 0), dilation: Optional[Tuple[int]] = (1, 1),
                   groups: Optional[int] = 1, pad_type: Optional[PadType] = "not_set",
                   output_padding: Optional[Tuple[int]] = (), output_shape: Optional[Tuple[int]] = (),
                   available_memory_proportions: Optional[List[float]] = None,
                   partials_types: Optional[List[str]] = None, enable_conv_dithering: Optional[List[int]] = None):
    """The transpose (gradient) of ``conv``: ``weight`` is [C_in, C_out / groups, *kernel]. Each
    output axis is stride * (n - 1) + output_padding + dilated kernel - pads, unless
    ``output_shape`` is given (spatial, or the whole [N, C_out, *spatial] as popxl's tests pass it); then the
    pads are derived from it (ONNX ConvTranspose)."""
    rank = _spatial_rank("conv_transpose", t)
    expect_tensors("conv_transpose", weight=weight)
    stride = _ints("conv_transpose", "stride", stride, rank, 1)
    dilation = _ints("conv_transpose", "dilation", dilation, rank, 1)
    extra = _ints("conv_transpose", "output_padding", output_padding or None, rank, 0)
    full = [s * (n - 1) + (k - 1) * d + 1 + p for n, k, s, d, p in zip(
        t.shape[2:], weight.shape[2:], stride, dilation, extra)]
    output_shape = _spatial_output_shape(t, weight, groups, output_shape)
    if output_shape or pad_type in ("same_upper", "same_lower"):
        target = _ints("conv_transpose", "output_shape", output_shape or None, rank, 0) if output_shape else [
            n * s for n, s in zip(t.shape[2:], stride)]
        totals = [f - o for f, o in zip(full, target)]
        if any(total < 0 for total in totals):
            raise ValueError(f"conv_transpose: output shape {list(target)} is larger than the largest possible "
                             f"{full}")
        halves = [total // 2 for total in totals]
        begin = halves if pad_type == "same_upper" else [total - h for total, h in zip(totals, halves)]
    else:
        begin_end = _pads("conv_transpose", t.shape[2:], [1] * rank, stride,
                          _ints("conv_transpose", "padding", padding, 2 * rank, 0), pad_type)
        begin = begin_end[0]
        target = [f - b - e for f, b, e in zip(full, *begin_end)]
        if any(o < 1 for o in target):
            raise ValueError(f"conv_transpose: padding {list(padding)} leaves no output from {full}")
    return apply("conv_transpose", t, weight, groups=int(groups or 1), stride=stride, dilation=dilation,
                 pads_begin=tuple(begin), output_shape=tuple(int(o) for o in target))


def _spatial_output_shape(t: Tensor, weight: Tensor, groups, output_shape) -> tuple:
    """``output_shape``'s spatial part: a shape of the input's rank must start with N and C_out."""
    shape = tuple(int(o) for o in output_shape or ())
    if len(shape) != t.rank:
        return shape
    leading = (t.shape[0], weight.shape[1] * int(groups or 1))
    if shape[:2] != leading:
        raise ValueError(f"conv_transpose: a whole output_shape {list(shape)} must start with the batch and output "
                         f"channels {list(leading)}; or give the spatial shape {list(shape[2:])} alone")
    return shape[2:]


# ----- pooling -----
def _pool_params(op_type: str, t: Tensor, kernel_size, stride, padding, out_pads, dilation, in_dilations,
                 auto_pad, ceil_mode) -> dict:
    rank = _spatial_rank(op_type, t)
    kernel = tuple(int(k) for k in kernel_size)
    if len(kernel) != rank or any(k < 1 for k in kernel):
        raise ValueError(f"{op_type}: kernel_size needs {rank} positive values for input {t.shape}, got "
                         f"{list(kernel_size)}")
    if any(_ints(op_type, "out_pads", out_pads, 2 * rank, 0)) or any(
            v != 1 for v in _ints(op_type, "in_dilations", in_dilations, rank, 1)):
        raise NotImplementedError(f"{op_type}: out_pads and in_dilations other than the defaults are not "
                                  "implemented")
    params = _conv_params(op_type, t, kernel, stride, padding, dilation, auto_pad or "not_set")
    return {"kernel_size": kernel, "ceil_mode": bool(ceil_mode), **params}


def _pool_geometry(shape: Sequence[int], attrs):
    """Dilated kernel extent, output lengths and the pads to apply (the trailing ones grown so that
    ceil-mode windows fit)."""
    extent = tuple((k - 1) * d + 1 for k, d in zip(attrs["kernel_size"], attrs["dilation"]))
    out = tuple(_out_length(n, b, e, k, s, attrs["ceil_mode"]) for n, b, e, k, s in zip(
        shape[2:], attrs["pads_begin"], attrs["pads_end"], extent, attrs["stride"]))
    ends = tuple(max(e, (o - 1) * s + k - n - b) for n, b, e, k, s, o in zip(
        shape[2:], attrs["pads_begin"], attrs["pads_end"], extent, attrs["stride"], out))
    return extent, out, ((0, 0), (0, 0)) + tuple(zip(attrs["pads_begin"], ends))


def _pool_infer(op_type: str):
    def infer(specs, attrs):
        check_dtype(op_type, specs[0], "float")
        _, out, _ = _pool_geometry(specs[0].shape, attrs)
        if any(o < 1 for o in out):
            raise ValueError(f"{op_type}: kernel {attrs['kernel_size']} does not fit the padded input "
                             f"{specs[0].shape}")
        return [TensorSpec(specs[0].shape[:2] + out, specs[0].dtype)]
    return infer


def _pool_kernel(build):
    def kernel(op, env):
        shape, attrs = op.inputs[0].shape, op.attrs
        _, out, pad = _pool_geometry(shape, attrs)
        return build(shape, attrs["kernel_size"], attrs["stride"], attrs["dilation"], pad[2:], out,
                     op.inputs[0].dtype.as_numpy())
    return kernel


def _pool_layout(op) -> dict:
    shape, attrs = op.inputs[0].shape, op.attrs
    _, _, pad = _pool_geometry(shape, attrs)
    return {"padded": tuple(n + b + e for n, (b, e) in zip(shape[2:], pad[2:])), "kernel": attrs["kernel_size"],
            "stride": attrs["stride"], "dilation": attrs["dilation"], "pads_begin": attrs["pads_begin"]}


def _max_pool_grad(op, grads, fwd):
    if grads[0] is None:
        return [None]
    return [conv_grads.max_pool_grad(fwd(op.inputs[0]), fwd(op.outputs[0]), grads[0], **_pool_layout(op))]


def _average_pool_grad(op, grads, fwd):
    """Each window's gradient, divided by the window's count, goes to every element of it."""
    grad = grads[0]
    if grad is None:
        return [None]
    shape = op.inputs[0].shape
    _, out, pad = _pool_geometry(shape, op.attrs)
    counts = pool_kernels.window_counts(shape, op.attrs["kernel_size"], op.attrs["stride"], op.attrs["dilation"], pad[2:],
                                   out)
    share = grad / constant(counts, dtype=grad.dtype)
    return [conv_grads.windows_back(lambda offset: share, shape, **_pool_layout(op))]


register(OpDef("max_pool", _pool_infer("max_pool"), _pool_kernel(pool_kernels.max_pool), grad=_max_pool_grad,
               popart_class="MaxPoolOp"))
register(OpDef("average_pool", _pool_infer("average_pool"), _pool_kernel(pool_kernels.average_pool),
               grad=_average_pool_grad, popart_class="AveragePoolOp"))


def average_pool(t: Tensor, kernel_size: Tuple[int, ...], stride: Optional[Tuple[int]] = None,
                 padding: Optional[Tuple[int]] = None, out_pads: Optional[Tuple[int]] = None,
                 dilation: Optional[Tuple[int]] = None, in_dilations: Optional[Tuple[int]] = None,
                 auto_pad: Optional[PadType] = "not_set", ceil_mode: bool = False) -> Tensor:
    """Mean of each ``kernel_size`` window of ``t`` ([N, C, *spatial]); padded positions are not
    counted. ``ceil_mode`` rounds the output length up instead of down."""
    return apply("average_pool", t, **_pool_params("average_pool", t, kernel_size, stride, padding, out_pads,
                                                   dilation, in_dilations, auto_pad, ceil_mode))


def max_pool(t: Tensor, kernel_size: Tuple[int], stride: Optional[Tuple[int]] = None,
             padding: Optional[Tuple[int]] = None, out_pads: Optional[Tuple[int]] = None,
             dilation: Optional[Tuple[int]] = None, in_dilations: Optional[Tuple[int]] = None,
             auto_pad: Optional[PadType] = "not_set", ceil_mode: bool = False,
             storage_order: Literal["row", "column"] = "row") -> Tensor:
    """Maximum of each ``kernel_size`` window of ``t`` ([N, C, *spatial]); ``storage_order`` only
    concerns the indices output, which popxl does not return."""
    if storage_order not in ("row", "column"):
        raise ValueError(f"max_pool: storage_order must be 'row' or 'column', got {storage_order!r}")
    return apply("max_pool", t, **_pool_params("max_pool", t, kernel_size, stride, padding, out_pads,
                                               dilation, in_dilations, auto_pad, ceil_mode))


# ----- region-of-interest pooling -----
def _roi_align_infer(specs, attrs):
    t, rois, batch_index = specs
    check_dtype("roi_align", t, "float")
    same_dtype("roi_align", [t, rois])
    check_dtype("roi_align", batch_index, "int")
    if len(t.shape) != 4 or len(rois.shape) != 2 or rois.shape[1] != 4 or batch_index.shape != rois.shape[:1]:
        raise ValueError(f"roi_align: expected t [N, C, H, W], rois [num_rois, 4] and batch_index [num_rois], got "
                         f"{t.shape}, {rois.shape} and {batch_index.shape}")
    return [TensorSpec((rois.shape[0], t.shape[1]) + attrs["output_size"], t.dtype)]


def _interpolation_weights(points: np.ndarray, length: int) -> np.ndarray:
    """[len(points), length] bilinear weights along one axis; points more than one pixel outside
    the map weigh nothing, points past the last pixel use it alone."""
    weights = np.zeros((len(points), length))
    inside = (points >= -1.0) & (points <= length)
    p = np.clip(points, 0, None)
    low = np.minimum(np.floor(p).astype(np.intp), length - 1)
    high = np.minimum(low + 1, length - 1)
    frac = np.where(low >= length - 1, 0.0, p - low)
    rows = np.arange(len(points))
    np.add.at(weights, (rows, low), np.where(inside, 1 - frac, 0))
    np.add.at(weights, (rows, high), np.where(inside, frac, 0))
    return weights


def _roi_align_kernel(op, env):
    out_h, out_w = op.attrs["output_size"]
    scale, ratio = op.attrs["spatial_scale"], op.attrs["sampling_ratio"]
    height, width = op.inputs[0].shape[2:]
    dtype = op.inputs[0].dtype.as_numpy()

    def samples(start: float, extent: float, bins: int) -> tuple[np.ndarray, int]:
        grid = ratio if ratio > 0 else int(np.ceil(extent / bins))
        step = extent / bins
        offsets = np.arange(bins)[:, None] + (np.arange(grid)[None, :] + 0.5) / grid
        return (start + offsets * step).ravel(), grid

    def roi_align(t, rois, batch_index):
        out = np.empty((len(rois), t.shape[1], out_h, out_w), dtype)
        for r, (box, image) in enumerate(zip(rois.astype(np.float64) * scale, batch_index)):
            x1, y1, x2, y2 = box
            ys, grid_h = samples(y1, max(y2 - y1, 1.0), out_h)
            xs, grid_w = samples(x1, max(x2 - x1, 1.0), out_w)
            sampled = np.einsum("ih,chw,jw->cij", _interpolation_weights(ys, height), t[image],
                                _interpolation_weights(xs, width))
            out[r] = sampled.reshape(-1, out_h, grid_h, out_w, grid_w).mean((2, 4))
        return out
    return roi_align


register(OpDef("roi_align", _roi_align_infer, _roi_align_kernel, popart_class="RoiAlignOp"))


def roi_align(t: Tensor, rois: Tensor, batch_index: Tensor, output_size: Tuple[int], spatial_scale: float,
              sampling_ratio: int) -> Tensor:
    """Average-pool each region of interest ``rois[r]`` = (x1, y1, x2, y2) of image
    ``batch_index[r]`` of ``t`` ([N, C, H, W]) into an ``output_size`` grid of bins, each the mean of
    ``sampling_ratio``² bilinear samples (adaptive when 0). Coordinates are scaled by
    ``spatial_scale``, without a half-pixel offset (ONNX RoiAlign-10)."""
    output_size = tuple(int(s) for s in output_size)
    if len(output_size) != 2 or min(output_size) < 1:
        raise ValueError(f"roi_align: output_size must be two positive ints (height, width), got {output_size}")
    if int(sampling_ratio) < 0:
        raise ValueError(f"roi_align: sampling_ratio must be >= 0, got {sampling_ratio}")
    return apply("roi_align", t, rois, batch_index, output_size=output_size, spatial_scale=float(spatial_scale),
                 sampling_ratio=int(sampling_ratio))
