"""``_ir.Ir``: a view of one workbench Ir, with the methods of PopART's Ir binding."""
from __future__ import annotations

import os
from typing import Union

from workbench.ir import Ir as WorkbenchIr
from workbench.ops.identical_all_reduce import replace_by_identity

from .graph_view import Graph, GraphId, view_graph
from .inplace_pattern import apply_inplace_pattern
from .patterns import Patterns, PatternsLevel
from .session_options_view import IrSessionOptions
from .tensor_view import Tensor, view_tensor


def view_ir(ir: WorkbenchIr) -> "Ir":
    return Ir._view(ir)


class Ir:
    """PopART's ``Ir``: read through to the workbench Ir (``_ir``)."""

    __slots__ = ("_ir",)
    _ir: WorkbenchIr

    def __init__(self, *args, **kwargs):
        raise TypeError("Ir cannot be constructed here: create a popxl.Ir(); its view is ir._pb_ir")

    @classmethod
    def _view(cls, ir: WorkbenchIr) -> "Ir":
        view = object.__new__(cls)
        view._ir = ir
        return view

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ir) and other._ir is self._ir

    def __hash__(self) -> int:
        return id(self._ir)

    def __repr__(self) -> str:
        return f"Ir(id={self._ir.id})"

    def getId(self) -> int:
        return self._ir.id

    # ----- graphs -----
    def getMainGraph(self) -> Graph:
        return view_graph(self._ir.main_graph)

    def getAllGraphs(self) -> list[Graph]:
        return [view_graph(g) for g in self._ir.graphs]

    def getGraph(self, graph_id: Union[GraphId, str]) -> Graph:
        return view_graph(self._graph(graph_id))

    def hasGraph(self, graph_id: Union[GraphId, str]) -> bool:
        key = str(graph_id)
        return any(g.name == key for g in self._ir.graphs)

    def _graph(self, graph_id):
        key = str(graph_id)
        for graph in self._ir.graphs:
            if graph.name == key:
                return graph
        raise KeyError(f"{self._ir!r} has no graph with id {key!r}; its graphs are "
                       f"{[g.name for g in self._ir.graphs]}")

    def removeIsolatedGraphs(self) -> None:
        """Drop the subgraphs that the main graph does not call, directly or through other subgraphs."""
        self._ir._check_buildable()
        reached, pending = set(), [self._ir.main_graph]
        while pending:
            graph = pending.pop()
            if graph not in reached:
                reached.add(graph)
                pending.extend(callee for op in graph.ops for callee in op.called_graphs)
        for graph in [g for g in self._ir.graphs if g not in reached]:
            self._ir._discard_graph(graph)

    def createUniqueSubgraphId(self, base: Union[GraphId, str]) -> GraphId:
        return GraphId(self._ir._graph_names.fresh(str(base)))

    # ----- tensors -----
    def getTensor(self, tensor_id: str) -> Tensor:
        for graph in self._ir.graphs:
            for tensor in graph.tensors:
                if tensor.id == tensor_id:
                    return view_tensor(tensor)
        raise KeyError(f"{self._ir!r} has no tensor with id {tensor_id!r}")

    def containsTensor(self, tensor_id: str) -> bool:
        return any(t.id == tensor_id for g in self._ir.graphs for t in g.tensors)

    def getTensorIds(self) -> list[str]:
        return [t.id for g in self._ir.graphs for t in g.tensors]

    # ----- options and patterns -----
    def getSessionOptions(self):
        """The PopART session options of this Ir, made on first use and kept with it."""
        options = getattr(self._ir, "_popart_session_options", None)
        if options is None:
            options = IrSessionOptions(self._ir)
            cache = os.environ.get("POPXL_CACHE_DIR")
            if cache:  # as popxl's Ir reads it: an executable cache there (the workbench compiles no engine)
                options.enableEngineCaching, options.cachePath = True, cache
            self._ir._popart_session_options = options
        return options

    def setPatterns(self, patterns: Patterns) -> None:
        if not isinstance(patterns, Patterns):
            raise TypeError(f"setPatterns takes a popart._internal.ir.patterns.Patterns, got {patterns!r}")
        self._ir._check_buildable()
        self._ir._popart_patterns = patterns

    def getPatterns(self) -> Patterns:
        return getattr(self._ir, "_popart_patterns", None) or Patterns(PatternsLevel.Default)

    def applyPreAliasPatterns(self, graph: Graph) -> None:
        """PopART rewrites ops here; the workbench keeps ops as popxl built them, apart from OpToIdentity
        (at the Default and All levels), which turns all-reduces of identical inputs into identities."""
        if not isinstance(graph, Graph) or graph._graph.ir is not self._ir:
            raise TypeError(f"applyPreAliasPatterns takes a graph of this Ir (ir._pb_ir.getAllGraphs()), got "
                            f"{graph!r}")
        if self.getPatterns().level in (PatternsLevel.Default, PatternsLevel.All):  # the levels with OpToIdentity
            replace_by_identity(graph._graph)

    def applyInplacePattern(self, graph: Graph) -> None:
        """PopART's Inplace pattern over ``graph``: ops become their in-place variants (``Mul`` ->
        ``MulLhsInplace`` or ``MulRhsInplace``, ...) wherever that changes no result (``inplace_pattern``)."""
        if not isinstance(graph, Graph) or graph._graph.ir is not self._ir:
            raise TypeError(f"applyInplacePattern takes a graph of this Ir (ir._pb_ir.getAllGraphs()), got "
                            f"{graph!r}")
        apply_inplace_pattern(graph._graph)

    def setDataFlow(self, data_flow) -> None:
        self._ir._popart_data_flow = data_flow

    def updateVertices(self) -> None:
        """PopART recomputes scheduling facts here; workbench views compute them when read."""

    def logIr(self) -> None:
        for graph in self._ir.graphs:
            print(graph)

    def getReplicationFactor(self) -> int:
        return self._ir.replication_factor
