"""decompose_sum: popxl's pass that turns each sum of more than two tensors (PopART's Sum, made through
``popart._internal.ir``) into zeros and one add per tensor, the tensors added in the order they can first
be ready, so that each can die as soon as it is added."""
from __future__ import annotations

from workbench.ir import Graph, Op, ipu
from workbench.ir.op_edits import connect_input, set_graph_output
from workbench.ops.creation import init
from workbench.ops.elementwise import add
from workbench.ops.elementwise_nary import SUM_OF_MANY
from workbench.transforms.graph_edits import remove_op, rename

__all__ = ["decompose_sum"]


def decompose_sum(graph: Graph) -> Graph:
    """Return ``graph``, with every sum of more than two tensors made of an init of zeros and adds.

    The sums that autodiff and popxl's ops make are adds of two tensors already; a sum of many comes from
    code that makes PopART's ops itself (``pb_graph.createConnectedOp_SumOp``)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"decompose_sum: expected a popxl.Graph, got {type(graph).__name__}")
    sums = [op for op in graph.ops if op.type == SUM_OF_MANY and len(op.inputs) > 2]
    if sums:
        graph.ir._check_buildable()
    for op in sums:
        _decompose(graph, op)
    return graph


def _decompose(graph: Graph, op: Op) -> None:
    (result,) = op.outputs
    order = {o: i for i, o in enumerate(graph.ops)}
    partials = sorted(op.inputs, key=lambda t: -1 if t.producer is None else order[t.producer])
    with graph, ipu(op.ipu):
        total = init(result.shape, result.dtype, result.name + "_init")
        for partial in partials:
            total = add(total, partial)
    for reader in list(result.consumers):
        for index, tensor in enumerate(reader.inputs):
            if tensor is result:
                connect_input(reader, index, total)
    for index, output in enumerate(graph.outputs):
        if output is result:
            set_graph_output(graph, index, total)
    name = result.name
    remove_op(op)
    rename(total, name)
