"""Calling subgraphs: call, repeat and conditional, with popxl's binding and copy semantics.

Inputs are passed by value: a subgraph that writes one of its inputs in place works on a copy,
unless that input is by reference (``TensorByRef``, ``graph_input(by_ref=True)``) or the call site
said ``set_parent_input_modified``. The runtime supplies ``env.subgraph(graph)`` with the compiled
function and which inputs it writes and which outputs share memory with its inputs or constants.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from workbench.ir import Graph, Op, Tensor, constant, dtypes, get_current_graph

from .call_site import CallSiteInfo
from .registry import OpDef, register

__all__ = ["call", "call_with_info", "repeat", "repeat_with_info", "conditional"]

TensorInputs = Union[Tensor, Iterable[Tensor], Any]


def _flatten(inputs: Sequence[TensorInputs]) -> list:
    flat: list = []
    for item in inputs:
        if isinstance(item, (list, tuple)):
            flat.extend(item)
        else:
            flat.append(item)
    return flat


def _coerce(value: Any, target: Tensor, what: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    try:
        return constant(value, dtype=target.dtype)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{what}: cannot pass {value!r} to graph input {target.name!r} "
                        f"({target.spec}): {error}") from None


def bind_inputs(op_type: str, graph: Graph, inputs: Sequence[TensorInputs],
                inputs_dict: Optional[Mapping[Tensor, Any]], check_inputs: bool = True
                ) -> tuple[list[Tensor], tuple[int, ...]]:
    """Parent tensors for the graph's inputs and the graph-input index each one feeds."""
    flat = _flatten(inputs)
    if len(flat) > len(graph.inputs):
        raise ValueError(f"{op_type}: {len(flat)} inputs given but graph {graph.label!r} has only "
                         f"{len(graph.inputs)}")
    bound = {i: _coerce(v, graph.inputs[i], op_type) for i, v in enumerate(flat)}
    for graph_tensor, parent in (inputs_dict or {}).items():
        if not isinstance(graph_tensor, Tensor) or graph_tensor not in graph._input_set:
            raise ValueError(f"{op_type}: inputs_dict key {graph_tensor!r} is not an input of graph "
                             f"{graph.label!r}")
        index = graph.inputs.index(graph_tensor)
        if index in bound:
            raise ValueError(f"{op_type}: graph input {graph_tensor.name!r} is given twice (positionally "
                             "and in inputs_dict)")
        bound[index] = _coerce(parent, graph_tensor, op_type)
    if check_inputs:
        missing = [t for i, t in enumerate(graph.inputs) if i not in bound]
        if missing:
            table = "\n".join(f"  {t.name}: {t.spec}" for t in missing)
            raise ValueError(f"{op_type}: graph {graph.label!r} needs inputs that were not given:\n{table}")
        for index, parent in bound.items():
            expected = graph.inputs[index]
            if parent.shape != expected.shape or parent.dtype is not expected.dtype:
                raise ValueError(f"{op_type}: graph input {expected.name!r} of {graph.label!r} expects "
                                 f"{expected.spec}, but {parent.id!r} is {parent.spec}")
    order = tuple(sorted(bound))
    return [bound[i] for i in order], order


def _by_ref_positions(graph: Graph, order: Sequence[int]) -> tuple[int, ...]:
    return tuple(p for p, index in enumerate(order) if graph.inputs[index] in graph._by_ref_inputs)


def _add_call(op_type: str, graph: Graph, parents: list[Tensor], order: tuple[int, ...],
              output_specs, output_names, attrs: dict) -> Op:
    parent_graph = get_current_graph()
    if graph is parent_graph:
        raise ValueError(f"{op_type}: graph {graph.label!r} cannot call itself")
    # A callee taking inputs on several IPUs gets each parent tensor on its own IPU (no copy) and
    # returns each output on the IPU that produced it.
    placed = all(p.ipu == graph.inputs[i].ipu for p, i in zip(parents, order))
    spans = placed and len({p.ipu for p in parents}) > 1
    op = parent_graph._add_op(op_type, parents, output_specs,
                              attrs={"graph_inputs": order, **attrs}, called_graphs=(graph,),
                              modified=_by_ref_positions(graph, order), output_names=output_names,
                              crosses_ipus=spans)
    if spans:
        for outer, inner in zip(op.outputs, graph.outputs):
            outer._ipu = inner.ipu
    return op


def call_with_info(graph: Graph, *inputs: TensorInputs, inputs_dict: Optional[Mapping[Tensor, Any]] = None,
                   check_inputs: bool = True) -> CallSiteInfo:
    """Call ``graph`` once and return the call site's information."""
    parents, order = bind_inputs("call", graph, inputs, inputs_dict, check_inputs)
    op = _add_call("call", graph, parents, order, [t.spec for t in graph.outputs],
                   [t.name for t in graph.outputs], {})
    return CallSiteInfo(op)


def call(graph: Graph, *inputs: TensorInputs,
         inputs_dict: Optional[Mapping[Tensor, Any]] = None) -> tuple[Tensor, ...]:
    """Call ``graph`` with ``inputs`` (in graph-input order) and ``inputs_dict`` (graph input to parent
    tensor); returns the parent tensors of the graph's outputs."""
    return call_with_info(graph, *inputs, inputs_dict=inputs_dict).outputs


def repeat_with_info(graph: Graph, repeat_count: int, *inputs: TensorInputs,
                     inputs_dict: Optional[Mapping[Tensor, Any]] = None,
                     check_inputs: bool = True) -> CallSiteInfo:
    """Run ``graph`` ``repeat_count`` times; output i of one iteration is input i of the next."""
    if not isinstance(repeat_count, int) or isinstance(repeat_count, bool) or repeat_count <= 0:
        raise ValueError(f"repeat: repeat_count must be an int greater than 0, got {repeat_count!r}")
    if len(graph.inputs) < len(graph.outputs):
        raise ValueError(f"repeat: graph {graph.label!r} has {len(graph.outputs)} outputs but only "
                         f"{len(graph.inputs)} inputs; each output must feed an input of the next "
                         "iteration")
    for index, (out, inp) in enumerate(zip(graph.outputs, graph.inputs)):
        if out.shape != inp.shape or out.dtype is not inp.dtype:
            raise ValueError(f"repeat: output {index} of {graph.label!r} ({out.spec}) must match input "
                             f"{index} ({inp.name}: {inp.spec}) to be carried to the next iteration")
    parents, order = bind_inputs("repeat", graph, inputs, inputs_dict, check_inputs)
    op = _add_call("repeat", graph, parents, order, [t.spec for t in graph.outputs],
                   [t.name for t in graph.outputs], {"repeat_count": repeat_count})
    return CallSiteInfo(op)


def repeat(graph: Graph, repeat_count: int, *inputs: TensorInputs,
           inputs_dict: Optional[Mapping[Tensor, Any]] = None) -> tuple[Tensor, ...]:
    """Run ``graph`` ``repeat_count`` (> 0) times with loop-carried inputs; returns the last outputs."""
    return repeat_with_info(graph, repeat_count, *inputs, inputs_dict=inputs_dict).outputs


def conditional(cond: Tensor, then_branch: Graph, else_branch: Graph,
                then_inputs: Optional[Iterable[TensorInputs]] = None,
                else_inputs: Optional[Iterable[TensorInputs]] = None,
                then_inputs_dict: Optional[Mapping[Tensor, Any]] = None,
                else_inputs_dict: Optional[Mapping[Tensor, Any]] = None) -> tuple[Tensor, ...]:
    """Run ``then_branch`` when the single boolean ``cond`` is true at run time, else ``else_branch``."""
    return add_conditional(cond, then_branch, else_branch, then_inputs, else_inputs, then_inputs_dict,
                           else_inputs_dict).outputs


def add_conditional(cond: Tensor, then_branch: Graph, else_branch: Graph, then_inputs, else_inputs,
                    then_inputs_dict, else_inputs_dict, check_inputs: bool = True) -> Op:
    """The conditional op behind ``conditional`` and ``conditional_with_info``."""
    if not isinstance(cond, Tensor) or cond.dtype is not dtypes.bool_ or cond.nelms != 1:
        raise ValueError(f"conditional: cond must be a single-element bool tensor, got {cond!r}")
    then_outs, else_outs = then_branch.outputs, else_branch.outputs
    if [t.spec for t in then_outs] != [t.spec for t in else_outs]:
        raise ValueError(f"conditional: both branches must have the same outputs, got "
                         f"{[str(t.spec) for t in then_outs]} and {[str(t.spec) for t in else_outs]}")
    then_parents, then_order = bind_inputs("conditional", then_branch, list(then_inputs or []),
                                           then_inputs_dict, check_inputs)
    else_parents, else_order = bind_inputs("conditional", else_branch, list(else_inputs or []),
                                           else_inputs_dict, check_inputs)
    modified = tuple(1 + p for p in _by_ref_positions(then_branch, then_order)) + tuple(
        1 + len(then_parents) + p for p in _by_ref_positions(else_branch, else_order))
    op = get_current_graph()._add_op(
        "conditional", [cond, *then_parents, *else_parents], [t.spec for t in then_outs],
        attrs={"then_inputs": then_order, "else_inputs": else_order},
        called_graphs=(then_branch, else_branch), modified=modified,
        output_names=[t.name for t in then_outs])
    return op


# ----- kernels -----
@dataclass(frozen=True, slots=True)
class CalleeBinding:
    """How a call site hands values to one called graph: ``count`` of the op's inputs from ``first``,
    copied at ``copy_in`` positions on the way in and at ``copy_out`` (graph-output indices) on the
    way out, as the kernels below do (the stepper applies the same rules frame by frame)."""

    graph: Graph
    function: Callable[..., tuple]
    first: int
    count: int
    copy_in: tuple[int, ...]
    copy_out: tuple[int, ...]


def callee_bindings(op: Op, env) -> list[CalleeBinding]:
    """The binding of each graph ``op`` calls: one for call and repeat, then and else for conditional."""
    if op.type == "conditional":
        split = 1 + len(op.attrs["then_inputs"])
        parts = ((op.called_graphs[0], op.attrs["then_inputs"], 1),
                 (op.called_graphs[1], op.attrs["else_inputs"], split))
    else:
        parts = ((op.called_graphs[0], op.attrs["graph_inputs"], 0),)
    bindings = []
    for graph, order, offset in parts:
        compiled = env.subgraph(graph)
        bindings.append(CalleeBinding(graph, compiled.function, offset, len(order),
                                      _copy_in(op, order, compiled.modified_inputs, offset),
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
    split = 1 + len(op.attrs["then_inputs"])
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


from .control_flow_grads import call_grad, conditional_grad, repeat_grad  # noqa: E402 - they use the above

register(OpDef("call", infer=None, kernel=_call_kernel, grad=call_grad))
register(OpDef("repeat", infer=None, kernel=_repeat_kernel, grad=repeat_grad))
register(OpDef("conditional", infer=None, kernel=_conditional_kernel, grad=conditional_grad))
