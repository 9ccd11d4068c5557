"""The weights fragments: main-graph ops that run when weights move, not when the program runs.

popxl loads a replica-sharded variable's shard in the weights-from-host fragment and stores it back in
the weights-to-host fragment, so the shard stays on chip between runs, as a variable would. Fragment
ops belong to the main graph but not to its op list or schedule; ``Session.weights_from_host`` and
``Session.weights_to_host`` run them. Their outputs are the Ir's persistent tensors.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from .op import Op
from .tensor import Tensor, TensorSpec

if TYPE_CHECKING:
    from .ir import Ir

WEIGHTS_FROM_HOST = "weights_from_host"
WEIGHTS_TO_HOST = "weights_to_host"
FRAGMENTS = (WEIGHTS_FROM_HOST, WEIGHTS_TO_HOST)


def add_fragment_op(ir: "Ir", fragment: str, op_type: str, inputs: Sequence[Tensor],
                    output_specs: Sequence[TensorSpec], attrs: dict,
                    output_names: Sequence[Optional[str]] = (), ipu: int = 0) -> Op:
    """Append an op to ``fragment`` of ``ir``'s main graph; its outputs are new main-graph tensors."""
    if fragment not in FRAGMENTS:
        raise ValueError(f"fragment must be one of {FRAGMENTS}, got {fragment!r}")
    graph = ir.main_graph
    graph._check_buildable()
    op = Op(type=op_type, name=graph._unique_op_name(op_type), graph=graph, inputs=tuple(inputs),
            attrs=dict(attrs), ipu=ipu)
    outputs = []
    for index, spec in enumerate(output_specs):
        name = output_names[index] if index < len(output_names) and output_names[index] else op_type
        tensor = Tensor._create(graph, graph._unique_name(name), spec, ipu)
        tensor.producer = op
        graph._add_tensor(tensor)
        outputs.append(tensor)
    op.outputs = tuple(outputs)
    ir._fragments[fragment].append(op)
    return op


def move_to_fragment(op: Op, fragment: str) -> None:
    """Move ``op``, a main-graph op, from the graph's op list to ``fragment``; its tensors stay in the graph."""
    if fragment not in FRAGMENTS:
        raise ValueError(f"fragment must be one of {FRAGMENTS}, got {fragment!r}")
    graph = op.graph
    if not graph.is_main:
        raise ValueError(f"op {op.name} belongs to subgraph {graph.label!r}; fragments hold main-graph ops only")
    graph._ops.remove(op)
    graph.ir._fragments[fragment].append(op)
