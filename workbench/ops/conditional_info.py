"""conditional_with_info and ConditionalSiteInfo: the call-site view of a conditional op.

The op's inputs are ``[cond, *then-branch inputs, *else-branch inputs]``; both branches share the
op's outputs, output i of either branch being output i of the op.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from workbench.ir import Graph, Op, Tensor
from workbench.ops.call_binding import CallBinding, call_bindings

from .call_site import CallSiteInfo
from .control_flow import TensorInputs, add_conditional

__all__ = ["conditional_with_info"]


class ConditionalSiteInfo(CallSiteInfo):
    """The parent-side view of one conditional op; index mappings take ``then_branch`` to say
    which branch they speak of."""

    def __init__(self, op: Op):
        if op.type != "conditional":
            raise TypeError(f"ConditionalSiteInfo describes conditional ops, not {op.type!r}")
        self._op = op

    @property
    def called_graph(self) -> tuple[Graph, Graph]:
        """``(then_branch, else_branch)``."""
        return self._op.called_graphs[0], self._op.called_graphs[1]

    def _branch(self, then_branch: bool) -> CallBinding:
        return call_bindings(self._op)[0 if then_branch else 1]

    def graph_to_parent_input_index(self, idx: int, then_branch: bool = True) -> int:
        binding = self._branch(then_branch)
        if idx not in binding.order:
            raise IndexError(f"Invalid graph input index {idx} of the {binding.kind} branch at this conditional")
        return binding.op_input_index(idx)

    def is_parent_index_in_then_branch(self, idx: int) -> bool:
        """Whether parent input ``idx`` feeds the then branch (False: the else branch)."""
        if not 1 <= idx < len(self._op.inputs):
            raise IndexError(f"Invalid parent graph input index {idx}: the conditional's branch inputs are "
                             f"1..{len(self._op.inputs) - 1} (0 is the condition)")
        return idx in self._branch(True).positions

    def parent_to_graph_input_index(self, idx: int) -> int:
        binding = self._branch(self.is_parent_index_in_then_branch(idx))
        return binding.order[idx - binding.first]

    def graph_to_parent_output_index(self, idx: int, then_branch: bool = True) -> int:
        """Output ``idx`` of either branch is output ``idx`` of the op."""
        return self._output_index(idx, then_branch, "graph")

    def parent_to_graph_output_index(self, idx: int, then_branch: bool = True) -> int:
        return self._output_index(idx, then_branch, "parent")

    def _output_index(self, idx: int, then_branch: bool, side: str) -> int:
        count = len(self._op.outputs)
        if not 0 <= idx < count:
            branch = "then" if then_branch else "else"
            raise IndexError(f"Invalid {side} output index {idx} of the conditional ({branch} branch): its outputs "
                             f"are 0..{count - 1}")
        return idx

    def graph_to_parent(self, graph_tensor: Tensor) -> Tensor:
        """The parent tensor connected to an input or output of either branch."""
        for graph, then_branch in zip(self.called_graph, (True, False)):
            if graph.is_input(graph_tensor):
                index = graph.inputs.index(graph_tensor)
                return self.parent_input(self.graph_to_parent_input_index(index, then_branch))
            if graph.is_output(graph_tensor):
                return self.parent_output(graph.outputs.index(graph_tensor))
        raise ValueError(f"Tensor {graph_tensor.name!r} is not an input or output of the called graph(s)")

    def parent_to_graph(self, parent_tensor: Tensor) -> Tensor:
        """The branch input fed by ``parent_tensor`` (its first use as a branch input)."""
        positions = [i for i, t in enumerate(self._op.inputs) if t is parent_tensor and i > 0]
        if not positions:
            raise ValueError(f"Tensor {parent_tensor.name!r} is not a parent graph input of the call site")
        then_branch = self.is_parent_index_in_then_branch(positions[0])
        graph = self.called_graph[0 if then_branch else 1]
        return graph.inputs[self.parent_to_graph_input_index(positions[0])]

    def set_parent_input_modified(self, parent_tensor: Tensor, infer_modified_regions: bool = True) -> None:
        """Declare that the taken branch writes ``parent_tensor`` in place, so the write is seen
        in the parent after the conditional."""
        if parent_tensor not in self._op.inputs[1:]:
            raise ValueError(f"{parent_tensor.id!r} is not a branch input of this conditional")
        self._op.graph.ir._check_buildable()
        positions = [i for i, t in enumerate(self._op.inputs) if t is parent_tensor and i > 0]
        self._op.modified = tuple(sorted(set(self._op.modified) | set(positions)))
        self._op.graph.ir.events.emit("op_changed", self._op)

    def __repr__(self) -> str:
        then_graph, else_graph = self.called_graph
        return f"ConditionalSiteInfo[conditional of {then_graph.label!r} / {else_graph.label!r}]"


def conditional_with_info(cond: Tensor, then_branch: Graph, else_branch: Graph,
                          then_inputs: Optional[Iterable[TensorInputs]] = None,
                          else_inputs: Optional[Iterable[TensorInputs]] = None,
                          then_inputs_dict: Optional[Mapping[Tensor, Any]] = None,
                          else_inputs_dict: Optional[Mapping[Tensor, Any]] = None,
                          check_inputs: bool = True) -> ConditionalSiteInfo:
    """Like ``conditional``, returning the call site's information instead of its outputs."""
    return ConditionalSiteInfo(add_conditional(cond, then_branch, else_branch, then_inputs, else_inputs,
                                               then_inputs_dict, else_inputs_dict, check_inputs))
