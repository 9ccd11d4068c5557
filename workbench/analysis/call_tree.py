"""The call tree: which graph calls which, how, and how often each graph runs per session run.

Nodes are graphs; each call site is an edge of kind 'call', 'repeat' (with its count),
'conditional-then' or 'conditional-else'. ``runs_per_session_run`` sums, over every path from the
main graph, the product of the repeat counts along it; a branch counts as taken, so the figure is
the most a graph can run, and ``through_branch`` says when a branch was assumed taken. Graphs the
main graph never reaches run 0 times. Each graph also names the IPUs its ops run on, which is where
a pipelined program's stages show. Loading code (``remote_code_load``) is not a call.
"""
from __future__ import annotations

from dataclasses import dataclass

from workbench.ir import Graph, Ir, Op
from workbench.ops.call_binding import call_bindings


@dataclass(eq=False, slots=True)
class CallTreeNode:
    """A graph, its size, how often it runs and the IPUs it runs on: those of its ops and of the graphs
    it calls (a pipeline stage's one IPU)."""

    graph: Graph
    op_count: int
    runs_per_session_run: int
    through_branch: bool
    ipus: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        return self.graph.label


@dataclass(eq=False, slots=True)
class CallTreeEdge:
    """One call site: ``op`` in ``caller`` runs ``callee`` ``repeat_count`` times each time it runs."""

    caller: Graph
    callee: Graph
    op: Op
    kind: str
    repeat_count: int = 1


@dataclass(slots=True)
class CallTree:
    """Graphs (the main graph first, then in creation order) and call sites (graph by graph in the
    same order, each graph's in op order)."""

    nodes: list[CallTreeNode]
    edges: list[CallTreeEdge]

    def node(self, graph: Graph) -> CallTreeNode:
        for node in self.nodes:
            if node.graph is graph:
                return node
        raise KeyError(f"graph {graph.label!r} is not in this call tree")

    def to_networkx(self):
        """A networkx MultiDiGraph keyed by Graph objects; node and edge attributes mirror the records."""
        import networkx

        result = networkx.MultiDiGraph()
        for node in self.nodes:
            result.add_node(node.graph, label=node.label, op_count=node.op_count,
                            runs_per_session_run=node.runs_per_session_run,
                            through_branch=node.through_branch, ipus=node.ipus)
        for edge in self.edges:
            result.add_edge(edge.caller, edge.callee, op=edge.op, kind=edge.kind,
                            repeat_count=edge.repeat_count)
        return result


def call_tree(ir: Ir) -> CallTree:
    """The call tree of ``ir`` (see the module docstring)."""
    edges = [CallTreeEdge(graph, binding.graph, op, binding.label,
                          op.attrs["repeat_count"] if binding.kind == "repeat" else 1)
             for graph in ir.graphs for op in graph.ops for binding in call_bindings(op)]
    incoming: dict[Graph, list[CallTreeEdge]] = {graph: [] for graph in ir.graphs}
    for edge in edges:
        incoming[edge.callee].append(edge)
    runs: dict[Graph, tuple[int, bool]] = {ir.main_graph: (1, False)}
    active: set[Graph] = set()

    def runs_of(graph: Graph) -> tuple[int, bool]:
        if graph in runs:
            return runs[graph]
        if graph in active:
            raise ValueError(f"graph {graph.label!r} calls itself directly or indirectly; the call tree "
                             "must not have cycles")
        active.add(graph)
        total, branch = 0, False
        for edge in incoming[graph]:
            caller_runs, caller_branch = runs_of(edge.caller)
            total += caller_runs * edge.repeat_count
            branch |= caller_runs > 0 and (caller_branch or edge.kind.startswith("conditional"))
        active.discard(graph)
        runs[graph] = (total, branch)
        return runs[graph]

    outgoing: dict[Graph, list[Graph]] = {graph: [] for graph in ir.graphs}
    for edge in edges:
        outgoing[edge.caller].append(edge.callee)
    placed: dict[Graph, frozenset[int]] = {}

    def ipus_of(graph: Graph) -> frozenset[int]:
        """The IPUs of the graph's own ops (call sites aside) and of every graph it calls."""
        if graph not in placed:
            placed[graph] = frozenset({op.ipu for op in graph.ops if not call_bindings(op)}).union(
                *(ipus_of(callee) for callee in outgoing[graph]))
        return placed[graph]

    counted = [runs_of(graph) for graph in ir.graphs]  # refuses a cycle before ipus_of would follow it
    nodes = [CallTreeNode(graph, len(graph.ops), *runs, tuple(sorted(ipus_of(graph))))
             for graph, runs in zip(ir.graphs, counted)]
    return CallTree(nodes, edges)
