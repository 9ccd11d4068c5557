"""Edits that autodiff makes to graphs, with an undo log so that a failed autodiff leaves the Ir as it was."""
from __future__ import annotations

from typing import Callable

from workbench.ir import Graph, Ir, Op, Tensor
from workbench.ops.registry import op_def


def fresh_name(graph: Graph, name: str) -> str:
    """``name``, or ``name_1``, ``name_2``... whichever is still free in ``graph``."""
    return graph._fresh_name(name)


def rename(tensor: Tensor, name: str) -> None:
    """Give a tensor a new (unique) name in its graph."""
    tensor.graph._rename_tensor(tensor, name)


def remove_op(op: Op) -> None:
    """Take an op whose outputs nobody reads out of its graph."""
    op.graph._remove_op(op)
    op.graph.ir.events.emit("op_removed", op)


def remove_unread(graph: Graph, tensor: Tensor) -> None:
    """Take an input or constant that nothing reads out of its graph."""
    graph._forget_tensor(tensor)


def call_sites(graph: Graph) -> list[Op]:
    """Every op of the Ir that calls ``graph``."""
    return [op for g in graph.ir.graphs for op in g.ops if graph in op.called_graphs]


class EditLog:
    """Records each change to existing graphs and undoes them all, last first, on ``rollback``."""

    def __init__(self, ir: Ir):
        self._ir = ir
        self._undo: list[Callable[[], None]] = []

    def created(self, graph: Graph) -> None:
        self._undo.append(lambda: self._ir._discard_graph(graph))

    def on_undo(self, undo: Callable[[], None]) -> None:
        self._undo.append(undo)

    def add_output(self, graph: Graph, tensor: Tensor, sites: list[Op]) -> None:
        """Make ``tensor`` an extra output of ``graph``; each call op in ``sites`` (the ops calling
        ``graph``) gains a matching output.

        Loops and branches cannot gain outputs (they would change what the loop carries, or differ
        between the branches), so a graph called by repeat or conditional is refused.
        """
        for op in sites:
            definition = op_def(op.type)
            if not definition.call_site or definition.repeats or definition.branches:
                raise NotImplementedError(
                    f"autodiff needs {tensor.id!r} as an extra output of graph {graph.label!r}, but {op.type} "
                    f"op {op.name} in graph {op.graph.label!r} calls it, and a {op.type} cannot gain "
                    f"outputs; call {graph.label!r} with ops.call, or differentiate the graph containing "
                    f"the {op.type}")
        graph._add_output(tensor)
        self._undo.append(graph._remove_last_output)
        for op in sites:
            self._add_call_output(op, tensor)

    def _add_call_output(self, op: Op, tensor: Tensor) -> None:
        parent = op.graph
        output = Tensor._create(parent, fresh_name(parent, tensor.name), tensor.spec, op.ipu, op.tile_set)
        output.producer = op
        parent._add_tensor(output)
        op.outputs = op.outputs + (output,)
        self._ir.events.emit("op_changed", op)

        def undo() -> None:
            op.outputs = op.outputs[:-1]
            parent._forget_tensor(output)
            self._ir.events.emit("op_changed", op)
        self._undo.append(undo)

    def rollback(self) -> None:
        while self._undo:
            self._undo.pop()()
