"""PopART's op-by-op rewiring on op views (``cloneIntoGraph``, ``connectInTensor``, ``disconnectAllInputs``,
``createAndConnectOutTensor``, ``setup``), as passes written for PopART move ops between graphs. Each call is
one edit of ``workbench.ir.op_edits`` on the op the view shows."""
from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.ir import TensorSpec, op_edits
from workbench.ir.op import Op as WorkbenchOp
from workbench.ops.control_flow import returned_ipu
from workbench.ops.placement import copy_destination
from workbench.ops.registry import REGISTRY

if TYPE_CHECKING:
    from .graph_view import Graph
    from .op_view import Op


def tensor_name(graph, tensor_id: str) -> str:
    """The name within ``graph`` of a tensor id (``graph_name/name``, or just ``name``)."""
    prefix = f"{graph.name}/" if graph.name else ""
    return tensor_id[len(prefix):] if prefix and tensor_id.startswith(prefix) else tensor_id


def output_spec(op: WorkbenchOp, index: int) -> TensorSpec:
    """What output ``index`` of ``op`` is, by its registry entry's rule or, for ops calling a graph, by what
    that graph returns."""
    definition = REGISTRY.get(op.type)
    if definition is None:
        raise ValueError(f"op {op.name} has the unknown type {op.type!r}: its outputs cannot be inferred")
    if definition.call_site:
        returned = op.called_graphs[0].outputs
        if index >= len(returned):
            raise IndexError(f"op {op.name} ({op.type}) calls graph {op.called_graphs[0].label!r}, which returns "
                             f"{len(returned)} outputs; there is no output {index}")
        return returned[index].spec
    specs = definition.infer([t.spec for t in op.inputs], op.attrs)
    if index >= len(specs):
        raise IndexError(f"op {op.name} ({op.type}) has {len(specs)} outputs with these inputs; there is no "
                         f"output {index}")
    return specs[index]


def output_place(op: WorkbenchOp, index: int) -> tuple[int, str]:
    """The IPU and tile set of output ``index``: where the op runs, except where a copy sends it (IPU copies,
    IO tile copies) and where a call returns it (``ops.control_flow.returned_ipu``)."""
    destination = copy_destination(op)
    if destination is not None:
        return destination
    definition = REGISTRY.get(op.type)
    if definition is not None and definition.call_site:
        graph = op.called_graphs[0]
        spans = len({t.ipu for t in op.inputs}) > 1 and all(
            t.ipu == graph.inputs[i].ipu for t, i in zip(op.inputs, op.attrs.get("graph_inputs", ())))
        return returned_ipu(graph.outputs[index], spans, op.ipu), op.tile_set
    return op.ipu, op.tile_set


def place_unread_input(tensor, ipu: int) -> None:
    """A subgraph input that nothing reads yet goes to the IPU of its first reader: code written for PopART
    makes graph inputs before it places the ops that read them."""
    if tensor.ipu != ipu and not tensor.consumers and tensor.graph.is_input(tensor) and not tensor.graph.is_main:
        op_edits.place_input(tensor, ipu)


class OpRewiring:
    """The rewiring methods of ``_ir.Op`` (mixed into the op view)."""

    __slots__ = ()
    _op: WorkbenchOp
    _first_input: int

    def cloneIntoGraph(self, graph: "Graph") -> "Op":
        """A copy of this op in ``graph``, with nothing connected yet."""
        from .op_view import view_op
        return view_op(op_edits.clone_op(self._op, graph._graph))

    def connectInTensor(self, index: int, tensor_id: str) -> None:
        op = self._op
        tensor = op.graph.get_tensor(tensor_id)
        position = self._input_position(index)
        if position > len(op.inputs):
            raise IndexError(f"op {op.name} has {len(op.inputs)} inputs: input {index} can only be connected after "
                             f"inputs {self._first_input}..{index - 1}")
        definition = REGISTRY.get(op.type)
        if definition is not None and not definition.crosses_ipus:
            place_unread_input(tensor, op.ipu)
        op_edits.connect_input(op, position, tensor)

    def disconnectAllInputs(self) -> None:
        op_edits.disconnect_inputs(self._op)

    def disconnectAllOutputs(self) -> None:
        op_edits.disconnect_outputs(self._op)

    def createAndConnectOutTensor(self, index: int, tensor_id: str) -> None:
        """A new tensor ``tensor_id`` as output ``index``, of the shape and type the op gives it."""
        op = self._op
        ipu, tile_set = output_place(op, index)
        op_edits.add_output(op, index, tensor_name(op.graph, tensor_id), output_spec(op, index), ipu, tile_set)

    def connectOutTensor(self, index: int, tensor_id: str) -> None:
        """Make the existing tensor ``tensor_id``, which nothing produces, output ``index``."""
        op = self._op
        op_edits.connect_output(op, index, op.graph.get_tensor(tensor_id))

    def setup(self) -> None:
        """Check that the outputs are what the op makes of its inputs (PopART infers them here; the
        workbench inferred them when they were connected)."""
        op = self._op
        for index, tensor in enumerate(op.outputs):
            expected = output_spec(op, index)
            if (tensor.shape, tensor.dtype) != (expected.shape, expected.dtype):
                raise ValueError(f"op {op.name} ({op.type}): output {index} {tensor.id!r} is {tensor.spec}, but "
                                 f"the op's inputs make it {expected}; reconnect the output")

    def _input_position(self, index: int) -> int:
        """The position in the op's inputs of PopART input ``index``."""
        position = index - self._first_input
        if position < 0:
            raise IndexError(f"op {self._op.name}: its inputs start at index {self._first_input}, got {index}")
        return position
