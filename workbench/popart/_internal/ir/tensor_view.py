"""``_ir.Tensor``: a view of one workbench tensor, with the methods of PopART's tensor binding."""
from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Iterable

from workbench.ir import Tensor as WorkbenchTensor
from workbench.ir.tensor import Constant, Variable

from .op_view import Op, view_op
from .view import Region

if TYPE_CHECKING:
    from .graph_view import Graph


class TensorType(Enum):
    """What kind of tensor PopART would call it."""

    ActGrad = "ActGrad"
    Const = "Const"
    Stream = "Stream"
    Unknown = "Unknown"
    Variable = "Variable"


class DataType(Enum):
    """PopART's element types, by name; ``TensorInfo.dataType()`` gives one."""

    BOOL = "bool"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    FLOAT8_143 = "float8_143"
    FLOAT8_152 = "float8_152"
    FLOAT16 = "float16"
    FLOAT = "float32"
    DOUBLE = "float64"


class TensorInfo:
    """A tensor's shape and element type (PopART's ``TensorInfo``)."""

    __slots__ = ("_spec",)

    def __init__(self, spec):
        self._spec = spec

    def shape(self) -> list[int]:
        return list(self._spec.shape)

    def metaShape(self) -> list[int]:
        return list(self._spec.meta_shape)

    def rank(self) -> int:
        return len(self._spec.shape)

    def dim(self, index: int) -> int:
        return self._spec.shape[index]

    def nelms(self) -> int:
        return self._spec.nelms

    def nbytes(self) -> int:
        return self._spec.nbytes

    def dataType(self) -> DataType:
        return DataType(self._spec.dtype.name)

    def data_type_lcase(self) -> str:
        return self._spec.dtype.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorInfo) and (other._spec.shape, other._spec.dtype) == (
            self._spec.shape, self._spec.dtype)

    def __repr__(self) -> str:
        return f"TensorInfo({self._spec.dtype.name}, {list(self._spec.shape)})"


class Consumers:
    """The ops reading a tensor (PopART's ``Consumers``)."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor: WorkbenchTensor):
        self._tensor = tensor

    def getOps(self) -> list[Op]:
        return [view_op(op) for op in self._tensor.consumers]

    def getTotal(self) -> int:
        return sum(op.inputs.count(self._tensor) for op in self._tensor.consumers)

    def n(self, op: Op) -> int:
        return op._op.inputs.count(self._tensor)


def view_tensor(tensor: WorkbenchTensor) -> "Tensor":
    return Tensor._view(tensor)


class Tensor:
    """PopART's ``Tensor``: read through to the workbench tensor (``_tensor``)."""

    __slots__ = ("_tensor",)
    _tensor: WorkbenchTensor

    def __init__(self, *args, **kwargs):
        raise TypeError("Tensor cannot be constructed here: tensors are created by popxl "
                        "(popxl.variable, popxl.constant, ops), and a view of one is tensor._pb_tensor")

    @classmethod
    def _view(cls, tensor: WorkbenchTensor) -> "Tensor":
        view = object.__new__(cls)
        view._tensor = tensor
        return view

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tensor) and other._tensor is self._tensor

    def __hash__(self) -> int:
        return id(self._tensor)

    def __repr__(self) -> str:
        return f"Tensor({self._tensor.id}, {self._tensor.spec})"

    @property
    def id(self) -> str:
        return self._tensor.id

    def str(self) -> str:
        return self._tensor.id

    @property
    def info(self) -> TensorInfo:
        return TensorInfo(self._tensor.spec)

    def tensorType(self) -> TensorType:
        if isinstance(self._tensor, Variable):
            return TensorType.Variable
        if isinstance(self._tensor, Constant):
            return TensorType.Const
        return TensorType.ActGrad

    def getGraph(self) -> "Graph":
        from .graph_view import view_graph
        return view_graph(self._tensor.graph)

    def getIr(self):
        from .ir_view import view_ir
        return view_ir(self._tensor.ir)

    def hasProducer(self) -> bool:
        return self._tensor.producer is not None

    def getProducer(self) -> Op:
        if self._tensor.producer is None:
            raise RuntimeError(f"tensor {self._tensor.id!r} has no producer (it is a graph input, variable or "
                               "constant); check hasProducer() first")
        return view_op(self._tensor.producer)

    def getProducerUnsafe(self):
        return view_op(self._tensor.producer) if self._tensor.producer is not None else None

    @property
    def consumers(self) -> Consumers:
        return Consumers(self._tensor)

    def isGraphInput(self) -> bool:
        return self._tensor.graph.is_input(self._tensor)

    def isGraphOutput(self) -> bool:
        return self._tensor.graph.is_output(self._tensor)

    def getGraphInputIndex(self) -> int:
        return self._tensor.graph.inputs.index(self._tensor)

    def getGraphOutputIndex(self) -> int:
        return self._tensor.graph.outputs.index(self._tensor)

    def hasTensorData(self) -> bool:
        return isinstance(self._tensor, (Variable, Constant))

    def isAliased(self) -> bool:
        """True where another tensor shares this one's memory: an op that aliases it into an output, or
        the input its producer aliases."""
        producer = self._tensor.producer
        if producer is not None and producer.aliases:
            index = producer.outputs.index(self._tensor)
            if index in producer.aliases:
                return True
        return any(op.inputs[i] is self._tensor for op in self._tensor.consumers for i in op.aliases.values())

    def isModified(self) -> bool:
        return any(op.inputs[i] is self._tensor for op in self._tensor.consumers for i in op.modified)

    def modifiedRegionsByOps(self, ops: Iterable[Op]) -> list[Region]:
        """One full region per given op that writes this tensor in place (an empty list when none does)."""
        shape = self._tensor.shape
        return [Region.getFull(list(shape)) for op in ops
                if any(op._op.inputs[i] is self._tensor for i in op._op.modified)]
