"""Rewiring single ops: copy an op into another graph unconnected, then connect and disconnect its tensors
one at a time. Passes that move ops between graphs (pipelining, wrapping a graph in a loop) are built from
these steps; each one emits an event, so views and exports follow every step.

An op being rewired may be left half connected for a while (a copy with no inputs yet, an op whose outputs
were disconnected before it is erased); a Session refuses an Ir where an op reads a tensor that nothing
produces any more (``analysis.verify``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .op import Op
from .tensor import Tensor, TensorSpec

if TYPE_CHECKING:
    from .graph import Graph


def clone_op(op: Op, graph: "Graph") -> Op:
    """A copy of ``op`` (type, name scope, attributes, called graphs, placement, in-place facts, annotations)
    appended to ``graph`` with no inputs and no outputs; nothing orders it (``after`` is empty)."""
    graph._check_buildable()
    if graph.ir is not op.graph.ir:
        raise ValueError(f"cannot copy op {op.name} into graph {graph.label!r}: it belongs to another Ir")
    scope = op.name.rpartition("/")[0]
    name = graph._unique_op_name(op.type, f"{scope}/" if scope else "")
    copy = Op(op.type, name, graph, (), (), _copy_attrs(op.attrs), op.called_graphs, op.ipu, op.tile_set,
              op.modified, dict(op.aliases), (), dict(op.meta))
    graph._ops.append(copy)
    graph.ir.events.emit("op_added", copy)
    return copy


def _copy_attrs(attrs: dict) -> dict:
    return {key: (list(value) if isinstance(value, list) else value) for key, value in attrs.items()}


def connect_input(op: Op, index: int, tensor: Tensor) -> None:
    """Make ``tensor`` (of ``op``'s graph) input ``index`` of ``op``: the next input, or in place of an
    existing one."""
    op.graph._check_buildable()
    if not isinstance(tensor, Tensor):
        raise TypeError(f"op {op.name}: an input must be a Tensor, got {type(tensor).__name__}")
    if tensor.graph is not op.graph:
        raise ValueError(f"op {op.name} in graph {op.graph.label!r} cannot read tensor {tensor.id!r} of graph "
                         f"{tensor.graph.label!r}")
    if not 0 <= index <= len(op.inputs):
        raise IndexError(f"op {op.name} has {len(op.inputs)} inputs: input {index} can only be connected after "
                         f"inputs 0..{index - 1}")
    if index < len(op.inputs):
        replaced = op.inputs[index]
        op.inputs = op.inputs[:index] + (tensor,) + op.inputs[index + 1:]
        if replaced not in op.inputs:
            replaced.consumers.remove(op)
    else:
        op.inputs = op.inputs + (tensor,)
    if op not in tensor.consumers:
        tensor.consumers.append(op)
    op.graph.ir.events.emit("op_changed", op)


def disconnect_inputs(op: Op) -> None:
    """Stop ``op`` reading any tensor. The tensors stay in the graph, but for an intermediate that is left
    with no producer and no reader, which is dropped (nothing could give it a value)."""
    op.graph._check_buildable()
    tensors = tuple(dict.fromkeys(op.inputs))
    for tensor in tensors:
        tensor.consumers.remove(op)
    op.inputs = ()
    op.graph.ir.events.emit("op_changed", op)
    _drop_isolated(tensors)


def add_output(op: Op, index: int, name: str, spec: TensorSpec, ipu: Optional[int] = None,
               tile_set: Optional[str] = None) -> Tensor:
    """A new tensor named ``name`` (or ``name_1``... if taken) in ``op``'s graph, made output ``index`` of
    ``op``, which must be its next output. Placed on ``ipu``/``tile_set``, the op's own by default."""
    graph = op.graph
    graph._check_buildable()
    if index != len(op.outputs):
        raise IndexError(f"op {op.name} has {len(op.outputs)} outputs: a new output takes index "
                         f"{len(op.outputs)}, not {index}")
    tensor = Tensor._create(graph, graph._fresh_name(name), spec, op.ipu if ipu is None else ipu,
                            op.tile_set if tile_set is None else tile_set, op)
    graph._add_tensor(tensor)
    op.outputs = op.outputs + (tensor,)
    graph.ir.events.emit("op_changed", op)
    return tensor


def connect_output(op: Op, index: int, tensor: Tensor) -> None:
    """Make ``tensor``, a tensor of ``op``'s graph that no op produces, the next output of ``op``."""
    graph = op.graph
    graph._check_buildable()
    if tensor.graph is not graph:
        raise ValueError(f"op {op.name} in graph {graph.label!r} cannot produce tensor {tensor.id!r} of graph "
                         f"{tensor.graph.label!r}")
    if tensor.producer is not None or graph.is_input(tensor):
        source = f"op {tensor.producer.name}" if tensor.producer is not None else "its graph, as an input"
        raise ValueError(f"tensor {tensor.id!r} is already produced by {source}; disconnect it first")
    if index != len(op.outputs):
        raise IndexError(f"op {op.name} has {len(op.outputs)} outputs: a new output takes index "
                         f"{len(op.outputs)}, not {index}")
    tensor.producer = op
    op.outputs = op.outputs + (tensor,)
    graph.ir.events.emit("op_changed", op)


def disconnect_outputs(op: Op) -> None:
    """Stop ``op`` producing its outputs. Those that ops read or the graph returns stay in the graph with no
    producer (for another op to produce); the others are dropped."""
    op.graph._check_buildable()
    tensors = op.outputs
    for tensor in tensors:
        tensor.producer = None
    op.outputs = ()
    op.graph.ir.events.emit("op_changed", op)
    _drop_isolated(tensors)


def _drop_isolated(tensors) -> None:
    for tensor in tensors:
        graph = tensor.graph
        if (tensor.producer is None and not tensor.consumers and tensor.kind == "intermediate"
                and not graph.is_output(tensor) and graph._tensors.get(tensor.name) is tensor):
            graph._forget_tensor(tensor)
            graph.ir.events.emit("graph_changed", graph)


def set_graph_output(graph: "Graph", index: int, tensor: Tensor) -> Tensor:
    """Return ``tensor`` as output ``index`` of ``graph`` instead of the tensor returned there, which is
    given back (and stays in the graph). The new tensor must have the old one's shape and type, as the
    ops calling the graph expect."""
    graph._check_buildable()
    outputs = graph._outputs
    if not 0 <= index < len(outputs):
        raise IndexError(f"graph {graph.label!r} has no output at index {index}; it has {len(outputs)} outputs")
    if tensor.graph is not graph:
        raise ValueError(f"tensor {tensor.id!r} belongs to graph {tensor.graph.label!r}, not to {graph.label!r}")
    old = outputs[index]
    if (tensor.shape, tensor.dtype) != (old.shape, old.dtype):
        raise ValueError(f"output {index} of graph {graph.label!r} is {old.spec}; {tensor.id!r} ({tensor.spec}) "
                         "cannot take its place")
    outputs[index] = tensor
    graph.ir.events.emit("graph_changed", graph)
    return old


def set_called_graph(op: Op, index: int, graph: "Graph") -> None:
    """Make ``op`` call ``graph`` as its called graph ``index`` (how the op binds its inputs to the graph's
    is the op type's attribute to set)."""
    op.graph._check_buildable()
    if graph.ir is not op.graph.ir:
        raise ValueError(f"op {op.name} cannot call graph {graph.label!r} of another Ir")
    if not 0 <= index < len(op.called_graphs):
        raise IndexError(f"op {op.name} calls {len(op.called_graphs)} graphs; there is no called graph {index}")
    op.called_graphs = op.called_graphs[:index] + (graph,) + op.called_graphs[index + 1:]
    op.graph.ir.events.emit("op_changed", op)


def place_input(tensor: Tensor, ipu: int) -> None:
    """Move ``tensor``, an input of a subgraph, to IPU ``ipu``: where the ops reading it say it lives (code
    written for PopART places ops, not tensors)."""
    graph = tensor.graph
    graph._check_buildable()
    if not graph.is_input(tensor):
        raise ValueError(f"tensor {tensor.id!r} is no graph input: only a graph input takes the IPU of its readers")
    if not isinstance(ipu, int) or isinstance(ipu, bool) or ipu < 0:
        raise ValueError(f"an IPU is an int >= 0, got {ipu!r}")
    tensor._ipu = ipu
    graph.ir.events.emit("graph_changed", graph)


def set_after(op: Op, before: "tuple[Op, ...] | list[Op]") -> None:
    """Make ``op`` follow exactly the ops ``before`` of its graph (``in_sequence`` order), no tensor needed."""
    op.graph._check_buildable()
    strangers = [o.name for o in before if o.graph is not op.graph]
    if strangers:
        raise ValueError(f"op {op.name} in graph {op.graph.label!r} cannot follow ops of other graphs: {strangers}")
    op.after = tuple(dict.fromkeys(o for o in before if o is not op))
    op.graph.ir.events.emit("op_changed", op)
