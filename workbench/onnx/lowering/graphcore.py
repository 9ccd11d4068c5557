"""Lowering rules of the ai.graphcore ops: losses, Scale, Subsample, Gelu, GeluErf, Swish, Nop, Detach,
PrintTensor, GroupNormalization, Init, IncrementMod, DynamicSlice/Update/Add/Zero, CheckpointOutput, Square,
ConvFlipWeights, Abort, ReplicatedAllReduce, ReplicatedReduceScatter, ScatterReduce, Log1p, Expm1, Atan2, Round,
NearbyInt, Fmod, Remainder, Reshape, Reverse, Slice, DepthToSpace, ScaledAdd, GroupedGather, ReduceMedian,
Bucketize, Sort, ShapedDropout, SequenceSlice, MultiConv, CtcLoss and NormalizeImage. Remainder, DepthToSpace
and Slice share the rules of ONNX's Mod-10, DepthToSpace-11 and Slice-1."""
from __future__ import annotations

import numpy as np

from workbench import ops
from workbench.ir import constant, get_current_graph
from workbench.ops import abort, ctc, debug
from workbench.ops.debug import FloatFormat
from workbench.ops.registry import apply, apply_many

from .. import dtypes, replica_settings
from ..graphcore import COLLECTIVE_COMM_GROUP, COLLECTIVE_OPERATOR, multiconv_params, reshaped
from ..shapes import GRAPHCORE
from . import more as _more, shape as _shape  # noqa: F401  (they register the ONNX rules some ai.graphcore ops share)
from .indices import integer_indices
from .random import dropped
from .reductions import checked_axes
from .table import ONNX, RULES, TRAINING, LoweringError, NodeContext, lowers


def graphcore(op_type: str):
    return lowers(op_type, 1, domain=GRAPHCORE)


def _reduce(x, reduction: str):
    if reduction == "Sum":
        return ops.sum(x)
    if reduction == "Mean":
        return ops.mean(x)
    return x


@graphcore("L1")
def _l1(ctx: NodeContext):
    x = ctx.input(0)
    scaled = ops.mul(ops.abs(x), constant(np.array(ctx.attrs["lambda"], x.dtype.as_numpy()), x.dtype))
    return [_reduce(scaled, ctx.attrs.get("reduction", "Mean"))]


@graphcore("IdentityLoss")
def _identity_loss(ctx: NodeContext):
    return [_reduce(ctx.input(0), ctx.attrs.get("reduction", "Mean"))]


@graphcore("Nll")
def _nll(ctx: NodeContext):
    reduction = {"Mean": "mean", "Sum": "sum", "NoReduction": "none"}[ctx.attrs.get("reduction", "Mean")]
    return [ops.nll_loss(ctx.input(0), ctx.input(1), ignore_index=ctx.attrs.get("ignoreIndex"),
                         reduction=reduction, log_prob=bool(ctx.attrs.get("inputIsLogProbability", 0)))]


@graphcore("Scale")
def _scale(ctx: NodeContext):
    x = ctx.input(0)
    return [ops.mul(x, constant(np.array(ctx.attrs["scale"], x.dtype.as_numpy()), x.dtype))]


@graphcore("Subsample")
def _subsample(ctx: NodeContext):
    return [ops.subsample(ctx.input(0), list(ctx.attrs["strides"]))]


for _op_type, _fn in (("Gelu", ops.gelu), ("Swish", ops.swish), ("Nop", ops.identity), ("Detach", ops.detach),
                      ("CheckpointOutput", ops.identity), ("Square", lambda t: ops.mul(t, t)),
                      ("GeluErf", ops.geluerf), ("Log1p", lambda t: apply("log1p", t)),
                      ("Expm1", lambda t: apply("expm1", t)), ("Round", lambda t: apply("round", t)),
                      ("NearbyInt", lambda t: apply("round", t))):  # both round halves to even, as ONNX's Round
    graphcore(_op_type)(lambda ctx, _fn=_fn: [_fn(ctx.input(0))])
graphcore("Remainder")(RULES[(ONNX, "Mod", 10)])  # Python's remainder: ONNX's Mod without fmod
graphcore("DepthToSpace")(RULES[(ONNX, "DepthToSpace", 11)])
graphcore("Slice")(RULES[(ONNX, "Slice", 1)])  # starts, ends and axes as attributes (a since-version of 1)


@graphcore("MultiConv")
def _multiconv(ctx: NodeContext):
    """Each convolution on its own (the workbench plans every convolution alone), its bias added where given."""
    outputs = []
    proportions, dithering = ctx.attrs.get("availableMemoryProportions"), ctx.attrs.get("enableConvDithering")
    ranks = [ctx.input(first).rank - 2 for first in range(0, len(ctx.node.input), 3)]
    for index, conv in enumerate(multiconv_params(ranks, ctx.attrs)):
        if any(d != 1 for d in conv["inDilations"]) or any(conv["outPads"]):
            raise LoweringError("MultiConv: input dilations and output padding are not supported by the workbench; "
                                "use ConvTranspose for a convolution that needs them")
        x, w = ctx.input(conv["data"]), ctx.input(conv["weights"])
        y = ops.conv(x, w, stride=tuple(conv["strides"]), padding=tuple(conv["pads"]),
                     dilation=tuple(conv["dilations"]),
                     available_memory_proportions=[float(proportions[index])] if proportions else None,
                     enable_conv_dithering=[int(dithering[index])] if dithering else None)
        if ctx.has(conv["bias"]):
            y = ops.add(y, ops.reshape(ctx.input(conv["bias"]), (-1,) + (1,) * (x.rank - 2)))
        outputs.append(y)
    return outputs


@graphcore("CtcLoss")
def _ctc_loss(ctx: NodeContext):
    """Each sample's CTC loss (infinite ones 0 with ``zeroInfinity``), then its sum, or the mean of each loss
    divided by its target's length (at least 1), as PyTorch's CTCLoss reduces them."""
    log_probs, targets, input_lengths, target_lengths = ctx.inputs()
    losses = ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=int(ctx.attrs.get("blank", 0)))
    if int(ctx.attrs.get("zeroInfinity", 0)):
        losses = ops.where(ops.isinf(losses), constant(np.zeros((), losses.dtype.as_numpy()), losses.dtype), losses)
    reduction = ctx.attrs.get("reduction", "Mean")
    if reduction == "Mean":
        lengths = ops.cast(target_lengths, losses.dtype)
        one = constant(np.ones((), losses.dtype.as_numpy()), losses.dtype)
        losses = ops.mean(ops.div(losses, ops.maximum(lengths, one)))
    elif reduction == "Sum":
        losses = ops.sum(losses)
    named = str(ctx.attrs.get("outDataType", "UNDEFINED"))
    return [losses if named == "UNDEFINED" else ops.cast(losses, dtypes.workbench_dtype(dtypes.onnx_code(named)))]


@graphcore("NormalizeImage")
def _normalize_image(ctx: NodeContext):
    """``(image * scale - offsets) * scales`` per channel, in the offsets' type, with a fourth channel of 0."""
    image, offsets, scales = ctx.inputs()
    dtype = offsets.dtype
    scale = constant(np.array(float(ctx.attrs.get("scale", 1.0)), dtype.as_numpy()), dtype)
    normal = ops.mul(ops.sub(ops.mul(ops.cast(image, dtype), scale), offsets), scales)
    return [ops.concat([normal, constant(np.zeros((*image.shape[:-1], 1), dtype.as_numpy()), dtype)], axis=-1)]


@graphcore("SequenceSlice")
def _sequence_slice(ctx: NodeContext):
    """Runs of rows of the source (input 0) written into a copy of the destination (input 1): input 2 counts
    the rows of each run, inputs 3 and 4 give where it starts in each."""
    return [apply("sequence_slice", *ctx.inputs(), zero_unused=bool(int(ctx.attrs.get("zeroUnused", 0))))]


@graphcore("Fmod")
def _fmod(ctx: NodeContext):
    return [ops.fmod(ctx.input(0), ctx.input(1))]


@graphcore("Reshape")
def _reshape(ctx: NodeContext):
    x = ctx.input(0)
    return [ops.reshape(x, reshaped(ctx.attrs["shape"], x.shape))]


@graphcore("Reverse")
def _reverse(ctx: NodeContext):
    x = ctx.input(0)
    axes = [int(d) % x.rank for d in ctx.attrs["dimensions"]]
    return [ops.slice(x, start=[-1] * len(axes), stop=None, step=[-1] * len(axes), axis=axes)] if axes else [x]


@graphcore("ScaledAdd")
def _scaled_add(ctx: NodeContext):
    """``scale0 * X + scale1 * Y``; a third and fourth input, where given, are scalar tensors for the scales."""
    a = ctx.input(2) if ctx.has(2) else float(ctx.attrs.get("scale0", 1.0))
    b = ctx.input(3) if ctx.has(3) else float(ctx.attrs.get("scale1", 1.0))
    return [ops.scaled_add(ctx.input(0), ctx.input(1), a, b)]


@graphcore("GroupedGather")
def _grouped_gather(ctx: NodeContext):
    """PopART counts ``axis`` over the whole tensor, the group's leading axis included."""
    return [ops.groupedgather(ctx.input(0), integer_indices(ctx.input(1)), axis=int(ctx.attrs.get("axis", 1)) - 1,
                              group_size=int(ctx.attrs.get("group_size", 1)))]


@graphcore("Atan2")
def _atan2(ctx: NodeContext):
    return [apply("atan2", ctx.input(0), ctx.input(1))]


@graphcore("ReduceMedian")
def _reduce_median(ctx: NodeContext):
    """The median over ``axes`` (every axis by default), the lower middle value for an even count, and its
    int32 position among the reduced elements, those axes flattened in order."""
    x, axes = ctx.input(0), ctx.attrs.get("axes")
    return apply_many("median", x, axis=None if axes is None else checked_axes(axes, x.rank),
                      keepdims=bool(int(ctx.attrs.get("keepdims", 1))))


@graphcore("Bucketize")
def _bucketize(ctx: NodeContext):
    return [apply("bucketize", ctx.input(0), ctx.input(1), right=bool(int(ctx.attrs.get("right", 0))))]


@graphcore("Sort")
def _sort(ctx: NodeContext):
    """Every element along ``axis`` in order (largest first with ``descending``) and its int32 position:
    a top-k of the whole axis, whose ties keep the input's order (so ``stable`` holds either way)."""
    x = ctx.input(0)
    axis = int(ctx.attrs.get("axis", -1)) % x.rank
    values, indices = ops.topk(x, x.shape[axis], axis, largest=bool(int(ctx.attrs.get("descending", 0))),
                               sorted=True)
    return [values, indices]


@graphcore("ShapedDropout")
def _shaped_dropout(ctx: NodeContext):
    """Inference: the identity. Training: a mask of ``shape``, broadcast over the input, keeps each entry with
    probability 1 - ratio (a new mask each run), the kept values scaled by 1 / (1 - ratio)."""
    x, ratio = ctx.input(0), float(ctx.attrs.get("ratio", 0.5))
    if not ctx.model_state.get(TRAINING) or ratio == 0.0:
        return [x]
    return [dropped(ctx, x, tuple(int(d) for d in ctx.attrs["shape"]), ratio)[0]]


@graphcore("PrintTensor")
def _print_tensor(ctx: NodeContext):
    """Poplar's print options as the builder writes them: characters as their codes, and a summary
    threshold or line width of 0 for none. The gradient is printed too unless ``print_gradient`` is 0,
    titled as PopART titles it: ``<title>_gradient``, or without a title ``Gradient___<input>``."""
    attrs = ctx.attrs
    unlimited = np.iinfo(np.int64).max
    title = attrs.get("title") or ""
    grad_title = f"{title}_gradient" if title else GRADIENT_PREFIX + ctx.node.input[0]
    return [debug.titled_gradient(ops.print_tensor(
        ctx.input(0), title=title or ctx.node.input[0], print_gradient=bool(int(attrs.get("print_gradient", 1))),
        summarise_threshold=int(attrs.get("summariseThreshold", 1000)) or unlimited,
        edge_items=int(attrs.get("edgeItems", 3)), max_line_width=int(attrs.get("maxLineWidth", 75)) or unlimited,
        digits=int(attrs.get("digits", 8)), float_format=_FLOAT_FORMATS[int(attrs.get("floatFormat", 0))],
        separator=chr(int(attrs.get("separator", 32))), open_bracket=chr(int(attrs.get("openBracket", 91))),
        close_bracket=chr(int(attrs.get("closeBracket", 93)))), grad_title)]


GRADIENT_PREFIX = "Gradient___"  # PopART's reservedGradientPrefix


_FLOAT_FORMATS: tuple[FloatFormat, ...] = ("auto", "fixed", "scientific", "none")  # PopART's FloatFormat, in order


@graphcore("GroupNormalization")
def _group_norm(ctx: NodeContext):
    x = ctx.input(0)
    y = ops.group_norm(x, ctx.input(1), ctx.input(2), num_groups=int(ctx.attrs["num_groups"]),
                       eps=float(ctx.attrs.get("epsilon", 1e-5)))
    groups = x.shape[0] * int(ctx.attrs["num_groups"])
    grouped = ops.reshape(x, (groups, -1))
    mean = ops.mean(grouped, axis=1)
    centred = ops.sub(grouped, ops.reshape(mean, (groups, 1)))
    variance = ops.mean(ops.mul(centred, centred), axis=1)
    eps = constant(np.array(ctx.attrs.get("epsilon", 1e-5), x.dtype.as_numpy()), x.dtype)
    inv_std = ops.div(constant(np.array(1, x.dtype.as_numpy()), x.dtype), ops.sqrt(ops.add(variance, eps)))
    return [y, mean, inv_std][:len(ctx.node.output)]


@graphcore("Init")
def _init(ctx: NodeContext):
    return [ops.init(tuple(ctx.attrs["shape"]), dtypes.workbench_dtype(int(ctx.attrs["data_type"])),
                     init_type="undef" if int(ctx.attrs.get("init_type", 1)) == 0 else "zero")]


@graphcore("IncrementMod")
def _increment_mod(ctx: NodeContext):
    return [ops.increment_mod(ctx.input(0), float(ctx.attrs["increment"]), float(ctx.attrs["modulus"]))]


@graphcore("DynamicSlice")
def _dynamic_slice(ctx: NodeContext):
    return [ops.dynamic_slice(ctx.input(0), ctx.input(1), list(ctx.attrs["axes"]), list(ctx.attrs["sizes"]),
                              bool(ctx.attrs.get("noOverlap", 0)))]


def _dynamic_args(ctx: NodeContext) -> tuple:
    return list(ctx.attrs["axes"]), list(ctx.attrs["sizes"]), bool(ctx.attrs.get("noOverlap", 0))


@graphcore("DynamicUpdate")
def _dynamic_update(ctx: NodeContext):
    return [ops.dynamic_update(ctx.input(0), ctx.input(1), ctx.input(2), *_dynamic_args(ctx))]


@graphcore("DynamicAdd")
def _dynamic_add(ctx: NodeContext):
    """The slice at the runtime offsets plus the update, written back (PopART's DynamicAdd)."""
    x, index, update = ctx.input(0), ctx.input(1), ctx.input(2)
    axes, sizes, no_overlap = _dynamic_args(ctx)
    added = ops.add(ops.dynamic_slice(x, index, axes, sizes, no_overlap), update)
    return [ops.dynamic_update(x, index, added, axes, sizes, no_overlap)]


@graphcore("DynamicZero")
def _dynamic_zero(ctx: NodeContext):
    """Zeros written over the slice at the runtime offsets (the third input gives the slice's shape)."""
    x, index = ctx.input(0), ctx.input(1)
    axes, sizes, no_overlap = _dynamic_args(ctx)
    shape = list(x.shape)
    for axis, size in zip(axes, sizes):
        shape[axis] = size
    zeros = constant(np.zeros(shape, x.dtype.as_numpy()), x.dtype)
    return [ops.dynamic_update(x, index, zeros, axes, sizes, no_overlap)]


@graphcore("ConvFlipWeights")
def _conv_flip_weights(ctx: NodeContext):
    """Conv weights ``[out, in, *kernel]`` as the weights of the transposed convolution: ``[in, out,
    *kernel]`` with each kernel dimension reversed (a transpose and a reversing slice, whose gradients
    give the flip of the incoming gradient)."""
    weights = ctx.input(0)
    if weights.rank < 3:
        raise ValueError(f"expected conv weights [out_channels, in_channels, *kernel], got {weights.spec}")
    swapped = ops.transpose(weights, [1, 0, *range(2, weights.rank)])
    kernel_axes = list(range(2, weights.rank))
    return [ops.slice(swapped, start=[-1] * len(kernel_axes), stop=None, step=[-1] * len(kernel_axes),
                      axis=kernel_axes)]


@graphcore("Abort")
def _abort(ctx: NodeContext):
    abort.abort(ctx.input(0) if ctx.has(0) else None)
    return []


# PopART's CollectiveOperator integers, in order, as the workbench's collectives name them.
_COLLECTIVE_OPS = ("add", "mean", "mul", "min", "max", "and", "or", "square_add", "local")


def _collective_args(ctx: NodeContext) -> dict:
    """The reduction and the replica grouping of a collective node (all replicas, adding, by default)."""
    operator = int(ctx.attrs.get(COLLECTIVE_OPERATOR, 0))
    if not 0 <= operator < len(_COLLECTIVE_OPS):
        raise ValueError(f"{COLLECTIVE_OPERATOR} {operator} is not a CollectiveOperator")
    group = ctx.attrs.get(COLLECTIVE_COMM_GROUP)
    grouping = None
    if group:
        kind, size = int(group[0]), int(group[1])
        if not 0 <= kind < len(replica_settings.KINDS):
            raise ValueError(f"{COLLECTIVE_COMM_GROUP} {list(group)}: {kind} is not a CommGroupType")
        ir = get_current_graph().ir
        stride, group_size = replica_settings.stride_and_size(replica_settings.KINDS[kind], size,
                                                              ir.replication_factor)
        grouping = ir.replica_grouping(stride, group_size)
    return {"op": _COLLECTIVE_OPS[operator], "group": grouping}


@graphcore("ReplicatedAllReduce")
def _replicated_all_reduce(ctx: NodeContext):
    return [ops.collectives.replicated_all_reduce(ctx.input(0), **_collective_args(ctx))]


@graphcore("ReplicatedReduceScatter")
def _replicated_reduce_scatter(ctx: NodeContext):
    return [ops.collectives.replicated_reduce_scatter(ctx.input(0), **_collective_args(ctx))]


@graphcore("ScatterReduce")
def _scatter_reduce(ctx: NodeContext):
    """PopART's ScatterReduce; indices of a float type are taken by value (PopART does not check their type)."""
    reduction = ctx.attrs.get("reduction", "sum")
    if reduction not in ("sum", "max", "min", "none"):
        raise ValueError(f"reduction '{reduction}' is not supported (sum, max, min and none are)")
    if int(ctx.attrs.get("group_size", 1)) != 1:
        raise ValueError("grouped scatter-reduce (group_size > 1) is not supported")
    data, indices = ctx.input(0), ctx.input(1)
    return [ops.scatter_reduce(data, integer_indices(indices), reduction,
                               initial_values=ctx.input(2) if ctx.has(2) else None,
                               axis=int(ctx.attrs.get("axis", -1)), axis_size=int(ctx.attrs["axis_size"]),
                               enable_index_broadcast=int(ctx.attrs.get("enable_index_broadcast", 1)))]
