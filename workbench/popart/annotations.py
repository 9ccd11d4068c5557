"""The Builder's annotations: IPU placement, pipeline stages, execution phases, recomputation,
memory and partials hints, outlining and scheduling, written into nodes as PopART writes them
(``__ipu_number``, ``__pipeline_stage``...); and the API reading and writing any node attribute."""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Union

from onnx import AttributeProto

from workbench.onnx.graphcore import COLLECTIVE_COMM_GROUP
from workbench.onnx.model import UnknownTensorError

from . import node_attributes as attrs
from .errors import popart_exception
from .options import RecomputeType

if TYPE_CHECKING:
    from workbench.onnx.model import GraphBuilder

    from .graphcore import AiGraphcoreOpset1


def _scope_value(method: str, arg: Union[str, int, Iterable[str]]) -> int:
    """The int a ``with builder.<method>(value):`` scope sets."""
    if not isinstance(arg, (str, int)):
        raise popart_exception(f"{method}(value) opens a scope and takes an int, got {arg!r}; to annotate "
                               f"nodes, give their output names and the value: {method}(nodeOutputNames, value)")
    return int(arg)


def _output_names(method: str, arg: Union[str, int, Iterable[str]]) -> Union[str, Iterable[str]]:
    """The tensor ids that ``builder.<method>(nodeOutputNames, value)`` annotates the nodes of."""
    if isinstance(arg, int):
        raise popart_exception(f"{method}(nodeOutputNames, value) takes a tensor id or a set of them first, "
                               f"got the int {arg}")
    return arg


class Annotations:
    """Mixed into ``Builder``: it provides ``_graph`` (the GraphBuilder) and ``_context`` (the
    attributes that ``with`` blocks put on the nodes made inside)."""

    _graph: GraphBuilder
    _context: dict[str, list]
    aiGraphcore: AiGraphcoreOpset1

    @contextlib.contextmanager
    def _attribute(self, key: str, value: Any) -> Iterator[None]:
        self._context.setdefault(key, []).append(value)
        try:
            yield
        finally:
            self._context[key].pop()

    def _node(self, tensor_id: Union[str, Iterable[str]]):
        """The node making ``tensor_id``, or the one node making every tensor of a set or list."""
        if not isinstance(tensor_id, str):
            nodes = {id(node): node for node in (self._node(t) for t in tensor_id)}
            if len(nodes) != 1:
                raise popart_exception(f"The tensors {sorted(tensor_id)} are not the outputs of one node")
            return next(iter(nodes.values()))
        try:
            return self._graph.node_of(tensor_id)
        except UnknownTensorError as error:
            raise popart_exception(str(error)) from None

    def _annotate(self, key: str, ids: Union[str, Iterable[str]], value: Any) -> None:
        for tensor_id in ([ids] if isinstance(ids, str) else ids):
            attrs.set_attribute(self._node(tensor_id), key, value)

    def virtualGraph(self, arg: Union[str, int, Iterable[str]], value: Optional[int] = None):
        """Place a node on an IPU: ``virtualGraph(tensor_id, ipu)``; or ``with virtualGraph(ipu):``."""
        if value is None:
            return self._attribute(attrs.IPU, _scope_value("virtualGraph", arg))
        self._annotate(attrs.IPU, _output_names("virtualGraph", arg), int(value))
        return None

    def hasVirtualGraph(self, nodeOutputName: Union[str, Iterable[str], None] = None) -> bool:
        """Whether the node (or, without one, the current ``with virtualGraph`` scope) has an IPU."""
        if nodeOutputName is None:
            return bool(self._context.get(attrs.IPU))
        return attrs.has(self._node(nodeOutputName), attrs.IPU)

    def getVirtualGraph(self, nodeOutputName: Union[str, Iterable[str], None] = None) -> int:
        """The IPU of a node (named by an output, or a set or list of its outputs), or of the current scope."""
        if nodeOutputName is None:
            stack = self._context.get(attrs.IPU)
            if not stack:
                raise popart_exception("Invalid call to getVirtualGraph, Virtual graph not set in current scope")
            return stack[-1]
        return attrs.get(self._node(nodeOutputName), attrs.IPU)

    def pipelineStage(self, arg: Union[str, int], value: Optional[int] = None):
        if value is None:
            return self._attribute(attrs.PIPELINE_STAGE, _scope_value("pipelineStage", arg))
        self._annotate(attrs.PIPELINE_STAGE, _output_names("pipelineStage", arg), int(value))
        return None

    def hasPipelineStage(self, nodeOutputName: Optional[str] = None) -> bool:
        if nodeOutputName is None:
            return bool(self._context.get(attrs.PIPELINE_STAGE))
        return attrs.has(self._node(nodeOutputName), attrs.PIPELINE_STAGE)

    def getPipelineStage(self, nodeOutputName: Optional[str] = None) -> int:
        if nodeOutputName is None:
            stack = self._context.get(attrs.PIPELINE_STAGE)
            if not stack:
                raise popart_exception("Pipeline stage not set in current scope.")
            return stack[-1]
        return attrs.get(self._node(nodeOutputName), attrs.PIPELINE_STAGE)

    def executionPhase(self, arg: Union[str, int], value: Optional[int] = None):
        if value is None:
            return self._attribute(attrs.EXECUTION_PHASE, _scope_value("executionPhase", arg))
        self._annotate(attrs.EXECUTION_PHASE, _output_names("executionPhase", arg), int(value))
        return None

    def getExecutionPhase(self, nodeOutputName: Optional[str] = None) -> int:
        if nodeOutputName is None:
            stack = self._context.get(attrs.EXECUTION_PHASE)
            if not stack:
                raise popart_exception("Execution phase not set in current scope.")
            return stack[-1]
        return attrs.get(self._node(nodeOutputName), attrs.EXECUTION_PHASE)

    def schedulePriority(self, value: float):
        return self._attribute(attrs.SCHEDULE_PRIORITY, float(value))

    def outlineAttributes(self, attributes: dict):
        flat = [str(x) for k, v in attributes.items() for x in (k, v)]
        return self._attribute(attrs.OUTLINE, flat)

    def recomputeOutput(self, value: Any):
        return self._attribute(attrs.RECOMPUTE, int(getattr(value, "value", value)))

    def recomputeOutputInBackwardPass(self, nodeOutputNames: Union[str, Iterable[str]],
                                      value: Any = RecomputeType.Recompute) -> None:
        self._annotate(attrs.RECOMPUTE, nodeOutputNames, int(getattr(value, "value", value)))

    def checkpointOutput(self, nodeOutputNames: Iterable[str]) -> list[str]:
        return [self.aiGraphcore.checkpointoutput([t])[0] for t in nodeOutputNames]

    def setAvailableMemoryProportion(self, nodeOutputNames: Union[str, Iterable[str]], value: float) -> None:
        if not 0.0 <= value <= 1.0:
            raise popart_exception(f"availableMemoryProportion must be in (0,1], got {value}")
        self._annotate(attrs.AVAILABLE_MEMORY, nodeOutputNames, float(value))

    def setPartialsType(self, nodeOutputName: str, partialsType: str) -> None:
        if partialsType.upper() not in ("FLOAT", "HALF", "FLOAT16"):
            raise popart_exception(f"Invalid partials type '{partialsType}'; expected 'FLOAT' or 'HALF'")
        self._annotate(attrs.PARTIALS_TYPE, nodeOutputName, partialsType.upper())

    def getPartialsType(self, nodeOutputName: str) -> str:
        node = self._node(nodeOutputName)
        return attrs.get(node, attrs.PARTIALS_TYPE) if attrs.has(node, attrs.PARTIALS_TYPE) else "FLOAT"

    def setSerializeMatMul(self, nodeOutputNames: Iterable[str], mode: str, factor: int = 0,
                           keep_precision: bool = False) -> None:
        for tensor_id in nodeOutputNames:
            node = self._node(tensor_id)
            attrs.set_attribute(node, "__serialize_matmul_mode", mode)
            attrs.set_attribute(node, "__serialize_matmul_factor", int(factor))
            attrs.set_attribute(node, "__serialize_matmul_precision", int(keep_precision))

    def setEnableConvDithering(self, nodeOutputName: str, value: int) -> None:
        """Mark a Conv node for dithering (0 or 1); any other node, or value, is refused."""
        if value not in (0, 1):
            raise popart_exception("enableConvDithering must be a bool value")
        op_type = self._node(nodeOutputName).op_type
        if op_type != "Conv":
            raise popart_exception("Builder::setEnableConvDithering should only be called on convolutions but "
                                   f"was given: {op_type}")
        self._annotate(attrs.ENABLE_CONV_DITHERING, nodeOutputName, int(value))

    def excludePatterns(self, nodeOutputName: str, patternNames: Iterable[str]) -> None:
        self._annotate(attrs.EXCLUDE_PATTERNS, nodeOutputName, [str(p) for p in patternNames])

    def setInplacePreferences(self, nodeOutputName: str, prefs: dict) -> None:
        node = self._node(nodeOutputName)
        attrs.set_attribute(node, "__inplace_op_names", list(prefs))
        attrs.set_attribute(node, "__inplace_op_priorities", [float(v) for v in prefs.values()])

    # ----- node attributes -----
    def _nodes_of(self, nodeOutputNames: Iterable[str]):
        names = set(nodeOutputNames)
        for node in self._graph.nodes:
            if names == set(node.output):
                return node
        raise popart_exception(f"Could not find a node with outputs {sorted(names)}")

    def addNodeAttribute(self, attributeName: str, attributeValue: Any, nodeOutputNames: Iterable[str]) -> None:
        node = self._nodes_of(nodeOutputNames)
        if attrs.has(node, attributeName):
            raise popart_exception(f"Node already has attribute {attributeName}.")
        attrs.set_attribute(node, attributeName, attributeValue)

    def nodeHasAttribute(self, attributeName: str, nodeOutputNames: Iterable[str]) -> bool:
        return attrs.has(self._nodes_of(nodeOutputNames), attributeName)

    def getAllNodeAttributeNames(self, nodeOutputNames: Iterable[str]) -> list[str]:
        return [a.name for a in self._nodes_of(nodeOutputNames).attribute]

    def _typed_attribute(self, attributeName: str, nodeOutputNames: Iterable[str], kind: int, what: str) -> Any:
        """The attribute's value when it is of ONNX attribute type ``kind``, else PopART's error."""
        node = self._nodes_of(nodeOutputNames)
        found = next((a for a in node.attribute if a.name == attributeName), None)
        if found is None:
            raise popart_exception(f"Node does not have an attribute {attributeName}.")
        if found.type != kind:
            raise popart_exception(f"Attribute {attributeName} is not {what}.")
        return attrs.get(node, attributeName)

    def getInt64NodeAttribute(self, attributeName: str, nodeOutputNames: Iterable[str]) -> int:
        return self._typed_attribute(attributeName, nodeOutputNames, AttributeProto.INT, "an integer")

    def getInt64VectorNodeAttribute(self, attributeName: str, nodeOutputNames: Iterable[str]) -> list[int]:
        return self._typed_attribute(attributeName, nodeOutputNames, AttributeProto.INTS, "an integer vector")

    def getFloatNodeAttribute(self, attributeName: str, nodeOutputNames: Iterable[str]) -> float:
        return self._typed_attribute(attributeName, nodeOutputNames, AttributeProto.FLOAT, "a float")

    def getFloatVectorNodeAttribute(self, attributeName: str, nodeOutputNames: Iterable[str]) -> list[float]:
        return self._typed_attribute(attributeName, nodeOutputNames, AttributeProto.FLOATS, "a float vector")

    def getStringNodeAttribute(self, attributeName: str, nodeOutputNames: Iterable[str]) -> str:
        return self._typed_attribute(attributeName, nodeOutputNames, AttributeProto.STRING, "a string")

    def getStringVectorNodeAttribute(self, attributeName: str, nodeOutputNames: Iterable[str]) -> list[str]:
        return self._typed_attribute(attributeName, nodeOutputNames, AttributeProto.STRINGS, "a string vector")

    def getBoolNodeAttribute(self, attributeName: str, nodeOutputNames: Iterable[str]) -> bool:
        return bool(self._typed_attribute(attributeName, nodeOutputNames, AttributeProto.INT, "a int"))

    def removeNodeAttribute(self, attributeName: str, nodeOutputNames: Iterable[str]) -> None:
        node = self._nodes_of(nodeOutputNames)
        if not attrs.has(node, attributeName):
            raise popart_exception(f"Cannot remove attribute {attributeName} as it does not exist.")
        attrs.remove(node, attributeName)

    def outputTensorLocation(self, nodeOutputNames: Union[str, Iterable[str]], value: Any) -> None:
        """Where the outputs are stored (a TensorLocation); written as ``__output_tensor_location``."""
        storage = getattr(getattr(value, "storage", value), "value", 0)
        self._annotate("__output_tensor_location", nodeOutputNames, [int(storage)])

    def commGroup(self, type: Any, groupSize: int = 0):  # noqa: A002 - PopART's keyword
        """``with builder.commGroup(CommGroupType.Consecutive, 2):`` marks collectives made inside."""
        return self._attribute(COLLECTIVE_COMM_GROUP, [int(getattr(type, "value", type)), int(groupSize)])

