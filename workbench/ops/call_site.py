"""CallSiteInfo: how a call, repeat or conditional op connects parent tensors to a subgraph."""
from __future__ import annotations

from workbench.ir import Graph, Op, Tensor
from workbench.ops.call_binding import CallBinding, call_bindings


class CallSiteInfo:
    """The parent-side view of one call site (``ops.call_with_info`` / ``ops.repeat_with_info``)."""

    def __init__(self, op: Op):
        if op.type not in ("call", "repeat"):
            raise TypeError(f"CallSiteInfo describes call and repeat ops, not {op.type!r}")
        self._op = op

    @property
    def op(self) -> Op:
        return self._op

    @property
    def called_graph(self) -> Graph:
        return self._op.called_graphs[0]

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return self._op.inputs

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return self._op.outputs

    def parent_input(self, index: int) -> Tensor:
        return self._op.inputs[index]

    def parent_output(self, index: int) -> Tensor:
        return self._op.outputs[index]

    @property
    def _binding(self) -> CallBinding:
        return call_bindings(self._op)[0]

    def graph_to_parent_input_index(self, index: int) -> int:
        return self._binding.op_input_index(index)

    def parent_to_graph_input_index(self, index: int) -> int:
        return self._binding.order[index]

    def graph_to_parent_output_index(self, index: int) -> int:
        return index

    def parent_to_graph_output_index(self, index: int) -> int:
        return index

    def graph_to_parent(self, graph_tensor: Tensor) -> Tensor:
        """The parent tensor connected to a graph input or output of the called graph."""
        graph = self.called_graph
        if graph.is_input(graph_tensor):
            return self.parent_input(self.graph_to_parent_input_index(graph.inputs.index(graph_tensor)))
        if graph.is_output(graph_tensor):
            return self.parent_output(graph.outputs.index(graph_tensor))
        raise ValueError(f"{graph_tensor.id!r} is neither an input nor an output of {graph.label!r}")

    def parent_to_graph(self, parent_tensor: Tensor) -> Tensor:
        """The graph input fed by ``parent_tensor`` (its first use) or graph output that made it."""
        if parent_tensor in self._op.inputs:
            position = self._op.inputs.index(parent_tensor)
            return self.called_graph.inputs[self.parent_to_graph_input_index(position)]
        if parent_tensor in self._op.outputs:
            return self.called_graph.outputs[self._op.outputs.index(parent_tensor)]
        raise ValueError(f"{parent_tensor.id!r} is not an input or output of this call site")

    def set_parent_input_modified(self, parent_tensor: Tensor, infer_modified_regions: bool = False) -> None:
        """Declare that the call writes ``parent_tensor`` in place: the subgraph works on the parent's
        tensor itself instead of a copy, so its in-place updates stay visible after the call."""
        if parent_tensor not in self._op.inputs:
            raise ValueError(f"{parent_tensor.id!r} is not an input of this call site")
        self._op.graph.ir._check_buildable()
        positions = [i for i, t in enumerate(self._op.inputs) if t is parent_tensor]
        self._op.modified = tuple(sorted(set(self._op.modified) | set(positions)))
        self._op.graph.ir.events.emit("op_changed", self._op)

    def __repr__(self) -> str:
        return f"CallSiteInfo[{self._op.type} of {self.called_graph.label!r}]"
