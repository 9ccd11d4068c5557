"""Lowering rules of the ops with subgraphs: ai.graphcore Call (a popxl call), If (a conditional) and
Loop (a repeat, when the trip count is a constant and the body never stops the loop early)."""
from __future__ import annotations

import numpy as np

from workbench import ops
from workbench.ir import dtypes as wdtypes

from .. import dtypes
from ..shapes import GRAPHCORE
from .table import LoweringError, NodeContext, lowers


@lowers("Call", 1, domain=GRAPHCORE)
def _call(ctx: NodeContext):
    inputs = ctx.inputs()
    graph, outer = ctx.subgraph(ctx.attrs["callee"], [(t.shape, t.dtype) for t in inputs])
    return list(ops.call(graph, *inputs, *outer))


@lowers("If", 1, 11)
def _if(ctx: NodeContext):
    then_graph, then_outer = ctx.subgraph(ctx.attrs["then_branch"])
    else_graph, else_outer = ctx.subgraph(ctx.attrs["else_branch"])
    cond = ctx.input(0)
    if cond.shape != ():
        cond = ops.reshape(cond, ())
    if cond.dtype != wdtypes.bool_:  # PopART, as Poplar's If, takes any non-zero scalar for true
        cond = ops.cast(cond, wdtypes.bool_)
    return list(ops.conditional(cond, then_graph, else_graph, then_inputs=then_outer, else_inputs=else_outer))


def _stops_early(body) -> bool:
    """Whether the body's condition output can become false: it is not its condition input passed on."""
    cond_in, cond_out = body.input[1].name, body.output[0].name
    if cond_out == cond_in:
        return False
    for node in body.node:
        if cond_out in node.output:
            return not (node.op_type == "Identity" and node.input[0] == cond_in)
    return True


@lowers("Loop", 1, 11)
def _loop(ctx: NodeContext):
    body = ctx.attrs["body"]
    if not ctx.has(0):
        raise LoweringError(f"{ctx.label}: a Loop needs a trip count (input M) known at compile time")
    trips = int(ctx.value(0).reshape(-1)[0])
    if ctx.has(1) and not bool(ctx.value(1).reshape(-1)[0]):
        raise LoweringError(f"{ctx.label}: a Loop whose condition starts false is not supported")
    if _stops_early(body):
        raise LoweringError(f"{ctx.label}: a Loop whose body computes its condition (an early exit) is not "
                            "supported; only a fixed trip count is")
    carried = [ctx.input(i) for i in range(2, len(ctx.node.input))]
    if len(body.output) - 1 > len(carried):
        raise LoweringError(f"{ctx.label}: Loop scan outputs are not supported")
    counter_type = dtypes.workbench_dtype(body.input[0].type.tensor_type.elem_type or 7)
    explicit = [((), counter_type), ((), wdtypes.bool_)] + [(t.shape, t.dtype) for t in carried]
    graph, outer = ctx.subgraph(body, explicit, loop=True)
    if trips <= 0:
        return carried
    from workbench.ir import constant

    start = constant(np.zeros((), counter_type.as_numpy()), counter_type)
    keep_going = constant(np.ones((), np.bool_), wdtypes.bool_)
    outputs = ops.repeat(graph, trips, start, keep_going, *carried, *outer)
    return list(outputs[2:])
