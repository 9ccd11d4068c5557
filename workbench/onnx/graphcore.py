"""The ai.graphcore ops as ONNX op schemas, registered with ONNX: their attributes (so that the
checker knows them) and Python shape rules (so that ONNX's own shape inference, per node or on a
whole model, infers their outputs).

Where the workbench has the op, the rule is the op registry's own (one source of truth); the
losses, whose reduction changes the output shape, have theirs here.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import onnx
import onnx.defs
import onnx.reference  # noqa: F401  before our schemas: it refuses op names shared by two domains (Gelu)
from onnx import helper

from workbench.ir import TensorSpec
from workbench.ops.registry import op_def

from . import dtypes
from .shapes import GRAPHCORE, GRAPHCORE_RULES, TensorType, type_of


def _spec(ttype: TensorType) -> TensorSpec:
    if ttype is None or ttype.shape is None or any(d is None for d in ttype.shape):
        raise ValueError("an input's shape is not known")
    return TensorSpec(tuple(ttype.shape), dtypes.workbench_dtype(ttype.elem_type))


def _known_shape(ttype: TensorType) -> tuple:
    if ttype.shape is None:
        raise ValueError("an input's shape is not known")
    return ttype.shape


def _ttype(spec: TensorSpec) -> TensorType:
    return TensorType(dtypes.onnx_code(spec.dtype.as_numpy()), tuple(spec.shape))


# The attributes of a collective node: PopART's CollectiveOperator as an integer, and the CommGroup as
# [type, group size] (written by aiGraphcore's collectives and by ``Builder.commGroup``).
COLLECTIVE_OPERATOR = "__collectiveOperator"
COLLECTIVE_COMM_GROUP = "__collectiveCommGroup"


def _same(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    return [inputs[0]]


def _loss(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    reduction = attrs.get("reduction", "Mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    if reduction == "NoReduction":
        shape = inputs[0].shape if len(inputs) == 1 else (inputs[1].shape if inputs[1] else None)
        return [TensorType(inputs[0].elem_type, shape)]
    return [TensorType(inputs[0].elem_type, ())]


def _from_registry(op_type: str, attrs_of: Callable[[Mapping], dict]) -> Callable:
    definition = op_def(op_type)

    def rule(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
        return [_ttype(s) for s in definition.infer([_spec(t) for t in inputs], attrs_of(attrs))]
    return rule


def _init(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    return [TensorType(int(attrs["data_type"]), tuple(attrs["shape"]))]


def _group_norm(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    x = inputs[0]
    stats = TensorType(x.elem_type, (_known_shape(x)[0] * int(attrs["num_groups"]),))
    return [x, stats, stats]


def _dynamic_slice(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    shape = list(_known_shape(inputs[0]))
    for axis, size in zip(attrs["axes"], attrs["sizes"]):
        shape[axis] = size
    return [TensorType(inputs[0].elem_type, tuple(shape))]


def _subsample(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """ONNX-level shape of a Subsample: each size divided by its stride, rounded down as PopART's
    builder infers it (the op itself, on the device, keeps the partial last window)."""
    shape = _known_shape(inputs[0])
    strides = list(attrs.get("strides") or [1] * len(shape))
    if len(strides) != len(shape):
        raise ValueError(f"Subsample: strides has {len(strides)} values for an input of rank {len(shape)}")
    if any(s <= 0 for s in strides):
        raise ValueError(f"Subsample: strides must be positive, got {strides}")
    return [TensorType(inputs[0].elem_type, tuple(d // s for d, s in zip(shape, strides)))]


def _lstm(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """Graphcore's LSTM: ``X [seq, batch, in]``, ``Weights [4, in + hidden, hidden]`` give ``Output``
    (``[seq, batch, hidden]``, or ``[batch, hidden]`` without ``output_full_sequence``) and ``CellState``
    ``[batch, hidden]``."""
    seq, batch, _ = _known_shape(inputs[0])
    hidden = _known_shape(inputs[1])[2]
    full = int(attrs.get("output_full_sequence", 1))
    elem = inputs[0].elem_type
    return [TensorType(elem, (seq, batch, hidden) if full else (batch, hidden)), TensorType(elem, (batch, hidden))]


def _conv_flip_weights(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """Conv weights ``[out, in, *kernel]`` as ``[in, out, *kernel]`` (the kernel flipped)."""
    shape = _known_shape(inputs[0])
    if len(shape) < 3:
        raise ValueError(f"ConvFlipWeights: expected conv weights [out_channels, in_channels, *kernel], got "
                         f"shape {list(shape)}")
    return [TensorType(inputs[0].elem_type, (shape[1], shape[0], *shape[2:]))]


def _median_attrs(attrs: Mapping) -> dict:
    axes = attrs.get("axes")
    return {"axis": None if axes is None else tuple(int(a) for a in axes), "keepdims": bool(attrs.get("keepdims", 1))}


def _reduce_median(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """The median's type and its positions'; with an axis out of range, shapes left unknown (PopART refuses the
    node when the session is made, in its own words: the lowering's)."""
    rank = len(_known_shape(inputs[0]))
    if any(not -rank <= int(axis) < rank for axis in attrs.get("axes") or ()):
        return [TensorType(inputs[0].elem_type, None), TensorType(onnx.TensorProto.INT32, None)]
    return _MEDIAN(inputs, attrs)


def _sort(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """The values sorted along ``axis``, and their int32 positions in the input."""
    shape = _known_shape(inputs[0])
    axis = int(attrs.get("axis", -1))
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"Sort: axis {axis} is out of range for an input of rank {len(shape)}")
    return [inputs[0], TensorType(onnx.TensorProto.INT32, shape)]


def _shaped_dropout(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """The input's type; the ratio must lie in [0, 1) and the mask's shape broadcast to the input's."""
    ratio = float(attrs.get("ratio", 0.5))
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"ShapedDropout: ratio value {ratio:g} is not valid. Please use a value in the interval [0,1)")
    shape, mask = _known_shape(inputs[0]), [int(d) for d in attrs.get("shape", [])]
    try:
        fits = np.broadcast_shapes(tuple(mask), tuple(shape)) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"ShapedDropout: incompatible input tensor and dropout shape. The dropout shape {mask} must "
                         f"broadcast to the input's shape {list(shape)}")
    return [inputs[0]]


def reshaped(shape: Sequence[int], input_shape: Sequence[int]) -> tuple[int, ...]:
    """A Reshape's output shape: a 0 copies the input's size at that place, one -1 stands for what the others
    leave; the elements must match the input's."""
    size = int(np.prod(input_shape))
    sizes = [int(input_shape[i]) if d == 0 and i < len(input_shape) else int(d) for i, d in enumerate(shape)]
    if sizes.count(-1) > 1 or any(d < -1 for d in sizes):
        raise ValueError(f"shape input to ReshapeOp can only use -1 to specify one unknown dimension, got {list(shape)}")
    known = int(np.prod([d for d in sizes if d != -1]))
    if -1 in sizes:
        sizes = [size // known if d == -1 and known else d for d in sizes]
    if int(np.prod(sizes)) != size:
        raise ValueError(f"Reshape: shape {list(shape)} does not hold the input's {size} elements "
                         f"(shape {list(input_shape)})")
    return tuple(sizes)


def _reshape(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    return [TensorType(inputs[0].elem_type, reshaped(attrs["shape"], _known_shape(inputs[0])))]


def _graphcore_slice(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """Each of ``axes`` cut to ``[starts, ends)``, as ONNX's Slice-1 (ends clamped to the axis)."""
    shape = list(_known_shape(inputs[0]))
    for start, end, axis in zip(attrs["starts"], attrs["ends"], attrs["axes"]):
        shape[int(axis)] = len(range(*slice(int(start), int(end)).indices(shape[int(axis)])))
    return [TensorType(inputs[0].elem_type, tuple(shape))]


def _depth_to_space(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    n, c, h, w = _known_shape(inputs[0])
    block = int(attrs["blocksize"])
    if c % (block * block):
        raise ValueError(f"DepthToSpace: {c} channels do not divide into blocks of {block} x {block}")
    return [TensorType(inputs[0].elem_type, (n, c // (block * block), h * block, w * block))]


def multiconv_params(ranks: Sequence[int], attrs: Mapping) -> list[dict]:
    """Each convolution of a MultiConv node, of the given spatial ranks: its input positions (three each) and
    its spatial parameters, taken in turn from the node's flat attributes."""
    offsets = dict.fromkeys(("strides", "pads", "dilations", "inDilations", "outPads"), 0)
    convs = []
    for index, rank in enumerate(ranks):
        first = 3 * index
        conv: dict[str, Any] = {"data": first, "weights": first + 1, "bias": first + 2}
        for name, width in (("strides", rank), ("pads", 2 * rank), ("dilations", rank), ("inDilations", rank),
                            ("outPads", 2 * rank)):
            conv[name] = [int(v) for v in attrs[name][offsets[name]: offsets[name] + width]]
            offsets[name] += width
        convs.append(conv)
    return convs


def _multiconv(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """Each convolution's output: ``[N, C_out, *spatial]``, each spatial size
    ``(in + pads - dilation * (kernel - 1) - 1) // stride + 1``."""
    outputs = []
    for conv in multiconv_params([len(_known_shape(inputs[i])) - 2 for i in range(0, len(inputs), 3)], attrs):
        data, weights = _known_shape(inputs[conv["data"]]), _known_shape(inputs[conv["weights"]])
        rank = len(data) - 2
        pads, spatial = conv["pads"], []
        for i in range(rank):
            size = (data[2 + i] - 1) * conv["inDilations"][i] + 1 + pads[i] + pads[rank + i]
            spatial.append((size - conv["dilations"][i] * (weights[2 + i] - 1) - 1) // conv["strides"][i] + 1
                           + conv["outPads"][i] + conv["outPads"][rank + i])
        outputs.append(TensorType(inputs[conv["data"]].elem_type, (data[0], weights[0], *spatial)))
    return outputs


def _normalize_image(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """The image ``[..., 3]`` padded to 4 channels, in the type of the offsets and scales."""
    shape = _known_shape(inputs[0])
    if not shape or shape[-1] != 3:
        raise ValueError(f"NormalizeImage: expected an image of 3 channels last, got shape {list(shape)}")
    return [TensorType(inputs[1].elem_type, (*shape[:-1], 4))]


def _ctc_loss(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """One loss per sample ``[N]`` without reduction, else a scalar; of ``outDataType`` where given."""
    batch = _known_shape(inputs[0])[1]
    named = str(attrs.get("outDataType", "UNDEFINED"))
    elem = inputs[0].elem_type if named == "UNDEFINED" else dtypes.onnx_code(named)
    return [TensorType(elem, (batch,) if attrs.get("reduction", "Mean") == "NoReduction" else ())]


def _abort(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    if inputs and inputs[0] is not None and inputs[0].shape is not None and int(np.prod(inputs[0].shape)) > 1:
        raise ValueError("Conditional abort op can only test a scalar tensor")
    return []


def _flat_shard(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """A reduce-scatter's flat shard: its length depends on the replication factor, unknown to the model."""
    return [TensorType(inputs[0].elem_type, None)]


def _scatter_reduce(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    """The data's shape with ``axis_size`` along ``axis`` (or the initial values' type, when given)."""
    if len(inputs) > 2 and inputs[2] is not None:
        return [inputs[2]]
    shape = list(_known_shape(inputs[0]))
    axis = int(attrs.get("axis", -1))
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"ScatterReduce: axis {axis} is out of range for an input of rank {len(shape)}")
    shape[axis] = int(attrs["axis_size"])
    return [TensorType(inputs[0].elem_type, tuple(shape))]


def _no_outputs(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    return []


def _call(inputs: Sequence[TensorType], attrs: Mapping) -> list[Optional[TensorType]]:
    return [type_of(value) for value in attrs["callee"].output]


_MEDIAN = _from_registry("median", _median_attrs)
GRAPHCORE_RULES.update({
    "Call": _call,
    "L1": _loss, "Nll": _loss, "IdentityLoss": _loss,
    **dict.fromkeys(("Scale", "Gelu", "GeluErf", "Nop", "Detach", "Swish", "PrintTensor", "IncrementMod",
                     "CheckpointOutput", "Square", "Log1p", "Expm1", "Round", "NearbyInt", "Reverse",
                     "ScaledAdd"), _same),
    **dict.fromkeys(("Fmod", "Remainder"), _from_registry("fmod", lambda attrs: {})),
    "CtcLoss": _ctc_loss, "NormalizeImage": _normalize_image,
    "SequenceSlice": _from_registry("sequence_slice", lambda attrs: {"zero_unused": bool(attrs.get("zeroUnused", 0))}),
    "Reshape": _reshape, "Slice": _graphcore_slice, "DepthToSpace": _depth_to_space, "MultiConv": _multiconv,
    # PopART counts the axis over the whole tensor, the group's axis included; the workbench's op within a group.
    "GroupedGather": _from_registry("groupedgather", lambda attrs: {"axis": int(attrs.get("axis", 1)) - 1,
                                                                    "group_size": int(attrs.get("group_size", 1))}),
    "ShapedDropout": _shaped_dropout,
    "Atan2": _from_registry("atan2", lambda attrs: {}),
    "Bucketize": _from_registry("bucketize", lambda attrs: {"right": bool(attrs.get("right", 0))}),
    "ReduceMedian": _reduce_median,
    "Sort": _sort,
    "Subsample": _subsample,
    "LSTM": _lstm,
    "CacheLoad": _same, "CacheStore": _no_outputs, "Abort": _abort,
    "ReplicatedAllReduce": _same, "ReplicatedReduceScatter": _flat_shard,
    "ScatterReduce": _scatter_reduce,
    "ConvFlipWeights": _conv_flip_weights,
    "Init": _init,
    "GroupNormalization": _group_norm,
    "DynamicSlice": _dynamic_slice,
    **dict.fromkeys(("DynamicUpdate", "DynamicAdd", "DynamicZero"), _same),
})

_A = onnx.defs.OpSchema.AttrType
ATTRIBUTES: dict[str, dict[str, onnx.defs.OpSchema.AttrType]] = {
    "L1": {"lambda": _A.FLOAT, "reduction": _A.STRING},
    "Nll": {"reduction": _A.STRING, "ignoreIndex": _A.INT, "inputIsLogProbability": _A.INT},
    "IdentityLoss": {"reduction": _A.STRING},
    "Scale": {"scale": _A.FLOAT},
    "Subsample": {"strides": _A.INTS},
    "LSTM": {"output_full_sequence": _A.INT},
    "PrintTensor": {"print_gradient": _A.INT, "title": _A.STRING, "summariseThreshold": _A.INT, "edgeItems": _A.INT,
                    "maxLineWidth": _A.INT, "digits": _A.INT, "floatFormat": _A.INT, "separator": _A.INT,
                    "openBracket": _A.INT, "closeBracket": _A.INT},
    "GroupNormalization": {"num_groups": _A.INT, "epsilon": _A.FLOAT},
    **dict.fromkeys(("DynamicSlice", "DynamicUpdate", "DynamicAdd", "DynamicZero"),
                    {"axes": _A.INTS, "sizes": _A.INTS, "noOverlap": _A.INT}),
    "IncrementMod": {"increment": _A.FLOAT, "modulus": _A.FLOAT},
    "ReduceMedian": {"axes": _A.INTS, "keepdims": _A.INT},
    "Bucketize": {"right": _A.INT},
    "Sort": {"axis": _A.INT, "descending": _A.INT, "stable": _A.INT},
    "ShapedDropout": {"shape": _A.INTS, "ratio": _A.FLOAT},
    "Reshape": {"shape": _A.INTS}, "Reverse": {"dimensions": _A.INTS},
    "Slice": {"starts": _A.INTS, "ends": _A.INTS, "axes": _A.INTS},
    "DepthToSpace": {"blocksize": _A.INT, "mode": _A.STRING},
    "ScaledAdd": {"scale0": _A.FLOAT, "scale1": _A.FLOAT},
    "GroupedGather": {"axis": _A.INT, "group_size": _A.INT},
    "SequenceSlice": {"zeroUnused": _A.INT}, "NormalizeImage": {"scale": _A.FLOAT},
    "CtcLoss": {"reduction": _A.STRING, "blank": _A.INT, "outDataType": _A.STRING, "zeroInfinity": _A.INT},
    "MultiConv": {**dict.fromkeys(("strides", "pads", "dilations", "inDilations", "outPads", "enableConvDithering"),
                                  _A.INTS),
                  "availableMemoryProportions": _A.FLOATS, "partialsTypes": _A.STRINGS, "planType": _A.STRING,
                  "perConvReservedTiles": _A.INT, "cycleBackOff": _A.FLOAT},
    "Init": {"shape": _A.INTS, "data_type": _A.INT, "tensor_type": _A.INT, "init_type": _A.INT, "batch_axis": _A.INT},
    "Call": {"callee": _A.GRAPH},
    **dict.fromkeys(("CacheLoad", "CacheStore"), {"bufferid": _A.INT}),
    **dict.fromkeys(("ReplicatedAllReduce", "ReplicatedReduceScatter"),
                    {COLLECTIVE_OPERATOR: _A.INT, COLLECTIVE_COMM_GROUP: _A.INTS}),
    "ScatterReduce": {"axis": _A.INT, "axis_size": _A.INT, "reduction": _A.STRING, "group_size": _A.INT,
                      "enable_index_broadcast": _A.INT},
}
_WITHOUT_OUTPUTS = {"CacheStore", "Abort"}
_TYPES = [f"tensor({t})" for t in ("float", "float16", "double", "int8", "int16", "int32", "int64", "uint8",
                                   "uint16", "uint32", "uint64", "bool")]


def _inference(op_type: str) -> Callable:
    rule = GRAPHCORE_RULES[op_type]

    def infer(ctx) -> None:
        inputs: list[Optional[TensorType]] = []
        for index in range(ctx.get_num_inputs()):
            proto = ctx.get_input_type(index) if ctx.has_input(index) else None
            inputs.append(type_of(helper.make_value_info("input", proto)) if proto is not None else None)
        attrs = {}
        for name in ATTRIBUTES.get(op_type, {}):
            attribute = ctx.get_attribute(name)
            if attribute is not None:
                value = helper.get_attribute_value(attribute)
                attrs[name] = value.decode() if isinstance(value, bytes) else value
        # An input of unknown type is None: the rules read only inputs they need to know (the losses
        # check their optional label input). A rule that needs one leaves the outputs open.
        try:
            outputs = rule(inputs, attrs)  # type: ignore[arg-type]
        except (AttributeError, ValueError):
            if all(t is not None and t.elem_type for t in inputs):
                raise
            return
        for index, ttype in enumerate(outputs):
            if ttype is not None and index < ctx.get_num_outputs():
                ctx.set_output_type(index, ttype.value_info("output").type)
    return infer


def _register_schemas() -> None:
    schema_class = onnx.defs.OpSchema
    variadic = schema_class.FormalParameterOption.Variadic
    for op_type in GRAPHCORE_RULES:
        if onnx.defs.has(op_type, GRAPHCORE):
            continue
        schema = schema_class(
            op_type, GRAPHCORE, 1, f"The Graphcore {op_type} op.",
            inputs=[schema_class.FormalParameter("inputs", "T", param_option=variadic, is_homogeneous=False,
                                                 min_arity=0)],
            outputs=[schema_class.FormalParameter("outputs", "T", param_option=variadic, is_homogeneous=False,
                                                  min_arity=0 if op_type in _WITHOUT_OUTPUTS else 1)],
            type_constraints=[("T", _TYPES, "Any tensor type.")],
            attributes=[schema_class.Attribute(name, kind, name, required=False)
                        for name, kind in ATTRIBUTES.get(op_type, {}).items()])
        schema.set_type_and_shape_inference_function(_inference(op_type))
        onnx.defs.register_schema(schema)


_register_schemas()
