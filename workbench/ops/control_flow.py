"""Calling subgraphs: call, repeat and conditional, with popxl's binding and copy semantics.

Inputs are passed by value: a subgraph that writes one of its inputs in place works on a copy,
unless that input is by reference (``TensorByRef``, ``graph_input(by_ref=True)``) or the call site
said ``set_parent_input_modified``. The kernels and registry entries of these ops are in
``control_flow_kernels``, their gradients in ``control_flow_grads``.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from workbench.ir import (Graph, Op, Tensor, TensorSpec, constant, dtypes, get_current_context, get_current_graph,
                          op_edits)
from workbench.ir.errors import ShapeInferenceError

from .call_site import CallSiteInfo
from .registry import create_op, op_def

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
        raise ValueError(f"Too many inputs have been provided. The number of positional inputs exceeds the "
                         f"number of inputs of the graph: {len(flat)} > {len(graph.inputs)}. ({op_type}: "
                         f"{len(flat)} inputs given but graph {graph.label!r} has only {len(graph.inputs)})")
    bound = {i: _coerce(v, graph.inputs[i], op_type) for i, v in enumerate(flat)}
    for graph_tensor, parent in (inputs_dict or {}).items():
        if not isinstance(graph_tensor, Tensor) or not graph.is_input(graph_tensor):
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
                raise ShapeInferenceError(f"{op_type}: graph input {expected.name!r} of {graph.label!r} expects "
                                 f"{expected.spec}, but {parent.id!r} is {parent.spec}")
    order = tuple(sorted(bound))
    return [bound[i] for i in order], order


def _by_ref_positions(graph: Graph, order: Sequence[int]) -> tuple[int, ...]:
    return tuple(p for p, index in enumerate(order) if graph.is_by_ref_input(graph.inputs[index]))


def _add_call(op_type: str, graph: Graph, parents: list[Tensor], order: tuple[int, ...], attrs: dict) -> Op:
    if graph is get_current_graph():
        raise ValueError(f"{op_type}: graph {graph.label!r} cannot call itself")
    # A callee taking its inputs where the parent tensors live (no copy) runs on their IPU, if they share
    # one; one taking them on several IPUs returns each output on the IPU that made it, and any callee
    # returns what it copied to another IPU (ops.ipu_copy) on that IPU. Each parent lives where the call
    # runs or where the callee takes it.
    context_ipu = get_current_context().ipu_id
    for parent, index in zip(parents, order):  # an input no op reads has no IPU of its own yet: it takes its parent's
        graph_input = graph.inputs[index]
        if parent.ipu != graph_input.ipu and parent.ipu != context_ipu and not graph_input.consumers:
            op_edits.place_input(graph_input, parent.ipu)
    placed = all(p.ipu == graph.inputs[i].ipu for p, i in zip(parents, order))
    ipus = {p.ipu for p in parents}
    ipu = next(iter(ipus)) if placed and len(ipus) == 1 else None
    spans = placed and len(ipus) > 1
    run_ipu = context_ipu if ipu is None else ipu
    fits = all(p.ipu in (run_ipu, graph.inputs[i].ipu) for p, i in zip(parents, order))
    return create_op(op_type, parents, {"graph_inputs": order, **attrs}, called_graphs=(graph,),
                     modified=_by_ref_positions(graph, order), output_names=[t.name for t in graph.outputs],
                     ipu=ipu, output_ipus=[returned_ipu(t, spans, run_ipu) for t in graph.outputs],
                     spans_ipus=fits)


def returned_ipu(graph_output: Tensor, spans: bool, call_ipu: int) -> int:
    """The IPU where a call returns ``graph_output``: where the graph made it if the call ``spans`` IPUs or
    the graph copied it to another IPU, else where the call runs."""
    producer = graph_output.producer
    if spans or (producer is not None and op_def(producer.type).moves_to_ipu):
        return graph_output.ipu
    return call_ipu


def call_with_info(graph: Graph, *inputs: TensorInputs, inputs_dict: Optional[Mapping[Tensor, Any]] = None,
                   check_inputs: bool = True) -> CallSiteInfo:
    """Call ``graph`` once and return the call site's information."""
    parents, order = bind_inputs("call", graph, inputs, inputs_dict, check_inputs)
    op = _add_call("call", graph, parents, order, {})
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
        raise ValueError(f"Repeat count must be an int greater than 0. Repeat count: {repeat_count!r}. "
                         f"Graph: {graph.label!r}")
    if len(graph.inputs) < len(graph.outputs):
        raise ValueError(f"To repeat the subgraph ({graph.id}) the number of inputs must be greater than or "
                         f"equal to the number of outputs. {len(graph.inputs)} < {len(graph.outputs)}. "
                         f"(repeat: graph {graph.label!r} has {len(graph.outputs)} outputs but only "
                         f"{len(graph.inputs)} inputs; each output feeds an input of the next iteration)")
    for index, (out, inp) in enumerate(zip(graph.outputs, graph.inputs)):
        if out.shape != inp.shape or out.dtype is not inp.dtype:
            raise ValueError(f"repeat: output {index} of {graph.label!r} ({out.spec}) must match input "
                             f"{index} ({inp.name}: {inp.spec}) to be carried to the next iteration")
    parents, order = bind_inputs("repeat", graph, inputs, inputs_dict, check_inputs)
    op = _add_call("repeat", graph, parents, order, {"repeat_count": repeat_count})
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


def branch_outputs(then_branch: Graph, else_branch: Graph) -> list[TensorSpec]:
    """The output specs of a conditional: those of its branches, which must agree."""
    then_specs, else_specs = [t.spec for t in then_branch.outputs], [t.spec for t in else_branch.outputs]
    if then_specs != else_specs:
        raise ValueError(f"conditional: both branches must have the same outputs, got "
                         f"{[str(s) for s in then_specs]} and {[str(s) for s in else_specs]}")
    return then_specs


def add_conditional(cond: Tensor, then_branch: Graph, else_branch: Graph, then_inputs, else_inputs,
                    then_inputs_dict, else_inputs_dict, check_inputs: bool = True) -> Op:
    """The conditional op behind ``conditional`` and ``conditional_with_info``."""
    if not isinstance(cond, Tensor) or cond.dtype is not dtypes.bool_ or cond.nelms != 1:
        raise ValueError(f"conditional: cond must be a single-element bool tensor, got {cond!r}")
    branch_outputs(then_branch, else_branch)  # before any input becomes a constant
    then_parents, then_order = bind_inputs("conditional", then_branch, list(then_inputs or []),
                                           then_inputs_dict, check_inputs)
    else_parents, else_order = bind_inputs("conditional", else_branch, list(else_inputs or []),
                                           else_inputs_dict, check_inputs)
    modified = tuple(1 + p for p in _by_ref_positions(then_branch, then_order)) + tuple(
        1 + len(then_parents) + p for p in _by_ref_positions(else_branch, else_order))
    return create_op("conditional", [cond, *then_parents, *else_parents],
                     {"then_inputs": then_order, "else_inputs": else_order},
                     called_graphs=(then_branch, else_branch), modified=modified,
                     output_names=[t.name for t in then_branch.outputs])
