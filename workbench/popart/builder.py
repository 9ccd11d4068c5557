"""``popart.Builder``: builds a real ONNX model, one node at a time, as PopART's Builder does.

>>> builder = popart.Builder()
>>> a = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
>>> b = builder.addInitializedInputTensor(np.ones(2, np.float32))
>>> o = builder.aiOnnx.add([a, b])          # "Add:0", its shape inferred at once
>>> builder.addOutputTensor(o)
>>> proto = builder.getModelProto()          # bytes that onnx.load_from_string accepts
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterable, Iterator, Optional, Union

import numpy as np

from workbench.onnx import dtypes, external_data
from workbench.onnx.builder_checks import BuilderCheckError
from workbench.onnx.model import GraphBuilder, UnknownTensorError, load_model
from workbench.onnx.shapes import GRAPHCORE, ShapeInferenceError, TensorType

from . import step_log
from .annotations import Annotations
from .errors import popart_exception
from .graphcore import AiGraphcoreOpset1
from .node_attributes import DEBUG_INFO_ID
from .opsets import ONNX_OPSETS, debug_name, opset_class
from .tensorinfo import TensorInfo
from .variables import VariableSettings

defaultAiOnnxOpset = 10
defaultAiGraphcoreOpset = 1
defaultAiOnnxMlOpset = 1


class Builder(Annotations):
    """Builds an ONNX model: inputs, initialized inputs (weights), nodes of ``aiOnnx`` and
    ``aiGraphcore``, outputs. ``Builder(bytes | path)`` continues an existing model."""

    def __init__(self, modelProtoOrFilename: Union[bytes, str, None] = None,
                 opsets: Optional[dict[str, int]] = None, *, _parent: Optional["Builder"] = None):
        if _parent is not None:
            self._root = _parent._root
            self._graph = GraphBuilder(_parent._graph.opsets, parent=_parent._graph)
            self._chosen = _parent._chosen
        elif modelProtoOrFilename is not None:
            self._root = self
            try:
                model = load_model(modelProtoOrFilename)
            except (ValueError, FileNotFoundError) as error:
                raise popart_exception(str(error)) from None
            self._graph = GraphBuilder.from_model(model)
            version = self._graph.opsets.get("")
            self._chosen = version if version in ONNX_OPSETS else None
        else:
            self._root = self
            self._graph = GraphBuilder({})
            self._chosen = None
        if opsets:
            unknown = set(opsets) - {"ai.onnx", "ai.graphcore", "ai.onnx.ml"}
            if unknown:
                raise popart_exception(f"unknown opset domain(s) {sorted(unknown)}; expected 'ai.onnx', "
                                       "'ai.graphcore' and 'ai.onnx.ml'")
            if opsets.get("ai.onnx.ml", defaultAiOnnxMlOpset) != defaultAiOnnxMlOpset:
                raise popart_exception(f"Unsupported or unrecognized ai.onnx.ml version: {opsets['ai.onnx.ml']}")
            self._choose(int(opsets["ai.onnx"]))
            if opsets.get("ai.graphcore", 1) != 1:
                raise ValueError(f"Unsupported or unrecognized ai.graphcore version: {opsets['ai.graphcore']}")
        self._scopes: list[str] = []
        self._context: dict[str, list] = {}
        self.aiGraphcore = self.aiGraphcoreOpset1 = AiGraphcoreOpset1(self)

    # ----- opsets -----
    def _choose(self, version: int) -> None:
        opset_class(version)  # checks the version
        self._root._chosen = self._chosen = version
        self._graph.opsets[""] = version

    def __getattr__(self, name: str) -> Any:
        if name == "aiOnnx" or name.startswith("aiOnnxOpset"):
            version = defaultAiOnnxOpset if name == "aiOnnx" else _opset_number(name)
            chosen = self._root._chosen
            if chosen is None:
                self._choose(version)
            elif name != "aiOnnx" and version != chosen:
                raise RuntimeError(f"Invalid opset '{name}' selected. Opset for domain ai.onnx already "
                                   f"defined as {chosen}")
            return opset_class(self._root._chosen)(self)
        raise AttributeError(f"'Builder' object has no attribute '{name}'")

    def aiOnnxOpsetVersion(self, version: int) -> None:
        if self._root._chosen is not None and self._root._chosen != version:
            raise RuntimeError(f"Invalid opset 'aiOnnxOpset{version}' selected. Opset for domain ai.onnx "
                               f"already defined as {self._root._chosen}")
        self._choose(version)

    # ----- nodes -----
    def _prefix(self) -> str:
        return "".join(f"{s}/" for s in self._scopes)

    def _add_node(self, op_type: str, inputs: list[str], attributes: dict, *, num_outputs: int = 1,
                  debug: str = "", domain: str = "") -> list[str]:
        if domain == "" and self._root._chosen is None:
            self._choose(defaultAiOnnxOpset)
        if domain == GRAPHCORE:
            self._graph.opsets.setdefault(GRAPHCORE, defaultAiGraphcoreOpset)
        name = self._prefix() + (debug or op_type)
        record = step_log.node_added(domain or "ai.onnx", op_type, self._graph.opsets.get(domain, 1), inputs,
                                     num_outputs, name)
        full = {**attributes, **{k: v[-1] for k, v in self._context.items() if v}, DEBUG_INFO_ID: record.getId()}
        try:
            outputs = self._graph.add_node(op_type, inputs, full, domain=domain, num_outputs=num_outputs,
                                           name=name, prefix=self._prefix())
            record.setValue("outputs", outputs)
            return outputs
        except (UnknownTensorError, BuilderCheckError) as error:
            raise popart_exception(str(error)) from None
        except ShapeInferenceError as error:
            raise popart_exception(f"{op_type} '{name}': ONNX shape inference failed: {error}") from None

    def customOp(self, opName: str, opVersion: int, domain: str, inputs: list[str], attributes: dict,
                 numOutputs: int = 1, name: str = "") -> list[str]:
        self._graph.opsets.setdefault(domain, opVersion)
        return self._add_node(opName, list(inputs), dict(attributes), num_outputs=numOutputs, debug=name,
                              domain=domain)

    def reshape_const(self, aiOnnx: Any, args: list[str], shape: Iterable[int], debugContext: str = "") -> list:
        shape_id = aiOnnx.constant(np.array(list(shape), np.int64), debug_name(debugContext) + "_const")
        return aiOnnx.reshape([args[0], shape_id], debugContext)

    # ----- tensors -----
    def addInputTensor(self, tensorInfo: Any, shape: Optional[Iterable[int]] = None, *args: Any,
                       debugContext: Any = "", debugPrefix: Any = None) -> str:
        """A graph input: ``addInputTensor(TensorInfo)`` or ``addInputTensor(dtype, shape)``."""
        if isinstance(tensorInfo, TensorInfo):
            info, rest = tensorInfo, ((shape,) if shape is not None else ()) + args
        elif shape is not None:
            info, rest = TensorInfo(tensorInfo, shape), args
        else:
            raise TypeError("addInputTensor(): incompatible function arguments. Expected (tensorInfo: "
                            "TensorInfo, debugContext: str = '') or (dataType: str, shape: List[int], "
                            f"debugContext: str = ''); invoked with {tensorInfo!r}")
        name = debug_name(debugPrefix if debugPrefix is not None else debugContext)
        for extra in rest:  # InputSettings, then the debug name, as PopART's overloads allow
            if isinstance(extra, str):
                name = extra
        ttype = TensorType(dtypes.onnx_code(info.dataType()), tuple(info.shape()))
        return self._graph.add_input(ttype, self._prefix() + name if name else self._prefix() + "input")

    def addUntypedInputTensor(self, debugContext: Any = "") -> str:
        if self._graph.parent is None:
            raise popart_exception("Can not add untyped tensors to the top-level graph. Use "
                                   "Builder::addInputTensor(const TensorInfo &tensorInfo, const "
                                   "popart::DebugContext &debugContext) instead.")
        name = debug_name(debugContext)
        return self._graph.add_input(TensorType(0, None), self._prefix() + (name or "input"))

    def addInputTensorFromParentGraph(self, tensorId: str) -> None:
        """Use an enclosing graph's tensor in this subgraph (ONNX subgraphs read them by name)."""
        if self._graph.parent is None:
            raise popart_exception("addInputTensorFromParentGraph needs a subgraph builder "
                                   "(createSubgraphBuilder)")
        self._type(tensorId)

    def addInitializedInputTensor(self, initVal: np.ndarray, *args: Any, debugContext: Any = "",
                                  debugPrefix: Any = None) -> str:
        """A weight: a graph input with an initial value (an initializer)."""
        if not isinstance(initVal, np.ndarray):
            raise TypeError(f"addInitializedInputTensor(): incompatible function arguments; initVal must be a "
                            f"numpy.ndarray, got {type(initVal).__name__}")
        name = debug_name(debugPrefix if debugPrefix is not None else debugContext)
        settings = None
        for extra in args:  # VariableSettings, then the debug name
            if isinstance(extra, VariableSettings):
                settings = extra
            elif isinstance(extra, str):
                name = extra
        try:
            dtypes.type_string(initVal.dtype)
        except ValueError as error:
            raise popart_exception(str(error)) from None
        groups = 1
        replicas = self._root._graph.replication_factor
        if settings is not None and replicas > 1:  # else the session's replication factor resolves the groups
            try:
                groups = settings.getGroupCount(replicas)
            except ValueError as error:
                raise popart_exception(f"{error} (embed the replication factor with "
                                       "builder.embedReplicationFactor first)") from None
            if groups > 1 and (initVal.ndim == 0 or initVal.shape[0] != groups):
                raise popart_exception(f"A weight shared by {groups} replica groups needs a leading dimension of "
                                       f"{groups} (one value per group); got shape {list(initVal.shape)}")
        return self._graph.add_initializer(initVal, self._prefix() + (name or "init_input"),
                                           settings.encode() if settings is not None else "", groups)

    def addOutputTensor(self, outputName: str) -> None:
        try:
            self._graph.add_output(outputName)
        except UnknownTensorError as error:
            raise popart_exception(str(error)) from None

    def _type(self, tensor_id: str) -> TensorType:
        try:
            ttype = self._graph.type(tensor_id)
        except UnknownTensorError as error:
            raise popart_exception(str(error)) from None
        return ttype

    def getTensorShape(self, id: str) -> list[int]:  # noqa: A002 - PopART's keyword
        ttype = self._type(id)
        if ttype.shape is None or any(d is None for d in ttype.shape):
            raise popart_exception(f"The shape of tensor '{id}' is not known")
        return list(ttype.shape)

    def getTensorDtypeString(self, id: str) -> str:  # noqa: A002
        ttype = self._type(id)
        if not ttype.elem_type:
            raise popart_exception(f"The type of tensor '{id}' is not known")
        return dtypes.lowercase(ttype.elem_type)

    def isInitializer(self, id: str) -> bool:  # noqa: A002
        self._type(id)
        return id in self._graph.initializers

    def getInputTensorIds(self) -> list[str]:
        return list(self._graph.inputs) + list(self._graph.initializers)

    def getOutputTensorIds(self) -> list[str]:
        return list(self._graph.outputs)

    def getValueTensorIds(self) -> list[str]:
        """Every tensor a node makes, graph outputs included (PopART lists the model's value infos)."""
        return [t for n in self._graph.nodes for t in n.output if t]

    def getTrainableTensorIds(self) -> list[str]:
        return [t for t, a in self._graph.initializers.items() if a.dtype.kind == "f"]

    # ----- the model -----
    def getModelProto(self, humanReadable: bool = False) -> bytes:
        """The model as serialized ONNX (``onnx.load_from_string`` reads it back)."""
        model = self._root._graph.model_proto()
        if humanReadable:
            return str(model).encode()
        return model.SerializeToString()

    def saveModelProto(self, filename: str) -> None:
        with open(filename, "wb") as handle:
            handle.write(self.getModelProto())

    def saveInitializersExternally(self, ids: Iterable[str], filename: str) -> None:
        """Store the values of the initializers ``ids`` in ``filename`` (one after another, little-endian)
        and make the model refer to them there (ONNX's external data)."""
        graph = self._graph
        try:
            graph.external.update(external_data.move_to_file(list(ids), os.fspath(filename), graph.initializers,
                                                             graph.external, graph.initializers.__getitem__))
        except external_data.ExternalDataError as error:
            raise popart_exception(str(error)) from None

    def setGraphName(self, name: str) -> None:
        self._graph.name = name

    def createSubgraphBuilder(self) -> "Builder":
        """A builder for a subgraph (the body of a call, an If branch or a Loop)."""
        return Builder(_parent=self)

    def graph_proto(self):
        """This builder's graph, for a node attribute (a callee, a branch, a loop body)."""
        return self._graph.graph_proto()

    def embedReplicationFactor(self, replicationFactor: int) -> None:
        """The replication factor the model is built for (weights' VariableSettings need it)."""
        self._root._graph.replication_factor = int(replicationFactor)

    # ----- scopes and annotations -----
    @contextlib.contextmanager
    def nameScope(self, name: str) -> Iterator[None]:
        self._scopes.append(name)
        try:
            yield
        finally:
            self._scopes.pop()

    def getNameScope(self, name: str = "") -> str:
        return self._prefix() + name


# What ``__getattr__`` gives, as PopART annotates it: one of the ai.onnx opset classes.
Builder.__getattr__.__annotations__["return"] = Union[tuple(opset_class(v) for v in ONNX_OPSETS)]


def _opset_number(name: str) -> int:
    try:
        return int(name[len("aiOnnxOpset"):])
    except ValueError:
        raise AttributeError(f"'Builder' object has no attribute '{name}'") from None


__all__ = ["Builder", "defaultAiOnnxOpset", "defaultAiGraphcoreOpset", "defaultAiOnnxMlOpset"]
