"""Which tensors share memory, and which a graph writes in place.

Two kinds of sharing: declared aliases (an in-place op's output *is* its input) and NumPy views
(an out-of-place reshape or transpose may hand back a view; the runtime copies when that matters).
"""
from __future__ import annotations

from dataclasses import dataclass

from workbench.ir import Constant, Graph, Op, Tensor, Variable
from workbench.ops.call_binding import call_bindings
from workbench.ops.registry import REGISTRY


def declared_root(tensor: Tensor) -> Tensor:
    """Follow in-place aliases back to the tensor whose memory ``tensor`` is."""
    while tensor.producer is not None:
        op = tensor.producer
        index = op.outputs.index(tensor)
        if index not in op.aliases:
            break
        tensor = op.inputs[op.aliases[index]]
    return tensor


def is_view_op(op: Op) -> bool:
    definition = REGISTRY.get(op.type)
    return definition is not None and definition.view


def memory_root(tensor: Tensor) -> Tensor:
    """Like ``declared_root`` but also through out-of-place ops that may return NumPy views."""
    while tensor.producer is not None:
        op = tensor.producer
        index = op.outputs.index(tensor)
        if index in op.aliases:
            tensor = op.inputs[op.aliases[index]]
        elif is_view_op(op):
            tensor = op.inputs[0]
        else:
            break
    return tensor


def modified_roots(graph: Graph) -> set[Tensor]:
    """Tensors of ``graph`` whose memory some op of the graph writes in place."""
    return {declared_root(op.inputs[i]) for op in graph.ops for i in op.modified}


@dataclass(frozen=True, slots=True)
class GraphEffects:
    """``modified_inputs``: graph-input indices written in place. ``aliased_outputs``: output
    indices whose memory may be an input's or a constant's. ``copying_views``: view ops that must
    copy because the memory they would share is written in place. ``written_roots``: tensors whose
    memory some op writes in place."""

    modified_inputs: frozenset[int]
    aliased_outputs: tuple[int, ...]
    copying_views: frozenset[Op]
    written_roots: frozenset[Tensor]


def graph_effects(graph: Graph) -> GraphEffects:
    roots = modified_roots(graph)
    inputs = {t: i for i, t in enumerate(graph.inputs)}
    modified_inputs = frozenset(inputs[t] for t in roots if t in inputs)
    aliased_outputs = tuple(i for i, t in enumerate(graph.outputs)
                            if isinstance(memory_root(t), Constant) or memory_root(t) in inputs
                            or isinstance(memory_root(t), Variable))
    copying = frozenset(op for op in graph.ops if is_view_op(op) and (
        declared_root(op.inputs[0]) in roots or op.outputs[0] in roots))
    return GraphEffects(modified_inputs, aliased_outputs, copying, frozenset(roots))


def modifies_constant(op: Op) -> Tensor | None:
    """The constant ``op`` would write in place, if any. A call passing a constant by reference writes
    it only if the called graph writes the input it binds (as popxl infers the modified regions)."""
    for index in op.modified:
        root = declared_root(op.inputs[index])
        if isinstance(root, Constant) and _writes_input(op, index):
            return root
    return None


def _writes_input(op: Op, index: int) -> bool:
    for binding in call_bindings(op):
        if index in binding.positions:
            return binding.order[index - binding.first] in graph_effects(binding.graph).modified_inputs
    return True
