"""``builder.aiGraphcore`` (opset 1): the Graphcore ops, as nodes of the ai.graphcore domain."""
from __future__ import annotations

import enum
import inspect
from typing import Any, Optional

import numpy as np

from workbench.onnx import dtypes
from workbench.onnx.graphcore import COLLECTIVE_COMM_GROUP, COLLECTIVE_OPERATOR
from workbench.onnx.shapes import GRAPHCORE

from .errors import popart_exception
from .opsets import bind_call, debug_name
from .options import ReductionType

_P = inspect.Parameter


class ScatterReduction(enum.Enum):
    """How ``aiGraphcore.scatterreduce`` combines the entries that land on one position."""
    Sum = 0
    Max = 1
    Min = 2
    Mul = 3
    NoReduction = 4  # PopART's ``None``, a reserved word in Python


class CollectiveOperator(enum.Enum):
    """How a collective combines the replicas' values (the integer a node's ``__collectiveOperator`` holds)."""
    Add = 0
    Mean = 1
    Mul = 2
    Min = 3
    Max = 4
    LogicalAnd = 5
    LogicalOr = 6
    SquareAdd = 7
    Local = 8


class InitType(enum.Enum):
    """What ``aiGraphcore.init`` fills its tensor with: nothing (``NoInit``) or zeros (``Zero``)."""
    NoInit = 0
    Zero = 1


def _reduction(value: Any) -> str:
    if isinstance(value, ReductionType):
        return value.name
    if isinstance(value, str) and value in ReductionType.__members__:
        return value
    raise TypeError(f"reduction must be a popart.ReductionType, got {value!r}")


# method -> (op type, parameters after ``args`` as (name, default or _P.empty), outputs, attribute maker)
_OPS: dict[str, tuple] = {
    "l1loss": ("L1", [("lambda_", _P.empty), ("reduction", ReductionType.Mean)], 1,
               lambda b: {"lambda": float(b["lambda_"]), "reduction": _reduction(b["reduction"])}),
    "nllloss": ("Nll", [("reduction", ReductionType.Mean), ("ignoreIndex", None),
                        ("inputIsLogProbability", False)], 1,
                lambda b: {"reduction": _reduction(b["reduction"]), "ignoreIndex": b["ignoreIndex"],
                           "inputIsLogProbability": int(bool(b["inputIsLogProbability"]))}),
    "identityloss": ("IdentityLoss", [("reduction", ReductionType.Mean)], 1,
                     lambda b: {"reduction": _reduction(b["reduction"])}),
    "scale": ("Scale", [("scale", _P.empty)], 1, lambda b: {"scale": float(b["scale"])}),
    "subsample": ("Subsample", [("strides", _P.empty)], 1, lambda b: {"strides": [int(s) for s in b["strides"]]}),
    "gelu": ("Gelu", [], 1, lambda b: {}),
    "swish": ("Swish", [], 1, lambda b: {}),
    "nop": ("Nop", [], 1, lambda b: {}),
    "detach": ("Detach", [], 1, lambda b: {}),
    "square": ("Square", [], 1, lambda b: {}),
    "checkpointoutput": ("CheckpointOutput", [], 1, lambda b: {}),
    "groupnormalization": ("GroupNormalization", [("num_groups", _P.empty), ("epsilon", 1e-5)], 3,
                           lambda b: {"num_groups": int(b["num_groups"]), "epsilon": float(b["epsilon"])}),
    "dynamicslice": ("DynamicSlice", [("axes", _P.empty), ("sizes", _P.empty), ("noOverlap", 0)], 1,
                     lambda b: {"axes": list(b["axes"]), "sizes": list(b["sizes"]), "noOverlap": int(b["noOverlap"])}),
    **{name: (op_type, [("axes", _P.empty), ("sizes", _P.empty), ("noOverlap", 0)], 1,
              lambda b: {"axes": list(b["axes"]), "sizes": list(b["sizes"]), "noOverlap": int(b["noOverlap"])})
       for name, op_type in (("dynamicupdate", "DynamicUpdate"), ("dynamicadd", "DynamicAdd"),
                             ("dynamiczero", "DynamicZero"))},
    "lstm": ("LSTM", [("outputFullSequence", 1)], 2,
             lambda b: {"output_full_sequence": int(b["outputFullSequence"])}),
    "incrementmod": ("IncrementMod", [("increment", _P.empty), ("modulus", _P.empty)], 1,
                     lambda b: {"increment": float(b["increment"]), "modulus": float(b["modulus"])}),
    "log1p": ("Log1p", [], 1, lambda b: {}),
    "expm1": ("Expm1", [], 1, lambda b: {}),
    "atan2": ("Atan2", [], 1, lambda b: {}),
    "reducemedian": ("ReduceMedian", [("axes", None), ("keepdims", 1)], 2,
                     lambda b: {**({} if b["axes"] is None else {"axes": [int(a) for a in b["axes"]]}),
                                "keepdims": int(b["keepdims"])}),
    "bucketize": ("Bucketize", [("right", 0)], 1, lambda b: {"right": int(b["right"])}),
    "sort": ("Sort", [("axis", -1), ("descending", 0), ("stable", 0)], 2,
             lambda b: {"axis": int(b["axis"]), "descending": int(b["descending"]), "stable": int(b["stable"])}),
    "shapeddropout": ("ShapedDropout", [("shape", _P.empty), ("ratio", 0.5)], 1,
                      lambda b: {"shape": [int(d) for d in b["shape"]], "ratio": float(b["ratio"])}),
    **{name: (op_type, [], 1, lambda b: {}) for name, op_type in (
        ("round", "Round"), ("nearbyint", "NearbyInt"), ("geluerf", "GeluErf"), ("fmod", "Fmod"),
        ("remainder", "Remainder"))},
    "reshape": ("Reshape", [("shape", _P.empty)], 1, lambda b: {"shape": [int(d) for d in b["shape"]]}),
    "reverse": ("Reverse", [("dimensions", _P.empty)], 1, lambda b: {"dimensions": [int(d) for d in b["dimensions"]]}),
    "slice": ("Slice", [("ends", _P.empty), ("starts", _P.empty), ("axes", _P.empty)], 1,
              lambda b: {"ends": [int(v) for v in b["ends"]], "starts": [int(v) for v in b["starts"]],
                         "axes": [int(v) for v in b["axes"]]}),
    "depthtospace": ("DepthToSpace", [("blocksize", _P.empty), ("mode", _P.empty)], 1,
                     lambda b: {"blocksize": int(b["blocksize"]), "mode": str(b["mode"])}),
    "scaledadd": ("ScaledAdd", [("scale0", 1.0), ("scale1", 1.0)], 1,
                  lambda b: {"scale0": float(b["scale0"]), "scale1": float(b["scale1"])}),
    "ctcloss": ("CtcLoss", [("reduction", ReductionType.Mean), ("blank", 0), ("outDataType", "UNDEFINED"),
                            ("zeroInfinity", False)], 1,
                lambda b: {"reduction": _reduction(b["reduction"]), "blank": int(b["blank"]),
                           "outDataType": str(b["outDataType"]), "zeroInfinity": int(bool(b["zeroInfinity"]))}),
    "normalize_image": ("NormalizeImage", [("scale", 1.0)], 1, lambda b: {"scale": float(b["scale"])}),
    "sequenceslice": ("SequenceSlice", [("zeroUnused", 0)], 1, lambda b: {"zeroUnused": int(b["zeroUnused"])}),
    "groupedgather": ("GroupedGather", [("axis", 0), ("group_size", 1)], 1,
                      lambda b: {"axis": int(b["axis"]), "group_size": int(b["group_size"])}),
}
_LIST_OUTPUTS = {"groupnormalization", "checkpointoutput", "lstm", "reducemedian", "sort"}
_ONE_INPUT = {"Reshape"}  # the ai.graphcore ops whose method takes one tensor id as ``args``, not a list


def _signature(params: list, with_args: bool = True) -> inspect.Signature:
    head = [_P("args", _P.POSITIONAL_OR_KEYWORD)] if with_args else []
    body = [_P(n, _P.POSITIONAL_OR_KEYWORD, default=d) for n, d in params]
    return inspect.Signature(head + body + [_P("debugContext", _P.POSITIONAL_OR_KEYWORD, default="")])


def _method(name: str, spec: tuple):
    op_type, params, outputs, make = spec
    signature = _signature(params)

    def op(self: "AiGraphcoreOpset1", *args: Any, **kwargs: Any) -> Any:
        if "lambda" in kwargs:  # PopART's keyword, a reserved word in Python
            kwargs["lambda_"] = kwargs.pop("lambda")
        bound = bind_call(name, signature, lambda: f"(self, {str(signature)[1:-1]})", args, kwargs,
                          one_id=op_type in _ONE_INPUT)
        inputs = [bound["args"]] if op_type in _ONE_INPUT else list(bound["args"])
        ids = self._builder._add_node(op_type, inputs, make(bound), num_outputs=outputs,
                                      debug=debug_name(bound["debugContext"]), domain=GRAPHCORE)
        return ids if name in _LIST_OUTPUTS else ids[0]
    op.__name__ = name
    op.__signature__ = signature
    op.__doc__ = f"Add an ai.graphcore {op_type}-1 node."
    return op


class AiGraphcoreOpset1:
    """The ai.graphcore ops, version 1."""

    version = 1

    def __init__(self, builder: Any):
        self._builder = builder

    def __repr__(self) -> str:
        return type(self).__name__

    def call(self, args: list, num_outputs: int, callee: Any, debugContext: Any = "") -> list[str]:
        """Call the subgraph ``callee`` (a subgraph builder) on ``args``; returns its outputs."""
        if not all(isinstance(a, str) for a in args):
            raise TypeError(f"call(): args must be a list of tensor ids, got {args!r}")
        return self._builder._add_node("Call", list(args), {"callee": callee.graph_proto()},
                                       num_outputs=int(num_outputs), debug=debug_name(debugContext),
                                       domain=GRAPHCORE)

    def init(self, shape: list, data_type: Any, init_type: Any, batch_axis: Any = -1,
             debugContext: Any = "") -> str:
        """A tensor of ``shape`` filled with zeros (``InitType.Zero``) or left undefined (``NoInit``). As
        PopART's two overloads, the fourth argument is ``batch_axis`` (an int) or the ``debugContext``."""
        if not isinstance(batch_axis, (int, np.integer)) or isinstance(batch_axis, bool):
            batch_axis, debugContext = -1, batch_axis
        kind = getattr(init_type, "value", init_type)
        element_type = getattr(data_type, "name", data_type)  # a popart.DataType, a type string or a NumPy dtype
        return self._builder._add_node("Init", [], {"shape": [int(d) for d in shape],
                                                     "data_type": dtypes.onnx_code(element_type),
                                                     "tensor_type": 0, "init_type": int(kind),
                                                     "batch_axis": int(batch_axis)},
                                       debug=debug_name(debugContext), domain=GRAPHCORE)[0]


    def printtensor(self, args: list, print_gradient: int = 1, debugContext: Any = "", title: str = "",
                    summariseThreshold: int = 1000, edgeItems: int = 3, maxLineWidth: int = 75, digits: int = 8,
                    floatFormat: int = 0, separator: str = " ", openBracket: str = "[",
                    closeBracket: str = "]") -> str:
        """Pass ``args[0]`` on, printing it each time it runs, as Poplar's PrintTensor formats it
        (a threshold or line width of 0 means none; ``floatFormat`` 0-3: auto, fixed, scientific, none)."""
        return self._builder._add_node("PrintTensor", list(args), {
            "print_gradient": int(print_gradient), "title": title or None,
            "summariseThreshold": int(summariseThreshold), "edgeItems": int(edgeItems),
            "maxLineWidth": int(maxLineWidth), "digits": int(digits), "floatFormat": int(floatFormat),
            "separator": ord(separator), "openBracket": ord(openBracket), "closeBracket": ord(closeBracket)},
            debug=debug_name(debugContext), domain=GRAPHCORE)[0]

    def multiconv(self, args: list, dilations: Any = (), inDilations: Any = (), pads: Any = (), outPads: Any = (),
                  strides: Any = (), availableMemoryProportions: Any = (), partialsTypes: Any = (),
                  planType: Optional[str] = None, perConvReservedTiles: Optional[int] = None,
                  cycleBackOff: Optional[float] = None, enableConvDithering: Any = (),
                  debugContext: Any = "") -> list[str]:
        """Several independent convolutions in one op, each ``[data, weights]`` or ``[data, weights, bias]``
        of ``args``; each spatial parameter is a list with one entry per convolution (empty: the defaults)."""
        convs = [list(conv) for conv in args]
        inputs, attrs = _multiconv_inputs(self._builder, convs, {
            "dilations": dilations, "inDilations": inDilations, "pads": pads, "outPads": outPads,
            "strides": strides})
        options = {"availableMemoryProportions": [float(v) for v in availableMemoryProportions] or None,
                   "partialsTypes": [str(v) for v in partialsTypes] or None,
                   "enableConvDithering": [int(v) for v in enableConvDithering] or None,
                   "planType": planType, "perConvReservedTiles": perConvReservedTiles,
                   "cycleBackOff": None if cycleBackOff is None else float(cycleBackOff)}
        return self._builder._add_node("MultiConv", inputs, {**attrs, **options}, num_outputs=len(convs),
                                       debug=debug_name(debugContext), domain=GRAPHCORE)

    def abort(self, args: Optional[list] = None, debugContext: Any = "") -> None:
        """Stop the program: always, or when the one-element tensor in ``args`` is non-zero."""
        self._builder._add_node("Abort", list(args or []), {}, num_outputs=0, debug=debug_name(debugContext),
                                domain=GRAPHCORE)

    def replicatedallreduce(self, args: list, collectiveOperator: Any = None, commGroup: Any = None,
                            debugContext: Any = "") -> str:
        """Reduce ``args[0]`` over the replicas (of ``commGroup``); every replica gets the result."""
        return self._collective("ReplicatedAllReduce", args, collectiveOperator, commGroup, debugContext)

    def replicatedreducescatter(self, args: list, collectiveOperator: Any = None, commGroup: Any = None,
                                debugContext: Any = "") -> str:
        """Reduce ``args[0]`` over the replicas (of ``commGroup``); each keeps its flat shard of the result."""
        return self._collective("ReplicatedReduceScatter", args, collectiveOperator, commGroup, debugContext)

    def _collective(self, op_type: str, args: list, operator: Any, group: Any, debugContext: Any) -> str:
        attributes: dict[str, Any] = {}
        if operator is not None:
            attributes[COLLECTIVE_OPERATOR] = _collective_operator(operator)
        if group is not None:
            attributes[COLLECTIVE_COMM_GROUP] = [int(getattr(group.type, "value", group.type)),
                                                 int(group.replicaGroupSize)]
        return self._builder._add_node(op_type, list(args), attributes, debug=debug_name(debugContext),
                                       domain=GRAPHCORE)[0]

    def scatterreduce(self, args: list, axis_size: int, axis: int = -1,
                      reduction: ScatterReduction = ScatterReduction.Sum, enable_index_broadcast: int = 1,
                      debugContext: Any = "") -> str:
        """Scatter ``args[0]`` along ``axis`` to the positions ``args[1]`` of a result ``axis_size`` long
        there, combining collisions by ``reduction`` (``args[2]``, if given, is the starting value)."""
        return self._builder._add_node("ScatterReduce", list(args), {
            "axis": int(axis), "axis_size": int(axis_size), "reduction": _scatter_reduction(reduction),
            "group_size": 1, "enable_index_broadcast": int(enable_index_broadcast)},
            debug=debug_name(debugContext), domain=GRAPHCORE)[0]


# MultiConv's per-convolution parameters: (name, how many values per spatial dimension, the default value).
_MULTICONV_SPATIAL = (("strides", 1, 1), ("pads", 2, 0), ("dilations", 1, 1), ("inDilations", 1, 1), ("outPads", 2, 0))


def _multiconv_inputs(builder: Any, convs: list, given: dict) -> tuple[list[str], dict]:
    """MultiConv's flat inputs (data, weights and bias of each convolution; "" for no bias) and its attributes,
    every spatial parameter written out for every convolution (the defaults where none were given), as
    PopART's builder checks them."""
    inputs: list[str] = []
    for index, conv in enumerate(convs):
        if len(conv) < 2:
            raise popart_exception(f"MultiConvOp: convolution {index} must have at least two inputs - data and weights")
        if len(conv) > 3:
            raise popart_exception(f"MultiConvOp: convolution {index} can have at most three inputs - data, weights, "
                                   "and bias")
        inputs += [*conv, ""][:3]
    attrs: dict[str, list] = {}
    for name, per_dimension, default in _MULTICONV_SPATIAL:
        sets = [list(values) for values in given[name]]
        if sets and len(sets) != len(convs):
            raise popart_exception(f"MultiConvOp: number of {name} parameter sets ({len(sets)}) does not match the "
                                   f"number of input sets ({len(convs)})")
        values = []
        for index, conv in enumerate(convs):
            rank = len(builder.getTensorShape(conv[0])) - 2
            chosen = sets[index] if sets and sets[index] else [default] * (per_dimension * rank)
            if len(chosen) != per_dimension * rank:
                raise popart_exception(f"Length of {name} vector {len(chosen)} != number of spatial dimensions "
                                       f"{rank}" if per_dimension == 1 else
                                       f"Length of {name} vector {len(chosen)} != twice the number of spatial "
                                       f"dimensions {rank}")
            values += [int(v) for v in chosen]
        attrs[name] = values
    return inputs, attrs


def _collective_operator(value: Any) -> int:
    """The operator's integer; popxl's CollectiveOperator (and PopART's) are known by name."""
    name = getattr(value, "name", value)
    if name in CollectiveOperator.__members__:
        return CollectiveOperator[name].value
    raise TypeError(f"collectiveOperator must be a popart.CollectiveOperator, got {value!r}")


def _scatter_reduction(value: Any) -> str:
    member = value if isinstance(value, ScatterReduction) else None
    if member is None and isinstance(value, str):
        member = next((m for m in ScatterReduction if m.name.lower() == value.lower()), None)
    if member is None:
        raise TypeError(f"reduction must be a popart.ScatterReduction, got {value!r}")
    return "none" if member is ScatterReduction.NoReduction else member.name.lower()


for _name, _spec in _OPS.items():
    setattr(AiGraphcoreOpset1, _name, _method(_name, _spec))
