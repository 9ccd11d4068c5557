"""Lowering rules of ONNX's neural-network ops: MatMul, Gemm, Conv, pooling, Softmax/LogSoftmax,
BatchNormalization and InstanceNormalization (inference)."""
from __future__ import annotations

import numpy as np

from workbench import ops
from workbench.ir import constant

from .table import LoweringError, NodeContext, lowers


def _scalar(value: float, like) -> object:
    return constant(np.array(value, like.dtype.as_numpy()), like.dtype)


@lowers("MatMul", 1, 9)
def _matmul(ctx: NodeContext):
    return [ops.matmul(ctx.input(0), ctx.input(1))]


@lowers("Gemm", 6, 7, 9, 11)
def _gemm(ctx: NodeContext):
    """alpha * A' B' + beta * C, A' and B' transposed as transA and transB say. A transposed
    operand is an alias of the operand (``transpose_``, as PopART inplaces it): the matrix product
    reads it in transposed order, and no transposed copy is made or counted in memory."""
    a, b = ctx.input(0), ctx.input(1)
    if ctx.attrs.get("transA", 0):
        a = ops.transpose_(a, (1, 0))
    if ctx.attrs.get("transB", 0):
        b = ops.transpose_(b, (1, 0))
    y = ops.matmul(a, b)
    alpha, beta = float(ctx.attrs.get("alpha", 1.0)), float(ctx.attrs.get("beta", 1.0))
    if alpha != 1.0:
        y = ops.mul(y, _scalar(alpha, y))
    if ctx.has(2) and beta != 0.0:
        c = ctx.input(2)
        if beta != 1.0:
            c = ops.mul(c, _scalar(beta, c))
        y = ops.add(y, c)
    return [y]


def _spatial(ctx: NodeContext, rank: int, name: str, fill: int) -> tuple:
    value = ctx.attrs.get(name) or [fill] * rank
    return tuple(int(v) for v in value)


def _pad_type(ctx: NodeContext) -> str:
    auto_pad = ctx.attrs.get("auto_pad", "NOTSET")
    return {"NOTSET": "not_set", "SAME_UPPER": "same_upper", "SAME_LOWER": "same_lower",
            "VALID": "valid"}[auto_pad]


def _conv_options(ctx: NodeContext) -> dict:
    """The Builder's planning options of a Conv node (setAvailableMemoryProportion,
    setEnableConvDithering), as the convolution's own."""
    options = {}
    if "__available_memory" in ctx.attrs:
        options["available_memory_proportions"] = [float(ctx.attrs["__available_memory"])]
    if "__enable_conv_dithering" in ctx.attrs:
        options["enable_conv_dithering"] = [int(ctx.attrs["__enable_conv_dithering"])]
    return options


@lowers("Conv", 1, 11)
def _conv(ctx: NodeContext):
    x, w = ctx.input(0), ctx.input(1)
    rank = x.rank - 2
    y = ops.conv(x, w, stride=_spatial(ctx, rank, "strides", 1), padding=_spatial(ctx, 2 * rank, "pads", 0),
                 dilation=_spatial(ctx, rank, "dilations", 1), groups=int(ctx.attrs.get("group", 1)),
                 pad_type=_pad_type(ctx), **_conv_options(ctx))
    if ctx.has(2):
        y = ops.add(y, ops.reshape(ctx.input(2), (-1,) + (1,) * rank))
    return [y]


@lowers("ConvTranspose", 1, 11)
def _conv_transpose(ctx: NodeContext):
    x, w = ctx.input(0), ctx.input(1)
    rank = x.rank - 2
    y = ops.conv_transpose(x, w, stride=_spatial(ctx, rank, "strides", 1),
                           padding=_spatial(ctx, 2 * rank, "pads", 0),
                           dilation=_spatial(ctx, rank, "dilations", 1), groups=int(ctx.attrs.get("group", 1)),
                           pad_type=_pad_type(ctx), output_padding=tuple(ctx.attrs.get("output_padding", ())),
                           output_shape=tuple(ctx.attrs.get("output_shape", ())))
    if ctx.has(2):
        y = ops.add(y, ops.reshape(ctx.input(2), (-1,) + (1,) * rank))
    return [y]


def _pool_args(ctx: NodeContext) -> dict:
    kernel = tuple(int(k) for k in ctx.attrs["kernel_shape"])
    rank = len(kernel)
    return dict(kernel_size=kernel, stride=_spatial(ctx, rank, "strides", 1),
                padding=_spatial(ctx, 2 * rank, "pads", 0), auto_pad=_pad_type(ctx),
                ceil_mode=bool(ctx.attrs.get("ceil_mode", 0)))


@lowers("MaxPool", 1, 8, 10, 11)
def _max_pool(ctx: NodeContext):
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        raise LoweringError(f"{ctx.label}: the Indices output of MaxPool is not supported")
    args = _pool_args(ctx)
    if ctx.attrs.get("dilations"):
        args["dilation"] = tuple(int(d) for d in ctx.attrs["dilations"])
    return [ops.max_pool(ctx.input(0), **args)]


@lowers("AveragePool", 1, 7, 10, 11)
def _average_pool(ctx: NodeContext):
    if ctx.attrs.get("count_include_pad", 0) and any(ctx.attrs.get("pads") or ()):
        raise LoweringError(f"{ctx.label}: count_include_pad=1 with padding is not supported")
    return [ops.average_pool(ctx.input(0), **_pool_args(ctx))]


@lowers("GlobalAveragePool", 1)
def _global_average_pool(ctx: NodeContext):
    """An average pool over the whole of each plane, whose kernel sums a plane by a product with ones (four
    to six times NumPy's mean over the spatial axes: SqueezeNet's and DenseNet's last pools)."""
    x = ctx.input(0)
    if x.rank < 3:
        return [ops.mean(x, axis=tuple(range(2, x.rank)), keepdims=True)]
    return [ops.average_pool(x, kernel_size=tuple(x.shape[2:]))]


@lowers("GlobalMaxPool", 1)
def _global_max_pool(ctx: NodeContext):
    x = ctx.input(0)
    return [ops.max(x, axis=tuple(range(2, x.rank)), keepdims=True)]


def _as_2d(x, axis: int):
    """Opsets up to 11 coerce the input to 2-D at ``axis`` for Softmax and LogSoftmax."""
    axis = axis % x.rank if x.rank else 0
    rows = int(np.prod(x.shape[:axis], dtype=np.int64))
    return x if x.rank == 2 and axis == 1 else ops.reshape(x, (rows, -1))


def _back(y, x):
    return y if tuple(y.shape) == tuple(x.shape) else ops.reshape(y, x.shape)


@lowers("Softmax", 1, 11)
def _softmax(ctx: NodeContext):
    x = ctx.input(0)
    y = ops.softmax(_as_2d(x, int(ctx.attrs.get("axis", 1))), axis=1)
    return [_back(y, x)]


@lowers("LogSoftmax", 1, 11)
def _log_softmax(ctx: NodeContext):
    x = ctx.input(0)
    flat = _as_2d(x, int(ctx.attrs.get("axis", 1)))
    y = ops.sub(flat, ops.logsumexp(flat, axis=1, keepdims=True))
    return [_back(y, x)]


@lowers("BatchNormalization", 6, 7, 9)
def _batch_norm(ctx: NodeContext):
    """Inference: normalise with the running mean and variance; further outputs pass them through."""
    x, scale, bias, mean, var = (ctx.input(i) for i in range(5))
    y = ops.batch_norm_inference(x, scale, bias, mean, var, epsilon=float(ctx.attrs.get("epsilon", 1e-5)))
    extra = [mean, var, mean, var][:len(ctx.node.output) - 1]
    return [y, *extra]


@lowers("InstanceNormalization", 6)
def _instance_norm(ctx: NodeContext):
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    flat = ops.reshape(x, (x.shape[0], x.shape[1], -1)) if x.rank != 3 else x
    y = ops.group_norm(flat, scale, bias, num_groups=x.shape[1], eps=float(ctx.attrs.get("epsilon", 1e-5)))
    return [ops.reshape(y, x.shape)]
