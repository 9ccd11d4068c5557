"""The op view classes with methods beyond ``Op``'s (called graphs, IPU copies, factors, matmul options),
and the making of one view class per PopART class name."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from workbench.ops.call_binding import call_bindings

from .op_view import CLASSES, Op

if TYPE_CHECKING:
    from .graph_view import Graph


class SubgraphOp(Op):
    """The binding of ops that call a graph (CallOp, LoopOp): index maps between the op and its graph."""

    __slots__ = ()

    def getCalledGraph(self) -> "Graph":
        return self.getCalledGraphs()[0]

    def _binding(self):
        return call_bindings(self._op)[0]

    def opInToSubgraphInIndex(self, index: int) -> int:
        binding = self._binding()
        return binding.order[index - binding.first]

    def subgraphInToOpInIndex(self, index: int) -> int:
        """The op input feeding graph input ``index``; for an input no op input feeds yet, the index a
        new op input would take (``connectInTensor`` then binds it)."""
        binding = self._binding()
        if index in binding.order:
            return binding.op_input_index(index)
        return binding.first + len(binding.order)

    def getNumExplicitInputs(self) -> int:
        return len(self._op.inputs)

    def connectInTensor(self, index: int, tensor_id: str) -> None:
        """Feed the first graph input no op input feeds yet with parent tensor ``tensor_id``, as op input
        ``index`` (the next one)."""
        op = self._op
        op.graph.ir._check_buildable()
        binding = self._binding()
        if index != len(op.inputs):
            raise NotImplementedError(f"{self.opType()} {op.name}: connectInTensor can only add the next input "
                                      f"(index {len(op.inputs)}), got index {index}")
        unbound = [i for i in range(len(binding.graph.inputs)) if i not in binding.order]
        if not unbound:
            raise ValueError(f"{self.opType()} {op.name}: every input of graph {binding.graph.label!r} is already "
                             "fed; add a graph input first (popxl.graph_input inside the graph)")
        tensor = op.graph.get_tensor(tensor_id)
        spec = binding.graph.inputs[unbound[0]].spec
        if (tensor.shape, tensor.dtype) != (spec.shape, spec.dtype):
            raise ValueError(f"{self.opType()} {op.name}: {tensor_id!r} is {tensor.spec}, but graph input "
                             f"{binding.graph.inputs[unbound[0]].id!r} expects {spec}")
        op.inputs = op.inputs + (tensor,)
        op.attrs["graph_inputs"] = tuple(op.attrs["graph_inputs"]) + (unbound[0],)
        if op not in tensor.consumers:
            tensor.consumers.append(op)
        op.graph.ir.events.emit("op_changed", op)

    def addLoopInput(self, index: int, tensor_id: str, subgraph_tensor_id: str, overwrite: bool = False) -> None:
        """Add a graph input named by ``subgraph_tensor_id`` to the called graph, fed by ``tensor_id``."""
        graph = self._binding().graph
        parent = self._op.graph.get_tensor(tensor_id)
        name = subgraph_tensor_id.split("/", 1)[1] if subgraph_tensor_id.startswith(graph.name + "/") \
            else subgraph_tensor_id
        graph.append_input(name, parent.spec, parent._ipu, parent._tile_set)
        self.connectInTensor(index, tensor_id)

    def addModified(self, index: int, regions) -> None:
        """Mark op input ``index`` as written by the call when any region is not empty."""
        op = self._op
        if any(not region.isEmpty() for region in regions):
            op.modified = tuple(sorted(set(op.modified) | {index}))
            op.graph.ir.events.emit("op_changed", op)

    def opOutToSubgraphOutIndex(self, index: int) -> int:
        return index

    def subgraphOutToOpOutIndex(self, index: int) -> int:
        return index

    def getTripCountValue(self) -> int:
        return int(self._op.attrs.get("repeat_count", 1))


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
        return self._op.ipu


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


_BASES = {"CallOp": SubgraphOp, "LoopOp": SubgraphOp, "IpuCopyOp": IpuCopyBase, "AccumulateOp": FactorOp,
          "AccumulatorScaleOp": FactorOp, "SparseAccumulateOp": FactorOp, "MatMulOp": MemoryProportionOp,
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
