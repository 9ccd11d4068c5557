"""Gradient rules of call, repeat and conditional.

call: the callee's gradient graph is called with the gradients of the call's outputs and the
callee's activations, which the callee (and so the call op) returns as extra outputs.

repeat and conditional cannot gain outputs, so their gradients run the body again on a private copy:
a branch's gradient calls the copy of the branch that ran, then its gradient graph. A loop's
gradient first runs the loop again to record the carried state at the start of every iteration,
then a loop over the iterations in reverse calls the copy of the body on the recorded state and its
gradient graph, carrying the gradients of the carried state and summing those of the invariants.
Bodies that do I/O or write by-reference inputs cannot run twice and are refused.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from workbench.ir import Graph, Op, Tensor, constant, dtypes, graph_input, graph_output
from workbench.ops.call_binding import call_bindings

from . import control_flow
from .call_site import CallSiteInfo
from .creation import init
from .elementwise import add, sub
from .registry import apply


def _is_float(t: Tensor) -> bool:
    return t.dtype.is_floating_point


def _zeros(t: Tensor) -> Tensor:
    return init(t.shape, t.dtype)


def _call_gradient_graph(info, forward: Graph, output_grads: Sequence[Optional[Tensor]],
                         value_of: Callable[[Tensor], Tensor]) -> tuple[Tensor, ...]:
    """Call the gradient graph of ``forward``: gradients for its ``FwdGrad`` inputs (zeros where none
    flows), ``value_of(t)`` for its activations."""
    args = []
    for connection in info.expected_inputs:
        tensor = connection.fwd_tensor
        if connection.connection_type.value == "FwdGrad":
            parts = [g for out, g in zip(forward.outputs, output_grads) if out is tensor and g is not None]
            total = parts[0] if parts else _zeros(tensor)
            for part in parts[1:]:
                total = add(total, part)
            args.append(total)
        else:
            args.append(value_of(tensor))
    return control_flow.call(info.graph, *args)


def _input_grads(info, forward: Graph, grads: Sequence[Tensor], order: Sequence[int]) -> list[Optional[Tensor]]:
    """The gradient-graph outputs placed by call position: ``order[p]`` is the graph input at p."""
    result: list[Optional[Tensor]] = [None] * len(order)
    for connection, grad in zip(info.expected_outputs, grads):
        tensor = connection.fwd_tensor
        if tensor in forward.inputs:
            index = forward.inputs.index(tensor)
            if index in order:
                result[order.index(index)] = grad
    return result


# ----- call -----
def call_grad(op: Op, grads, fwd):
    graph = op.called_graphs[0]
    info = fwd.called_graph_grad(graph)
    site = CallSiteInfo(op)
    outputs = _call_gradient_graph(info, graph, grads, lambda t: fwd(site.graph_to_parent(t)))
    return _input_grads(info, graph, outputs, call_bindings(op)[0].order)


# ----- conditional -----
def conditional_grad(op: Op, grads, fwd):
    """A conditional over two gradient branches with the same outputs: the gradients of every float
    input of both branches, zeros for the branch that did not run."""
    branches = [(b.graph, b.order, b.parents, b.first) for b in call_bindings(op)]
    slots = [(b, p) for b, (_, _, parents, _) in enumerate(branches)
             for p, parent in enumerate(parents) if _is_float(parent)]
    outputs = [i for i, t in enumerate(op.outputs) if _is_float(t)]
    seeds = [grads[i] if grads[i] is not None else _zeros(op.outputs[i]) for i in outputs]
    backward = [_branch_gradient(op, fwd.recompute_grad(graph, op), b, order, branches, slots, outputs)
                for b, (graph, order, _, _) in enumerate(branches)]
    results = control_flow.conditional(
        fwd(op.inputs[0]), backward[0], backward[1],
        then_inputs=[*seeds, *(fwd(t) for t in branches[0][2])],
        else_inputs=[*seeds, *(fwd(t) for t in branches[1][2])])
    input_grads: list[Optional[Tensor]] = [None] * len(op.inputs)
    for (b, p), grad in zip(slots, results):
        input_grads[branches[b][3] + p] = grad
    return input_grads


def _branch_gradient(op: Op, info, taken: int, order, branches, slots, outputs) -> Graph:
    """The gradient branch for branch ``taken``: it runs the branch's copy forward, then its gradient."""
    copy = info.forward_graph
    graph = op.graph.ir.create_empty_graph(f"{op.called_graphs[taken].name}_grad_branch")
    with graph:
        seeds = [graph_input(op.outputs[i].shape, op.outputs[i].dtype, "Gradient___" + op.outputs[i].name)
                 for i in outputs]
        parents = branches[taken][2]
        values = {copy.inputs[order[p]]: graph_input(t.shape, t.dtype, t.name) for p, t in enumerate(parents)}
        results = control_flow.call(copy, inputs_dict=values)
        values.update(zip(copy.outputs, results))
        output_grads: list[Optional[Tensor]] = [None] * len(copy.outputs)
        for i, seed in zip(outputs, seeds):
            output_grads[i] = seed
        grads = _input_grads(info, copy, _call_gradient_graph(info, copy, output_grads, values.__getitem__),
                             order)
        for b, p in slots:
            parent = branches[b][2][p]
            grad = grads[p] if b == taken else None
            graph_output(grad if grad is not None else _zeros(parent))
    return graph


# ----- repeat -----
def repeat_grad(op: Op, grads, fwd):
    body, count = op.called_graphs[0], op.attrs["repeat_count"]
    order = call_bindings(op)[0].order
    parents = {graph_input: parent for parent, graph_input in zip(op.inputs, order)}
    carried = len(body.outputs)
    info = fwd.recompute_grad(body, op)
    record = _record_loop(body, carried, count)
    start = constant(0, dtypes.int32, name="iteration")
    recorded = control_flow.repeat(
        record, count, *(fwd(parents[i]) for i in range(carried)),
        *(init((count, *t.shape), t.dtype) for t in body.inputs[:carried]), start,
        *(fwd(parents[i]) for i in range(carried, len(body.inputs))))
    stacks = recorded[carried:2 * carried]
    float_carried = [j for j in range(carried) if _is_float(body.inputs[j])]
    float_invariants = [i for i in range(carried, len(body.inputs)) if _is_float(body.inputs[i])]
    backward = _reverse_loop(body, info, carried, count, float_carried, float_invariants)
    seeds = [grads[j] if grads[j] is not None else _zeros(op.outputs[j]) for j in float_carried]
    results = control_flow.repeat(
        backward, count, *seeds, *(_zeros(body.inputs[i]) for i in float_invariants), start, *stacks,
        *(fwd(parents[i]) for i in range(carried, len(body.inputs))))
    by_input = dict(zip(float_carried + float_invariants, results))
    return [by_input.get(index) for index in order]


def _record_loop(body: Graph, carried: int, count: int) -> Graph:
    """The body, also writing its carried inputs into row ``iteration`` of one stack each."""
    graph = body.ir.create_empty_graph(f"{body.name}_record")
    states = body.inputs[:carried]
    with graph:
        values = [graph_input(t.shape, t.dtype, t.name) for t in states]
        stacks = [graph_input((count, *t.shape), t.dtype, t.name + "_stack") for t in states]
        iteration = graph_input((), dtypes.int32, "iteration")
        invariants = [graph_input(t.shape, t.dtype, t.name) for t in body.inputs[carried:]]
        written = [apply("dynamic_update_", stack, iteration, apply("reshape", value, shape=(1, *value.shape)),
                         axes=(0,), sizes=(1,), no_overlap=True) for stack, value in zip(stacks, values)]
        results = control_flow.call(body, *values, *invariants)
        for tensor in [*results, *written, add(iteration, constant(1, dtypes.int32))]:
            graph_output(tensor)
    return graph


def _reverse_loop(body: Graph, info, carried: int, count: int, float_carried, float_invariants) -> Graph:
    """One step back through iteration ``count - 1 - iteration``: the body's copy runs on the recorded
    state, then its gradient graph."""
    copy = info.forward_graph
    graph = body.ir.create_empty_graph(f"{body.name}_grad_loop")
    with graph:
        carried_grads = [graph_input(body.inputs[j].shape, body.inputs[j].dtype, "Gradient___" + body.inputs[j].name)
                         for j in float_carried]
        sums = [graph_input(body.inputs[i].shape, body.inputs[i].dtype, "Gradient___" + body.inputs[i].name)
                for i in float_invariants]
        iteration = graph_input((), dtypes.int32, "iteration")
        stacks = [graph_input((count, *t.shape), t.dtype, t.name + "_stack") for t in body.inputs[:carried]]
        invariants = [graph_input(t.shape, t.dtype, t.name) for t in body.inputs[carried:]]
        step = sub(constant(count - 1, dtypes.int32), iteration)
        states = [apply("reshape", apply("dynamic_slice", stack, step, axes=(0,), sizes=(1,), no_overlap=True),
                        shape=t.shape) for stack, t in zip(stacks, body.inputs[:carried])]
        values = dict(zip(copy.inputs, [*states, *invariants]))
        values.update(zip(copy.outputs, control_flow.call(copy, *states, *invariants)))
        output_grads: list[Optional[Tensor]] = [None] * len(copy.outputs)
        for j, grad in zip(float_carried, carried_grads):
            output_grads[j] = grad
        outputs = _call_gradient_graph(info, copy, output_grads, values.__getitem__)
        grads = _input_grads(info, copy, outputs, tuple(range(len(copy.inputs))))
        for j in float_carried:
            graph_output(grads[j] if grads[j] is not None else _zeros(body.inputs[j]))
        for i, total in zip(float_invariants, sums):
            graph_output(add(total, grads[i]) if grads[i] is not None else total)
        graph_output(add(iteration, constant(1, dtypes.int32)))
    return graph
