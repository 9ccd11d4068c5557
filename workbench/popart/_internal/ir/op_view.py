"""``_ir.Op``: a view of one workbench op, with the methods of PopART's op binding.

The class of a view is PopART's C++ class of the op (``op.AddLhsInplaceOp``), named by the op's registry
entry (``OpDef.popart_class``), so ``isinstance`` and ``opType()`` answer as PopART's do.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from workbench.ir import Op as WorkbenchOp
from workbench.ops.registry import REGISTRY
from workbench.popxl.tensorlocation import ExecutionContext, TileSet

from .names import op_type_of
from .op_rewiring import OpRewiring

_UPDATER_CLASSES = frozenset({"AdamUpdaterOp", "LambSquareOp"})  # isOptimizerOp() without writing in place

if TYPE_CHECKING:
    from .graph_view import Graph
    from .tensor_view import Tensor, TensorInfo

CLASSES: dict[str, type["Op"]] = {}  # PopART class path ("exchange.HostLoadOp") -> view class (op_classes.op_class)


FIRST_OP_ID = 100  # PopART numbers the ops of an Ir from 100


def op_id(op: WorkbenchOp) -> int:
    """PopART's integer op id, from the Ir-wide count that ends every op name (``Add.1`` -> 100)."""
    try:
        return int(op.name.rsplit(".", 1)[1]) - 1 + FIRST_OP_ID
    except (IndexError, ValueError):
        return id(op)


def view_op(op: WorkbenchOp) -> "Op":
    """The view of ``op``, of the class its registry entry names."""
    definition = REGISTRY.get(op.type)
    cls = CLASSES.get(definition.popart_class) if definition is not None else None
    return (cls or Op)._view(op)


class TensorIndexMap:
    """The tensors of an op's inputs or outputs by index (PopART's ``TensorIndexMap``). Indices count from
    ``first``: a LoopOp's inputs start at 2, after PopART's trip count and condition."""

    __slots__ = ("_tensors", "_first")

    def __init__(self, tensors, first: int = 0):
        self._tensors = tuple(tensors)
        self._first = first

    def tensors(self) -> list["Tensor"]:
        from .tensor_view import view_tensor
        return [view_tensor(t) for t in self._tensors]

    def tensorMap(self) -> dict[int, "Tensor"]:
        return {self._first + position: tensor for position, tensor in enumerate(self.tensors())}

    def tensorIdMap(self) -> dict[int, str]:
        return {self._first + position: t.id for position, t in enumerate(self._tensors)}

    def indices(self, tensor: "Tensor") -> list[int]:
        return [self._first + position for position, t in enumerate(self._tensors) if t is tensor._tensor]

    def hasIndex(self, index: int) -> bool:
        return 0 <= index - self._first < len(self._tensors)

    def tensor(self, index: int) -> "Tensor":
        from .tensor_view import view_tensor
        return view_tensor(self._tensors[index - self._first])

    def id(self, index: int) -> str:
        return self._tensors[index - self._first].id

    def n(self) -> int:
        return len(self._tensors)

    def maxIndex(self) -> int:
        return self._first + len(self._tensors) - 1

    def contains(self, tensor: "Tensor") -> bool:
        return any(t is tensor._tensor for t in self._tensors)


class Settings:
    """An op's placement and role (PopART's ``Op::Settings``): read from, and written to, the op itself."""

    __slots__ = ("_op",)

    def __init__(self, op: WorkbenchOp):
        self._op = op

    @property
    def name(self) -> str:
        return self._op.name

    @property
    def vgraphId(self) -> int:
        return self._op.ipu

    @vgraphId.setter
    def vgraphId(self, value: int) -> None:
        _set_ipu(self._op, value)

    @property
    def pipelineStage(self) -> Optional[int]:
        return self._op.meta.get("pipeline_stage")

    @pipelineStage.setter
    def pipelineStage(self, value: Optional[int]) -> None:
        self._op.meta["pipeline_stage"] = value

    @property
    def executionContext(self) -> ExecutionContext:
        return execution_context(self._op)

    @property
    def tileSet(self) -> TileSet:
        return TileSet.IO if self._op.tile_set == "io" else TileSet.Compute

    @property
    def optimizerOp(self) -> bool:
        """In-place updates, and the updater terms PopART's classes also count as optimiser ops."""
        definition = REGISTRY.get(self._op.type)
        return definition is not None and (bool(definition.modifies) or definition.popart_class in _UPDATER_CLASSES)

    @property
    def graph(self) -> "Graph":
        from .graph_view import view_graph
        return view_graph(self._op.graph)


def execution_context(op: WorkbenchOp) -> ExecutionContext:
    """Where ``op`` runs: a weights fragment of the main graph, the main program, or a subgraph."""
    fragments = op.graph.ir._fragments
    for fragment, context in (("weights_from_host", ExecutionContext.WeightsFromHostFragment),
                              ("weights_to_host", ExecutionContext.WeightsToHostFragment)):
        if any(o is op for o in fragments.get(fragment, ())):
            return context
    return ExecutionContext.Normal if op.graph.is_main else ExecutionContext.Subgraph


def _set_ipu(op: WorkbenchOp, ipu: int) -> None:
    if not isinstance(ipu, int) or isinstance(ipu, bool) or ipu < 0:
        raise ValueError(f"op {op.name}: a virtual graph id is an IPU index (an int >= 0), got {ipu!r}")
    op.ipu = ipu
    for tensor in op.outputs:
        tensor._ipu = ipu
    op.graph.ir.events.emit("op_changed", op)


class Op(OpRewiring):
    """PopART's ``Op``: read through to the workbench op (``_op``); edits go to it too. A view equals, and
    hashes like, the op it views, so sets and dicts of ops (op-created hooks give workbench ops) find views.
    ``_first_input``: the index of the op's first input (2 for a LoopOp)."""

    __slots__ = ("_op",)
    _op: WorkbenchOp
    _first_input = 0

    def __init__(self, *args: Any, **kwargs: Any):
        raise TypeError(f"{type(self).__name__} cannot be constructed here: ops are created by popxl's op "
                        "functions (popxl.ops.*), and a view of one is found through graph._pb_graph.getOps()")

    @classmethod
    def _view(cls, op: WorkbenchOp) -> "Op":
        view = object.__new__(cls)
        view._op = op
        return view

    def __eq__(self, other: object) -> bool:
        return other is self._op or (isinstance(other, Op) and other._op is self._op)

    def __hash__(self) -> int:
        return hash(self._op)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._op})"

    # ----- identity -----
    @classmethod
    def _class_op_type(cls) -> str:
        return op_type_of(cls.__name__)

    def opType(self) -> str:
        return self._class_op_type()

    @property
    def opid(self):
        return _OperatorIdentifier(self.opType())

    @property
    def id(self) -> int:
        return op_id(self._op)

    def name(self) -> str:
        return self._op.name

    getName = name

    def debugName(self) -> str:
        outs = ", ".join(t.id for t in self._op.outputs)
        return f"Op({self._op.name}, outputs=[{outs}])"

    @property
    def settings(self) -> Settings:
        return Settings(self._op)

    def getSettings(self) -> Settings:
        return Settings(self._op)

    def getGraph(self) -> "Graph":
        from .graph_view import view_graph
        return view_graph(self._op.graph)

    def getIr(self):
        from .ir_view import view_ir
        return view_ir(self._op.graph.ir)

    # ----- inputs and outputs -----
    @property
    def input(self) -> TensorIndexMap:
        return TensorIndexMap(self._op.inputs, self._first_input)

    @property
    def output(self) -> TensorIndexMap:
        return TensorIndexMap(self._op.outputs)

    def getInputIndexMap(self) -> dict[int, "Tensor"]:
        return self.input.tensorMap()

    def getOutputIndexMap(self) -> dict[int, "Tensor"]:
        return self.output.tensorMap()

    def inTensor(self, index: int) -> "Tensor":
        return self.input.tensor(self._in_index(index))

    def outTensor(self, index: int) -> "Tensor":
        return self.output.tensor(self._out_index(index))

    def inId(self, index: int) -> str:
        return self.input.id(self._in_index(index))

    def outId(self, index: int) -> str:
        return self._op.outputs[self._out_index(index)].id

    def inInfo(self, index: int) -> "TensorInfo":
        return self.inTensor(index).info

    def outInfo(self, index: int) -> "TensorInfo":
        return self.outTensor(index).info

    def inTensorCount(self) -> int:
        return len(self._op.inputs)

    def outTensorCount(self) -> int:
        return len(self._op.outputs)

    def hasInput(self, index: int) -> bool:
        return self.input.hasIndex(index)

    def hasOutput(self, index: int) -> bool:
        return 0 <= index < len(self._op.outputs)

    def getInputTensors(self) -> list["Tensor"]:
        return self.input.tensors()

    def getOutputTensors(self) -> list["Tensor"]:
        return self.output.tensors()

    def hasInputTensor(self, tensor: "Tensor") -> bool:
        return any(t is tensor._tensor for t in self._op.inputs)

    def hasOutputTensor(self, tensor: "Tensor") -> bool:
        return any(t is tensor._tensor for t in self._op.outputs)

    def inIndex(self, tensor: "Tensor") -> int:
        return self.input.indices(tensor)[0]

    def outIndex(self, tensor: "Tensor") -> int:
        return self.output.indices(tensor)[0]

    def _in_index(self, index: int) -> int:
        if not self.hasInput(index):
            first = self._first_input
            raise IndexError(f"op {self._op.name} ({self.opType()}) has no input at index {index}; its inputs are "
                             f"at {first}..{first + len(self._op.inputs) - 1}")
        return index

    def _out_index(self, index: int) -> int:
        if not self.hasOutput(index):
            raise IndexError(f"op {self._op.name} ({self.opType()}) has no output at index {index}; it has "
                             f"{len(self._op.outputs)}")
        return index

    # ----- in place -----
    def modifiesIndex(self, index: int) -> bool:
        return index - self._first_input in self._op.modified

    def modifies(self) -> bool:
        return bool(self._op.modified)

    def isOutplace(self) -> bool:
        return not self._op.modified and not self._op.aliases

    def doesAlias(self) -> bool:
        return bool(self._op.aliases)

    def isOptimizerOp(self) -> bool:
        return self.settings.optimizerOp

    # ----- placement -----
    def hasVirtualGraphId(self) -> bool:
        return True

    def getVirtualGraphId(self) -> int:
        return self._op.ipu

    def setVirtualGraphId(self, ipu: Optional[int]) -> None:
        _set_ipu(self._op, 0 if ipu is None else ipu)

    def getIntrospectionInVirtualGraphId(self, index: int):
        return (self._op.inputs[self._in_index(index) - self._first_input].ipu, self.settings.tileSet)

    def hasPipelineStage(self) -> bool:
        return self._op.meta.get("pipeline_stage") is not None

    def getPipelineStage(self) -> int:
        stage = self._op.meta.get("pipeline_stage")
        if stage is None:
            raise RuntimeError(f"op {self._op.name} ({self.opType()}) has no pipeline stage")
        return stage

    def getOptionalPipelineStage(self) -> Optional[int]:
        return self._op.meta.get("pipeline_stage")

    def setPipelineStage(self, stage: Optional[int]) -> None:
        self._op.meta["pipeline_stage"] = stage

    # ----- called graphs -----
    def getCalledGraphs(self) -> list["Graph"]:
        from .graph_view import view_graph
        return [view_graph(g) for g in self._op.called_graphs]

    def getCalledGraphIds(self) -> list:
        return [g.id for g in self.getCalledGraphs()]

    def str(self) -> str:  # last in the class: below it, ``str`` would name this method
        return f"{self.id} ({self.opType()})"


class _OperatorIdentifier:
    """``op.opid``: PopART's identifier of an op type (its domain, type and version)."""

    __slots__ = ("type", "domain", "version")

    def __init__(self, op_type: str):
        self.type = op_type
        self.domain = "ai.graphcore"
        self.version = 1

    def __repr__(self) -> str:
        return f"{self.domain}.{self.type}:{self.version}"
