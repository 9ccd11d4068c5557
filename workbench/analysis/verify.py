"""Checks that an Ir is well formed; a Session runs them before compiling."""
from __future__ import annotations

from workbench.ir import Graph, Ir, Op
from workbench.ops.call_binding import call_bindings
from workbench.ops.registry import REGISTRY

from .aliasing import modifies_constant
from .schedule import ScheduleError, schedule


class InvalidIrError(ValueError):
    """The Ir cannot be compiled; the message names the op and tensor at fault."""


def verify(ir: Ir) -> dict[Graph, list[Op]]:
    """Raise InvalidIrError for the first problem found: call cycles, unconnected or mismatched
    call-site inputs, reads of tensors nothing produces, unknown op types, writes to constants, or
    ordering constraints that form a cycle. Returns the schedule of every graph."""
    _check_call_cycles(ir)
    schedules = {}
    for graph in ir.graphs:
        for op in graph.ops:
            _check_op(op)
        try:
            schedules[graph] = schedule(graph)
        except ScheduleError as error:
            raise InvalidIrError(str(error)) from None
    return schedules


def _check_call_cycles(ir: Ir) -> None:
    state: dict[Graph, str] = {}

    def visit(graph: Graph, path: list[Graph]) -> None:
        state[graph] = "active"
        for op in graph.ops:
            for callee in op.called_graphs:
                if state.get(callee) == "active":
                    loop = " -> ".join(g.label for g in [*path, graph, callee])
                    raise InvalidIrError(f"op {op.name} ({op.type} in graph {graph.label!r}) closes a cycle "
                                         f"of calls ({loop}); a graph cannot call itself directly or "
                                         "indirectly")
                if callee not in state:
                    visit(callee, [*path, graph])
        state[graph] = "done"

    for graph in ir.graphs:
        if graph not in state:
            visit(graph, [])


def _check_op(op: Op) -> None:
    for tensor in op.inputs:
        if tensor.graph is not op.graph:
            raise InvalidIrError(f"op {op.name} in graph {op.graph.label!r} reads tensor {tensor.id!r} of "
                                 f"graph {tensor.graph.label!r}")
        if tensor.producer is None and tensor.kind == "intermediate":
            raise InvalidIrError(f"op {op.name} in graph {op.graph.label!r} reads tensor {tensor.id!r}, which no "
                                 "op produces (its producer was disconnected); connect it to an op or read "
                                 "another tensor")
    constant = modifies_constant(op)
    if constant is not None:
        raise InvalidIrError(f"op {op.name} ({op.type}) writes constant {constant.id!r} in place; use a "
                             "variable (popxl.variable) for values that change")
    bindings = call_bindings(op)
    for binding in bindings:
        _check_call_site(op, binding.graph, binding.parents, binding.order)
    if not bindings and op.type not in REGISTRY:
        raise InvalidIrError(f"op {op.name} has the unknown type {op.type!r}")


def _check_call_site(op: Op, callee: Graph, parents, order) -> None:
    connected = set(order)
    for index, graph_input in enumerate(callee.inputs):
        if index not in connected:
            raise InvalidIrError(f"op {op.name} ({op.type} of {callee.label!r}) leaves graph input "
                                 f"{graph_input.name!r} ({graph_input.spec}) unconnected")
    for parent, index in zip(parents, order):
        if index >= len(callee.inputs):
            raise InvalidIrError(f"op {op.name} feeds input {index} of {callee.label!r}, which has only "
                                 f"{len(callee.inputs)} inputs")
        expected = callee.inputs[index]
        if parent.shape != expected.shape or parent.dtype is not expected.dtype:
            raise InvalidIrError(f"op {op.name} ({op.type} of {callee.label!r}) passes {parent.id!r} "
                                 f"({parent.spec}) to graph input {expected.name!r}, which expects "
                                 f"{expected.spec}")
    if [t.spec for t in op.outputs] != [t.spec for t in callee.outputs]:
        raise InvalidIrError(f"op {op.name} ({op.type} of {callee.label!r}) has outputs "
                             f"{[str(t.spec) for t in op.outputs]} but the graph returns "
                             f"{[str(t.spec) for t in callee.outputs]}")
