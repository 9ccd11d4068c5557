"""The kernels of call, repeat and conditional, and their registry entries.

A kernel binds each called graph once (``env.subgraph(graph)``: its compiled function, the inputs it
writes and the outputs that share memory) and copies values in and out as popxl's by-value semantics
require; the stepper applies the same bindings frame by frame.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from workbench.ir import Graph, Op, TensorSpec
from workbench.ops.call_binding import call_bindings

from .control_flow import branch_outputs
from .control_flow_grads import call_grad, conditional_grad, repeat_grad
from .registry import CALLED_GRAPHS, OpDef, register


@dataclass(frozen=True, slots=True)
class CalleeBinding:
    """How a call site hands values to one called graph: ``count`` of the op's inputs from ``first``,
    copied at ``copy_in`` positions on the way in and at ``copy_out`` (graph-output indices) on the
    way out, as the kernels below do (the stepper applies the same rules frame by frame)."""

    graph: Graph
    kind: str
    function: Callable[..., tuple]
    first: int
    count: int
    copy_in: tuple[int, ...]
    copy_out: tuple[int, ...]


def callee_bindings(op: Op, env) -> list[CalleeBinding]:
    """The binding of each graph ``op`` calls: one for call and repeat, then and else for conditional."""
    bindings = []
    for binding in call_bindings(op):
        compiled = env.subgraph(binding.graph)
        bindings.append(CalleeBinding(binding.graph, binding.kind, compiled.function, binding.first,
                                      len(binding.order),
                                      _copy_in(op, binding.order, compiled.modified_inputs, binding.first),
                                      tuple(compiled.aliased_outputs)))
    return bindings


def repeat_recopy(op: Op, binding: CalleeBinding) -> tuple[int, ...]:
    """Carried inputs of a repeat copied again after each iteration: a carried input written in place
    must not write through an output that aliases other memory."""
    carried = len(op.outputs)
    return tuple(p for p in binding.copy_in if p < carried and p in binding.copy_out)


def taken_branch(cond) -> int:
    """0 (then) when the conditional's single boolean is true, else 1 (else)."""
    return 0 if bool(cond.reshape(-1)[0]) else 1


def _adapt(function, count: int):
    """Present a subgraph function (which returns a tuple) with the kernel return convention."""
    if count == 1:
        return lambda *args: function(*args)[0]
    if count == 0:
        return lambda *args: (function(*args), None)[1]
    return function


def copy_at(values: list, positions: Iterable[int]) -> None:
    """Replace ``values[p]`` by a private copy at each position ``p``."""
    for position in positions:
        values[position] = values[position].copy()


def _copy_in(op: Op, order: Sequence[int], modified_inputs, offset: int = 0) -> tuple[int, ...]:
    """Positions (relative to ``offset`` in the op's inputs) whose subgraph input must be a private
    copy: by-value inputs the subgraph writes, and by-value inputs whose parent tensor is also
    passed by reference, so that the write through the reference does not show through them."""
    written = {op.inputs[i] for i in op.modified}
    return tuple(p for p, g in enumerate(order) if p + offset not in op.modified
                 and (g in modified_inputs or op.inputs[p + offset] in written))


def _call_kernel(op: Op, env) -> Any:
    (callee,) = callee_bindings(op, env)
    copy_in, copy_out, function = callee.copy_in, callee.copy_out, callee.function
    if copy_in or copy_out:
        inner = function

        def function(*args):
            values = list(args)
            copy_at(values, copy_in)
            outputs = list(inner(*values))
            copy_at(outputs, copy_out)
            return tuple(outputs)
    return _adapt(function, len(op.outputs))


def _repeat_kernel(op: Op, env) -> Any:
    (callee,) = callee_bindings(op, env)
    copy_in, copy_out = callee.copy_in, callee.copy_out
    body, count, carried = callee.function, op.attrs["repeat_count"], len(op.outputs)
    recopy = repeat_recopy(op, callee)
    tick = env.loop_tick(op)
    if tick is not None:
        counted_body = body

        def body(*values):
            outputs = counted_body(*values)
            tick()
            return outputs

    def loop(*args):
        values = list(args)
        copy_at(values, copy_in)
        for _ in range(count):
            values[:carried] = body(*values)
            copy_at(values, recopy)
        outputs = values[:carried]
        copy_at(outputs, copy_out)
        return tuple(outputs)
    return _adapt(loop, carried)


def _conditional_kernel(op: Op, env) -> Any:
    split = call_bindings(op)[1].first
    branches = [(b.function, b.copy_in, b.copy_out) for b in callee_bindings(op, env)]

    def select(cond, *args):
        taken = taken_branch(cond)
        function, copy_in, copy_out = branches[taken]
        values = list(args[: split - 1] if taken == 0 else args[split - 1:])
        copy_at(values, copy_in)
        outputs = list(function(*values))
        copy_at(outputs, copy_out)
        return tuple(outputs)
    return _adapt(select, len(op.outputs))


def _callee_outputs(specs, attrs) -> list[TensorSpec]:
    """A call or a repeat returns what its graph returns (a repeat: what the last iteration does)."""
    return [t.spec for t in attrs[CALLED_GRAPHS][0].outputs]


def _branch_outputs(specs, attrs) -> list[TensorSpec]:
    """A conditional returns what either branch returns; the two must agree."""
    return branch_outputs(*attrs[CALLED_GRAPHS])


register(OpDef("call", _callee_outputs, kernel=_call_kernel, grad=call_grad, call_site=True, popart_class="CallOp"))
register(OpDef("repeat", _callee_outputs, kernel=_repeat_kernel, grad=repeat_grad, call_site=True, repeats=True,
               popart_class="LoopOp"))
register(OpDef("conditional", _branch_outputs, kernel=_conditional_kernel, grad=conditional_grad, call_site=True,
               branches=True, popart_class="IfOp"))
