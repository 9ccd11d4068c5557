"""The op view classes with methods beyond ``Op``'s (called graphs, IPU copies, factors, matmul options),
and the making of one view class per PopART class name."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from workbench.ir import op_edits
from workbench.ir.op_edits import set_graph_output
from workbench.ops.call_binding import call_bindings
from workbench.transforms.graph_edits import rename

from .op_rewiring import place_unread_input, tensor_name
from .op_view import CLASSES, Op

if TYPE_CHECKING:
    from .graph_view import Graph


class SubgraphOp(Op):
    """The binding of ops that call a graph (CallOp, LoopOp): index maps between the op and its graph. Graph
    indices are those of the called graph itself."""

    __slots__ = ()

    def getCalledGraph(self) -> "Graph":
        return self.getCalledGraphs()[0]

    def _binding(self):
        return call_bindings(self._op)[0]

    def opInToSubgraphInIndex(self, index: int) -> int:
        binding = self._binding()
        return binding.order[self._input_position(index) - binding.first]

    def subgraphInToOpInIndex(self, index: int) -> int:
        """The op input feeding graph input ``index``; for an input no op input feeds yet, the index a
        new op input would take (``connectInTensor`` then binds it)."""
        binding = self._binding()
        if index in binding.order:
            return self._first_input + binding.op_input_index(index)
        return self._first_input + binding.first + len(binding.order)

    def getNumExplicitInputs(self) -> int:
        return self._first_input + len(self._op.inputs)

    def connectInTensor(self, index: int, tensor_id: str) -> None:
        """Feed a graph input with parent tensor ``tensor_id`` as op input ``index``: the graph input the op's
        binding names for that position (a copied op), or else the first graph input nothing feeds yet."""
        op = self._op
        op.graph.ir._check_buildable()
        binding = self._binding()
        position = self._input_position(index)
        if position > len(op.inputs):
            raise IndexError(f"{self.opType()} {op.name}: connectInTensor can only add the next input (index "
                             f"{self._first_input + len(op.inputs)}), got index {index}")
        order = tuple(op.attrs["graph_inputs"])
        if position < len(order):
            graph_index = order[position]
        else:
            unbound = [i for i in range(len(binding.graph.inputs)) if i not in order]
            if not unbound:
                raise ValueError(f"{self.opType()} {op.name}: every input of graph {binding.graph.label!r} is "
                                 "already fed; add a graph input first (popxl.graph_input inside the graph)")
            graph_index = unbound[0]
        tensor = op.graph.get_tensor(tensor_id)
        expected = binding.graph.inputs[graph_index]
        if (tensor.shape, tensor.dtype) != (expected.shape, expected.dtype):
            raise ValueError(f"{self.opType()} {op.name}: {tensor_id!r} is {tensor.spec}, but graph input "
                             f"{expected.id!r} expects {expected.spec}")
        if not expected.consumers:  # a graph input made for this connection: it takes the parent's IPU
            place_unread_input(expected, tensor.ipu)
        elif len({t.ipu for t in binding.graph.inputs}) > 1:  # a graph taking inputs on several IPUs
            place_unread_input(tensor, expected.ipu)
        else:
            place_unread_input(tensor, op.ipu)
        op_edits.connect_input(op, position, tensor)
        if position == len(order):
            op.attrs["graph_inputs"] = order + (graph_index,)

    def addLoopInput(self, index: int, tensor_id: str, subgraph_tensor_id: str, overwrite: bool = False) -> None:
        """Add a graph input named by ``subgraph_tensor_id`` to the called graph, fed by ``tensor_id`` as the
        op's next input ``index``."""
        if overwrite:
            raise NotImplementedError(f"{self.opType()} {self._op.name}: addLoopInput can only add an input "
                                      "(overwrite=False) on the workbench")
        graph = self._binding().graph
        parent = self._op.graph.get_tensor(tensor_id)
        graph.append_input(tensor_name(graph, subgraph_tensor_id), parent.spec, parent._ipu, parent._tile_set)
        self.connectInTensor(index, tensor_id)

    def addModified(self, index: int, regions) -> None:
        """Mark op input ``index`` as written by the call when any region is not empty."""
        op = self._op
        if any(not region.isEmpty() for region in regions):
            op.modified = tuple(sorted(set(op.modified) | {self._input_position(index)}))
            op.graph.ir.events.emit("op_changed", op)

    def createAndConnectOutTensor(self, index: int, tensor_id: str) -> None:
        """Output ``index`` for what the called graph returns there, named ``tensor_id``. An output that a new
        graph output (``markAsOutput``) already gave this call, which nothing reads yet, takes the name."""
        op = self._op
        if index < len(op.outputs):
            tensor = op.outputs[index]
            if tensor.consumers or op.graph.is_output(tensor):
                raise ValueError(f"{self.opType()} {op.name}: output {index} is already connected to "
                                 f"{tensor.id!r}, which is in use")
            rename(tensor, tensor_name(op.graph, tensor_id))
            op.graph.ir.events.emit("op_changed", op)
            return
        super().createAndConnectOutTensor(index, tensor_id)

    def opOutToSubgraphOutIndex(self, index: int) -> int:
        return index

    def subgraphOutToOpOutIndex(self, index: int) -> int:
        return index

    def getTripCountValue(self) -> int:
        return int(self._op.attrs.get("repeat_count", 1))


class LoopOpBase(SubgraphOp):
    """PopART's LoopOp: inputs numbered from 2 (PopART's 0 and 1 are the trip count and the condition, which
    a repeat keeps as its count), outputs from 0; each carried output ``i`` feeds input ``2 + i``."""

    __slots__ = ()
    _first_input = 2

    def addLoopOutput(self, index: int, tensor_id: str, subgraph_tensor_id: str, overwrite: bool = False) -> None:
        """Carry ``subgraph_tensor_id`` of the called graph as loop output ``index`` (``tensor_id`` outside),
        in place of what the graph returned there (``overwrite``)."""
        op = self._op
        if not overwrite:
            raise NotImplementedError(f"LoopOp {op.name}: addLoopOutput can only replace a carried output "
                                      "(overwrite=True) on the workbench: a new one needs a carried input too")
        self._out_index(index)
        if op.outputs[index].id != tensor_id:
            raise ValueError(f"LoopOp {op.name}: output {index} is {op.outputs[index].id!r}, not {tensor_id!r}")
        body = self._binding().graph
        set_graph_output(body, index, body.get_tensor(subgraph_tensor_id))
        op.graph.ir.events.emit("op_changed", op)


class IpuCopyBase(Op):
    """IpuCopyOp's extra methods: the IPUs it copies between."""

    __slots__ = ()

    def getSourceIpu(self, tensor_id: Optional[str] = None) -> int:
        if tensor_id is None:
            return self._op.inputs[0].ipu
        for tensor in self._op.inputs:
            if tensor.id == tensor_id:
                return tensor.ipu
        raise KeyError(f"IpuCopyOp {self._op.name} copies no tensor {tensor_id!r}")

    def getDestIpu(self) -> int:
        return self._op.attrs["destination"]

    def connectInTensor(self, index: int, tensor_id: str, source_ipu: Optional[int] = None) -> None:
        """Copy ``tensor_id`` as input ``index``; ``source_ipu``, where given, must be where it lives."""
        tensor = self._op.graph.get_tensor(tensor_id)
        if source_ipu is not None:
            place_unread_input(tensor, source_ipu)
        if source_ipu is not None and tensor.ipu != source_ipu:
            raise ValueError(f"IpuCopyOp {self._op.name}: {tensor_id!r} lives on IPU {tensor.ipu}, not on the "
                             f"given source IPU {source_ipu}")
        super().connectInTensor(index, tensor_id)


class _Factor:
    """An op's scale factor (PopART's ``OptimizerValue``): a constant, or a tensor input (``val()`` 0)."""

    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = value

    def val(self) -> float:
        return 0.0 if self._value is None else float(self._value)

    def isConst(self) -> bool:
        return self._value is not None


class FactorOp(Op):
    """The accumulator ops' ``getFactor()``."""

    __slots__ = ()

    def getFactor(self) -> _Factor:
        return _Factor(self._op.attrs.get("f"))


class SparseAccumulateBase(FactorOp):
    """PopART's SparseAccumulateOp: its factor and the axis of ``t`` that the indices pick along."""

    __slots__ = ()

    def getAxis(self) -> int:
        return int(self._op.attrs["axis"])


class MemoryProportionOp(Op):
    """Ops whose available memory proportion PopART lets a pass set (matmul, convolution)."""

    __slots__ = ()

    def getAvailableMemoryProportion(self):
        from .enums import OptionalFloat

        return OptionalFloat(self._op.attrs.get("available_memory_proportion"))

    def setAvailableMemoryProportion(self, value) -> None:
        """Record the proportion on the op (the simulated IPU plans no tile memory by it)."""
        proportion = value.value() if hasattr(value, "value") and callable(value.value) and value else value
        if proportion is not None and not 0 < float(proportion) <= 1:
            raise ValueError(f"an available memory proportion must lie in (0, 1], got {proportion!r}")
        self._op.attrs["available_memory_proportion"] = None if proportion is None else float(proportion)
        self._op.graph.ir.events.emit("op_changed", self._op)

    def getPartialsType(self):
        from .op import MatMulPartialsType
        from workbench.ir import dtypes

        partials = self._op.attrs.get("partials_type")
        if partials is None:
            options = getattr(self._op.graph.ir, "_popart_session_options", None)
            partials = dtypes.float16 if options is not None and str(
                getattr(options, "partialsTypeMatMuls", "")).lower() == "half" else dtypes.float32
        return MatMulPartialsType.HALF if partials is dtypes.float16 else MatMulPartialsType.FLOAT


class ConvOptions:
    """``ConvOp.getConvOptions()``: a copy of the convolution's options PopART lets a pass read and set."""

    __slots__ = ("availableMemoryProportions",)

    def __init__(self, proportions=()):
        self.availableMemoryProportions = [float(p) for p in proportions]


class ConvolutionOp(MemoryProportionOp):
    """PopART's ConvOp: its options (one available memory proportion per convolution) come as a copy."""

    __slots__ = ()

    def getConvOptions(self) -> ConvOptions:
        return ConvOptions(self._op.attrs.get("available_memory_proportions", ()))

    def setConvOptions(self, options: ConvOptions) -> None:
        proportions = tuple(float(p) for p in options.availableMemoryProportions)
        if any(not 0 < p <= 1 for p in proportions):
            raise ValueError(f"available memory proportions must lie in (0, 1], got {list(proportions)}")
        if proportions:
            self._op.attrs["available_memory_proportions"] = proportions
        else:
            self._op.attrs.pop("available_memory_proportions", None)
        self._op.graph.ir.events.emit("op_changed", self._op)


_BASES = {"CallOp": SubgraphOp, "LoopOp": LoopOpBase, "IpuCopyOp": IpuCopyBase, "AccumulateOp": FactorOp,
          "AccumulatorScaleOp": FactorOp, "SparseAccumulateOp": SparseAccumulateBase, "MatMulOp": MemoryProportionOp,
          "ConvOp": ConvolutionOp}


def op_class(popart_class: str) -> type:
    """The view class for PopART class path ``popart_class``, made once."""
    if popart_class not in CLASSES:
        name = popart_class.rsplit(".", 1)[-1]
        base = _BASES.get(name, Op)
        space = popart_class.rpartition(".")[0]
        CLASSES[popart_class] = type(name, (base,), {
            "__slots__": (), "__doc__": f"PopART's {name}.",
            "__module__": "popart._internal.ir.op" + (f".{space}" if space else "")})
    return CLASSES[popart_class]
