"""``_ir.Graph``: a view of one workbench graph, with the methods of PopART's graph binding.

Reads go to the graph; the edits PopART offers (erase an op, remove an output, mark a graph as not to be
differentiated recursively) change the graph itself, so every view, export and run sees them.
"""
from __future__ import annotations

from typing import Union

from workbench.ir import Graph as WorkbenchGraph
from workbench.ir.op_edits import set_after
from workbench.ir.tensor import Constant, Variable
from workbench.transforms.graph_edits import EditLog, call_sites, remove_op
from workbench.ops.registry import op_def

from .loop_body import wrap_loop_body
from .op_rewiring import tensor_name
from .op_view import Op, op_id, view_op
from .tensor_view import Tensor, view_tensor


class GraphId:
    """A graph's id (PopART's ``GraphId``): the main graph's is the empty string."""

    __slots__ = ("_id",)

    def __init__(self, graph_id: str = ""):
        if not isinstance(graph_id, str):
            raise TypeError(f"a GraphId is made from a str, got {type(graph_id).__name__} {graph_id!r}")
        self._id = graph_id

    @staticmethod
    def root() -> "GraphId":
        return GraphId("")

    def __str__(self) -> str:
        return self._id

    def __repr__(self) -> str:
        return f"GraphId({self._id!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other == self._id
        return isinstance(other, GraphId) and other._id == self._id

    def __lt__(self, other: "GraphId") -> bool:
        return self._id < other._id

    def __hash__(self) -> int:
        return hash(self._id)

    def str(self) -> str:  # last in the class: below it, ``str`` would name this method
        return self._id


def view_graph(graph: WorkbenchGraph) -> "Graph":
    return Graph._view(graph)


def graph_id(graph: WorkbenchGraph) -> GraphId:
    return GraphId(graph.name)


class TopoCons:
    """The extra ordering constraints of a graph (``in_sequence``): which ops must run before which."""

    __slots__ = ("_graph",)

    def __init__(self, graph: WorkbenchGraph):
        self._graph = graph

    def getBefores(self, op: Op) -> list[Op]:
        return [view_op(o) for o in op._op.after]

    def getAfters(self, op: Op) -> list[Op]:
        return [view_op(o) for o in self._graph.ops if any(b is op._op for b in o.after)]

    def transferToSubgraph(self, replacement, op_copies, copy_within: bool = True) -> None:
        """Ops of this graph were copied into a subgraph (``op_copies``: op -> its copies) that
        ``replacement`` calls: orders between two moved ops hold between their copies (``copy_within``),
        and orders between a moved op and one left here hold for ``replacement`` instead."""
        replacement = getattr(replacement, "_op", replacement)
        moved = {getattr(op, "_op", op): [getattr(c, "_op", c) for c in copies] for op, copies in op_copies.items()}
        for op, copies in moved.items():
            inside = [c for before in op.after if before in moved for c in moved[before]]
            outside = [before for before in op.after if before not in moved]
            if copy_within:
                for copy in copies:
                    set_after(copy, list(copy.after) + inside)
            if outside:
                set_after(replacement, list(replacement.after) + outside)
        for other in self._graph.ops:
            if other not in moved and other is not replacement and any(b in moved for b in other.after):
                set_after(other, [replacement if b in moved else b for b in other.after])


class Graph:
    """PopART's ``Graph``: read through to the workbench graph (``_graph``); edits change it."""

    __slots__ = ("_graph",)
    _graph: WorkbenchGraph

    def __init__(self, *args, **kwargs):
        raise TypeError("Graph cannot be constructed here: create graphs with popxl (ir.create_graph, "
                        "ir.create_empty_graph); a view of one is graph._pb_graph")

    @classmethod
    def _view(cls, graph: WorkbenchGraph) -> "Graph":
        view = object.__new__(cls)
        view._graph = graph
        return view

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Graph) and other._graph is self._graph

    def __hash__(self) -> int:
        return id(self._graph)

    def __repr__(self) -> str:
        return f"Graph({self._graph.name!r})"

    # ----- identity -----
    @property
    def id(self) -> GraphId:
        return graph_id(self._graph)

    def getGraphString(self) -> str:
        return self._graph.name or "main"

    def getIr(self):
        from .ir_view import view_ir
        return view_ir(self._graph.ir)

    def getScope(self) -> str:
        return self._graph.name

    # ----- ops -----
    def getOps(self) -> list[Op]:
        return [view_op(op) for op in self._graph.ops]

    def getOpIds(self) -> list[int]:
        return [op_id(op) for op in self._graph.ops]

    def getOpSchedule(self, require_optimal: bool = False) -> list[Op]:
        """The ops in the order they run: the workbench's schedule (data, ``in_sequence`` and in-place order)."""
        from workbench.analysis.schedule import schedule

        return [view_op(op) for op in schedule(self._graph)]

    def getOp(self, op_id_: int) -> Op:
        return view_op(self._op_by_id(op_id_))

    def _op_by_id(self, op_id_: int):
        for op in self._graph.ops:
            if op_id(op) == op_id_:
                return op
        raise KeyError(f"graph {self._graph.label!r} has no op with id {op_id_}")

    def createConnectedOp_SumOp(self, inputs: dict, outputs: dict, opid, settings) -> Op:
        """PopART's Sum of the tensors ``inputs`` names (index -> id), broadcasting, into ``outputs[0]``; it
        runs on the IPU ``settings`` names. ``popxl.transforms.decompose_sum`` splits it into adds."""
        from workbench.ops.elementwise_nary import SUM_OF_MANY
        from workbench.ops.registry import create_op

        graph = self._graph
        tensors = [graph.get_tensor(inputs[i]) for i in sorted(inputs)]
        if sorted(inputs) != list(range(len(inputs))) or set(outputs) != {0}:
            raise ValueError(f"SumOp: inputs are numbered 0..n-1 and its one output 0, got inputs {sorted(inputs)} "
                             f"and outputs {sorted(outputs)}")
        with graph:
            op = create_op(SUM_OF_MANY, tensors, output_names=[tensor_name(graph, outputs[0])],
                           ipu=getattr(settings, "vgraphId", None))
        return view_op(op)

    def getCalledGraphs(self) -> list["Graph"]:
        return [view_graph(g) for g in self._graph.called_graphs]

    # ----- tensors -----
    def getTensor(self, tensor_id: str) -> Tensor:
        return view_tensor(self._graph.get_tensor(tensor_id))

    def containsTensor(self, tensor_id: str) -> bool:
        return any(t.id == tensor_id for t in self._graph.tensors)

    def getTensorIds(self) -> list[str]:
        return [t.id for t in self._graph.tensors]

    def __contains__(self, tensor_id: object) -> bool:
        """``tensor_id in pb_graph``: whether a tensor of this id is in the graph (host-stream handles too)."""
        return isinstance(tensor_id, str) and self.containsTensor(tensor_id)

    def getInputIds(self) -> list[str]:
        return [t.id for t in self._graph.inputs]

    def getOutputIds(self) -> list[str]:
        return [t.id for t in self._graph.outputs]

    def getInputId(self, index: int) -> str:
        return self._at(self._graph.inputs, index, "input").id

    def getOutputId(self, index: int) -> str:
        return self._at(self._graph.outputs, index, "output").id

    def getInputTensor(self, index: int) -> Tensor:
        return view_tensor(self._at(self._graph.inputs, index, "input"))

    def getOutputTensor(self, index: int) -> Tensor:
        return view_tensor(self._at(self._graph.outputs, index, "output"))

    def getInputTensors(self) -> list[Tensor]:
        return [view_tensor(t) for t in self._graph.inputs]

    def getOutputTensors(self) -> list[Tensor]:
        return [view_tensor(t) for t in self._graph.outputs]

    def getInputIndex(self, tensor_id: str) -> int:
        return self._index(self._graph.inputs, tensor_id, "input")

    def getOutputIndex(self, tensor_id: str) -> int:
        return self._index(self._graph.outputs, tensor_id, "output")

    def hasInputId(self, tensor_id: str) -> bool:
        return any(t.id == tensor_id for t in self._graph.inputs)

    def hasOutputId(self, tensor_id: str) -> bool:
        return any(t.id == tensor_id for t in self._graph.outputs)

    def _at(self, tensors, index: int, what: str):
        if not 0 <= index < len(tensors):
            raise IndexError(f"graph {self._graph.label!r} has no {what} at index {index}; it has "
                             f"{len(tensors)} {what}s")
        return tensors[index]

    def _index(self, tensors, tensor_id: str, what: str) -> int:
        for index, tensor in enumerate(tensors):
            if tensor.id == tensor_id:
                return index
        raise KeyError(f"{tensor_id!r} is not an {what} of graph {self._graph.label!r}; its {what}s are "
                       f"{[t.id for t in tensors]}")

    def topoCons(self) -> TopoCons:
        return TopoCons(self._graph)

    # ----- edits -----
    def eraseOp(self, op_id_: int) -> None:
        """Take an op out of the graph with its outputs, which nothing may still read."""
        op = self._op_by_id(op_id_)
        graph = self._graph
        graph._check_buildable()
        for tensor in op.outputs:
            readers = [o.name for o in tensor.consumers]
            if readers or graph.is_output(tensor):
                where = f"ops {readers}" if readers else f"graph {graph.label!r} as an output"
                raise RuntimeError(f"cannot erase op {op.name}: its output {tensor.id!r} is still read by {where}; "
                                   "erase or rewire those first")
        remove_op(op)
        for other in graph.ops:  # ops ordered after it (in_sequence) follow what it followed
            if op in other.after:
                kept = tuple(o for o in other.after if o is not op)
                other.after = tuple(dict.fromkeys(kept + op.after))

    def removeOutput(self, index: int) -> None:
        """Remove output ``index`` of the graph, and the matching output of every op calling it. Outputs
        after it move down one place; an index past the last output removes the last one, as PopART's
        does (so removing each index of a list of all outputs, in order, removes them all)."""
        graph = self._graph
        graph._check_buildable()
        if index >= len(graph.outputs) and graph.outputs:
            index = len(graph.outputs) - 1
        self._at(graph.outputs, index, "output")
        sites = call_sites(graph)
        for op in sites:
            definition = op_def(op.type)
            if definition.repeats or definition.branches:
                raise RuntimeError(f"cannot remove output {index} of graph {graph.label!r}: {op.type} op {op.name} "
                                   "calls it, and its outputs are carried from one iteration or branch to the next")
            readers = [o.name for o in op.outputs[index].consumers]
            if readers:
                raise RuntimeError(f"cannot remove output {index} of graph {graph.label!r}: the matching output "
                                   f"{op.outputs[index].id!r} of call op {op.name} is read by {readers}")
        graph.remove_output(index)
        for op in sites:
            removed = op.outputs[index]
            op.outputs = op.outputs[:index] + op.outputs[index + 1:]
            op.graph._forget_tensor(removed)
            graph.ir.events.emit("op_changed", op)

    def markAsOutput(self, tensor_id: str) -> None:
        """Return ``tensor_id`` as a new last output. Each op calling the graph gets the matching output (a
        call's ``createAndConnectOutTensor`` then names it); a repeat, which carries all its graph returns,
        is first made to call a wrapper graph that calls this one (as PopART's LoopOp does)."""
        graph = self._graph
        graph._check_buildable()
        tensor = graph.get_tensor(tensor_id)
        sites = call_sites(graph)
        for op in sites:
            if op_def(op.type).branches:
                raise RuntimeError(f"cannot add output {tensor_id!r} to graph {graph.label!r}: conditional op "
                                   f"{op.name} calls it, and its other branch would not return it")
        for op in sites:
            if op_def(op.type).repeats:
                wrap_loop_body(op)
        EditLog(graph.ir).add_output(graph, tensor, call_sites(graph))

    def removeIsolatedTensors(self, *flags: bool) -> None:
        """Forget tensors that no op produces or reads and that are no input, output, variable or constant."""
        graph = self._graph
        keep = set(graph.inputs) | set(graph.outputs)
        for tensor in graph.device_tensors:
            if tensor.producer is None and not tensor.consumers and tensor not in keep \
                    and not isinstance(tensor, (Variable, Constant)):
                graph._forget_tensor(tensor)

    def setCanBeRecursivelyAutodiffed(self, value: bool) -> None:
        """False: autodiff of a graph calling this one needs its gradient graph given
        (``called_graphs_grad_info``) and will not differentiate it itself."""
        self._graph._recursive_autodiff = bool(value)

    def getCanBeRecursivelyAutodiffed(self) -> bool:
        return self._graph._recursive_autodiff


GraphLike = Union[Graph, GraphId, str]
