"""Shape rules of the ai.graphcore ops, for inferring node outputs as they are added.

Where the workbench has the op, the rule is the op registry's own (one source of truth); the
losses, whose reduction changes the output shape, have theirs here.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

from workbench.ir import TensorSpec
from workbench.ops.registry import op_def

from . import dtypes
from .shapes import GRAPHCORE_RULES, TensorType


def _spec(ttype: TensorType) -> TensorSpec:
    if ttype is None or ttype.shape is None or any(d is None for d in ttype.shape):
        raise ValueError("an input's shape is not known")
    return TensorSpec(tuple(ttype.shape), dtypes.workbench_dtype(ttype.elem_type))


def _ttype(spec: TensorSpec) -> TensorType:
    return TensorType(dtypes.onnx_code(spec.dtype.as_numpy()), tuple(spec.shape))


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
    stats = TensorType(x.elem_type, (x.shape[0] * int(attrs["num_groups"]),))
    return [x, stats, stats]


def _dynamic_slice(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    shape = list(inputs[0].shape)
    for axis, size in zip(attrs["axes"], attrs["sizes"]):
        shape[axis] = size
    return [TensorType(inputs[0].elem_type, tuple(shape))]


def _call(inputs: Sequence[TensorType], attrs: Mapping) -> list[TensorType]:
    from .shapes import type_of

    return [type_of(value) for value in attrs["callee"].output]


GRAPHCORE_RULES.update({
    "Call": _call,
    "L1": _loss, "Nll": _loss, "IdentityLoss": _loss,
    **dict.fromkeys(("Scale", "Gelu", "GeluErf", "Nop", "Detach", "Swish", "PrintTensor", "IncrementMod",
                     "CheckpointOutput", "Square", "Abs"), _same),
    "Subsample": _from_registry("subsample", lambda a: {"strides": tuple(a["strides"])}),
    "Init": _init,
    "GroupNormalization": _group_norm,
    "DynamicSlice": _dynamic_slice,
})
