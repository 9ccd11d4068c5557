"""Copy a graph: same inputs, ops, constants and outputs, in a new graph of the same Ir."""
from __future__ import annotations

from contextlib import nullcontext

from workbench.ir import Graph, Op, Tensor, constant, graph_input, io_tiles, ipu
from workbench.ops.registry import create_op, op_types

# Ops with an effect beyond their outputs: running them again would repeat the effect.
SIDE_EFFECT_TYPES = op_types("effect")


def clone_graph(graph: Graph, name: str) -> Graph:
    """A new graph computing what ``graph`` computes; called graphs are shared, not copied."""
    copy = graph.ir.create_empty_graph(name)
    mapping: dict[Tensor, Tensor] = {}
    ops: dict[Op, Op] = {}
    with copy:
        for tensor in graph.inputs:
            with ipu(tensor.ipu):
                mapping[tensor] = graph_input(tensor.shape, tensor.dtype, tensor.name,
                                              by_ref=graph.is_by_ref_input(tensor),
                                              meta_shape=tensor.meta_shape)
        for tensor in graph.constants:
            with ipu(tensor.ipu):
                mapping[tensor] = constant(tensor.data, tensor.dtype, tensor.name)
        for op in graph.ops:
            with io_tiles() if op.tile_set == "io" else nullcontext():
                new = create_op(op.type, [mapping[t] for t in op.inputs], dict(op.attrs),
                                called_graphs=op.called_graphs, modified=op.modified, aliases=op.aliases,
                                output_names=[t.name for t in op.outputs], ipu=op.ipu,
                                output_ipus=[t.ipu for t in op.outputs],
                                spans_ipus=any(t.ipu != op.ipu for t in op.inputs))
            new.after = tuple(ops[o] for o in op.after)
            ops[op] = new
            mapping.update(zip(op.outputs, new.outputs))
        for tensor in graph.outputs:
            copy._add_output(mapping[tensor])
    graph.ir.events.emit("graph_built", copy)
    return copy


def side_effect(graph: Graph) -> str:
    """A description of the first op of ``graph`` (or of a graph it calls) whose effect would repeat if
    it ran again, or '' when running the graph twice is harmless."""
    seen: set[Graph] = set()

    def visit(g: Graph) -> str:
        seen.add(g)
        for op in g.ops:
            if op.type in SIDE_EFFECT_TYPES:
                return f"{op.type} op {op.name} in graph {g.label!r}"
            for index in op.modified:
                if g.is_by_ref_input(op.inputs[index]):
                    return (f"{op.type} op {op.name} in graph {g.label!r}, which writes the by-reference "
                            f"input {op.inputs[index].name!r}")
            for callee in op.called_graphs:
                found = "" if callee in seen else visit(callee)
                if found:
                    return found
        return ""
    return visit(graph)
