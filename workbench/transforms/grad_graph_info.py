"""What autodiff returns: the gradient graph and how its inputs and outputs relate to the forward graph."""
from __future__ import annotations

from enum import Enum
from typing import Dict, Sequence, Tuple

from workbench.ir import Graph, Tensor
from workbench.ops.call_site import CallSiteInfo


class ExpectedConnectionType(Enum):
    """``Fwd``: the gradient-graph input is a forward tensor (an activation); ``FwdGrad``: it is the
    gradient of a forward tensor."""

    Fwd = "Fwd"
    FwdGrad = "FwdGrad"


class ExpectedConnection:
    """One input or output of a gradient graph: a forward tensor, or the gradient of one."""

    __slots__ = ("_fwd_tensor", "_connection_type")
    _fwd_tensor: Tensor
    _connection_type: ExpectedConnectionType

    def __init__(self):
        raise TypeError("ExpectedConnection cannot be constructed directly; read it from a GradGraphInfo "
                        "(expected_inputs, expected_outputs)")

    @classmethod
    def _create(cls, fwd_tensor: Tensor, connection_type: ExpectedConnectionType) -> "ExpectedConnection":
        connection = object.__new__(cls)
        connection._fwd_tensor = fwd_tensor
        connection._connection_type = connection_type
        return connection

    @property
    def fwd_tensor(self) -> Tensor:
        return self._fwd_tensor

    @property
    def connection_type(self) -> ExpectedConnectionType:
        return self._connection_type

    def __repr__(self) -> str:
        return f"({self._connection_type}, {self._fwd_tensor})"


class GradGraphInfo:
    """The result of ``autodiff``: the gradient ``graph`` of ``forward_graph``, what each of its inputs
    must be fed (``expected_inputs``) and what each of its outputs is (``expected_outputs``)."""

    __slots__ = ("_graph", "_forward_graph", "_expected_inputs", "_expected_outputs")
    _graph: Graph
    _forward_graph: Graph
    _expected_inputs: tuple[ExpectedConnection, ...]
    _expected_outputs: tuple[ExpectedConnection, ...]

    def __init__(self):
        raise TypeError("GradGraphInfo cannot be constructed directly; popxl.transforms.autodiff(graph) "
                        "returns one")

    @classmethod
    def _create(cls, graph: Graph, forward_graph: Graph, expected_inputs: Sequence[ExpectedConnection],
                expected_outputs: Sequence[ExpectedConnection]) -> "GradGraphInfo":
        info = object.__new__(cls)
        info._graph = graph
        info._forward_graph = forward_graph
        info._expected_inputs = tuple(expected_inputs)
        info._expected_outputs = tuple(expected_outputs)
        return info

    @property
    def graph(self) -> Graph:
        """The gradient graph."""
        return self._graph

    @property
    def forward_graph(self) -> Graph:
        """The graph that was differentiated."""
        return self._forward_graph

    @property
    def expected_inputs(self) -> Tuple[ExpectedConnection, ...]:
        """One entry per gradient-graph input: first the provided gradients (``FwdGrad``), then the
        forward tensors it reads (``Fwd``)."""
        return self._expected_inputs

    @property
    def expected_outputs(self) -> Tuple[ExpectedConnection, ...]:
        """One ``FwdGrad`` entry per gradient-graph output, in the order of ``grads_required``."""
        return self._expected_outputs

    @property
    def inputs(self) -> Tuple[Tensor, ...]:
        """The forward tensors of ``expected_inputs``."""
        return tuple(c.fwd_tensor for c in self._expected_inputs)

    @property
    def outputs(self) -> Tuple[Tensor, ...]:
        """The forward tensors whose gradients the gradient graph returns."""
        return tuple(c.fwd_tensor for c in self._expected_outputs)

    def inputs_dict(self, fwd_call_info: CallSiteInfo) -> Dict[Tensor, Tensor]:
        """Gradient-graph input -> parent tensor at the forward call site, for the activations (``Fwd``
        inputs); the gradients themselves are passed positionally."""
        self._check_called("fwd_call_info", fwd_call_info, self._forward_graph)
        return {self._graph.inputs[index]: fwd_call_info.graph_to_parent(connection.fwd_tensor)
                for index, connection in enumerate(self._expected_inputs)
                if connection.connection_type is ExpectedConnectionType.Fwd}

    def fwd_graph_ins_to_grad_parent_outs(self, grad_call_info: CallSiteInfo) -> Dict[Tensor, Tensor]:
        """Forward-graph tensor -> the parent tensor holding its gradient after the gradient call."""
        self._check_called("grad_call_info", grad_call_info, self._graph)
        return {connection.fwd_tensor: grad_call_info.graph_to_parent(self._graph.outputs[index])
                for index, connection in enumerate(self._expected_outputs)}

    def fwd_parent_ins_to_grad_parent_outs(self, fwd_call_info: CallSiteInfo,
                                           grad_call_info: CallSiteInfo) -> Dict[Tensor, Tensor]:
        """Parent tensor fed to the forward call (a weight, say) -> the parent tensor holding its
        gradient after the gradient call."""
        self._check_called("fwd_call_info", fwd_call_info, self._forward_graph)
        return {fwd_call_info.graph_to_parent(fwd_tensor): grad
                for fwd_tensor, grad in self.fwd_graph_ins_to_grad_parent_outs(grad_call_info).items()}

    @staticmethod
    def _check_called(name: str, call_info: CallSiteInfo, graph: Graph) -> None:
        if not isinstance(call_info, CallSiteInfo):
            raise TypeError(f"{name} must be a CallSiteInfo (from ops.call_with_info), got "
                            f"{type(call_info).__name__}")
        if call_info.called_graph is not graph:
            raise TypeError(f"{name} calls graph {call_info.called_graph.label!r}, not {graph.label!r}")

    def __repr__(self) -> str:
        lines = ["GradGraphInfo[", f"  graph={self._graph.id}", "  expected_inputs=["]
        lines += [f"    {c!r}" for c in self._expected_inputs]
        lines += ["  ]", "  expected_outputs=["]
        lines += [f"    {c!r}" for c in self._expected_outputs]
        lines += ["  ]", "]"]
        return "\n".join(lines)
