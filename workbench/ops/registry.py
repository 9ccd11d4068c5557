"""The op registry: every op type is one ``OpDef`` holding all the rules about it.

A kernel builder receives the op (for its attributes) and the runtime environment of one replica
(``kernel_env.KernelEnv``: streams, subgraphs, collectives) and returns a plain callable over NumPy
arrays: one array in per input, one array out (a tuple for several outputs, None for none).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from workbench.ir import Graph, Op, Tensor, TensorSpec, get_current_context, get_current_graph
from workbench.ir.fragments import add_fragment_op

from .arguments import check_same_placement
from .kernel_env import KernelBuilder

InferRule = Callable[[Sequence[TensorSpec], Mapping[str, Any]], Sequence[TensorSpec]]
# The key under which an op that calls graphs finds them in the attributes its infer rule receives.
CALLED_GRAPHS = "called_graphs"
GradRule = Callable[[Op, Sequence[Optional[Tensor]], Callable[[Tensor], Tensor]], Sequence[Optional[Tensor]]]


@dataclass(frozen=True, slots=True)
class OpDef:
    """Everything about one op type.

    ``infer(input_specs, attrs)``: the specs of the outputs; for an op that calls graphs, ``attrs``
    also holds them under ``CALLED_GRAPHS`` (the infer rule's view only, not the op's attributes).
    ``modifies``: inputs written in place. ``aliases``: (output, input) pairs sharing memory.
    ``view``: the kernel may return a NumPy view of input 0 although the op is out of place (the
    runtime copies when a later in-place op would write through it). ``meets_replicas``: a collective
    whose kernel hands its first input to the other replicas of its group (``env.exchange`` or
    ``env.combine``) and waits for theirs. ``into``: for an op writing input 0 in place, a builder
    of a kernel ``into(out, *inputs)`` that writes the same result into another array ``out`` and
    leaves input 0 as it was (the runtime keeps a variable's old value so without copying it).
    ``grad``: the gradient rule,
    None where the op has no gradient. ``popart_class``: the PopART C++ class of the op, as
    ``popart._internal.ir.op`` names it (``"AddLhsInplaceOp"``, ``"exchange.HostLoadOp"``). The facts after
    ``into`` are described beside them.

    Facts that passes read: ``effect``, the op acts beyond its outputs (a transfer, a code load), so
    running it again repeats the act; ``exchange``, a host or Streaming Memory transfer that
    ``merge_exchange`` may merge; ``stop_gradient``, no gradient flows through it; ``call_site``, it
    runs called graphs; ``ipus(op)``, the IPUs of a replica it occupies, the first where it runs
    (None: just ``op.ipu``).

    A gradient rule ``grad(op, output_grads, fwd) -> input_grads`` is called by autodiff while it
    builds the gradient graph (the current graph), and builds the gradient from popxl ops:
    ``output_grads[i]`` is the gradient of ``op.outputs[i]``, or None where none flows back;
    ``fwd(t)`` gives the gradient-graph tensor holding the forward value of ``t`` (an input or
    output of ``op``), which autodiff connects as an activation. It returns one entry per input of
    ``op``: a gradient tensor (autodiff sums a broadcast gradient down to the input's shape) or None
    where the input gets no gradient (integer inputs, indices, seeds, or a zero gradient:
    ``zero_gradient``). Ops that call subgraphs also use ``fwd.called_graph_grad(graph)`` (the
    callee's GradGraphInfo; the callee and its call sites gain its activations as outputs) and
    ``fwd.recompute_grad(graph, op)`` (the GradGraphInfo of a private copy of ``graph``, for loops
    and branches, which cannot gain outputs, to run forward again inside their gradient).
    A rule may build gradients that no required tensor needs: autodiff removes them afterwards.
    """

    type: str
    infer: InferRule
    kernel: KernelBuilder
    grad: Optional[GradRule] = None
    modifies: tuple[int, ...] = ()
    aliases: tuple[tuple[int, int], ...] = ()
    view: bool = False
    crosses_ipus: bool = False
    effect: bool = False
    exchange: bool = False
    stop_gradient: bool = False
    call_site: bool = False
    ipus: Optional[Callable[[Op], tuple[int, ...]]] = None
    meets_replicas: bool = False
    into: Optional[KernelBuilder] = None
    popart_class: str = ""
    # Facts the runtime, analysis and passes read (never a set of type names of their own):
    repeats: bool = False  # runs its called graph attrs["repeat_count"] times
    branches: bool = False  # runs one of its two called graphs, chosen by input 0
    loads_code: bool = False  # loads the code of attrs["graph"] (remote_code_load)
    writes_buffer: bool = False  # writes attrs["buffer"], a remote buffer, rather than an input
    written_buffers: Optional[Callable[[Op], tuple]] = None  # the remote buffers it writes, where not attrs["buffer"]
    moves_to_ipu: bool = False  # copies its input to another IPU, running on the source
    fills: bool = False  # makes a new tensor from nothing but its attributes (init)
    matrix_product: bool = False  # a matrix product (what the replica strategy weighs)
    pure_update: bool = False  # writes input 0 with a result of its inputs alone (no stream, buffer, seed)
    uniform_result: Optional[Callable[[Op], bool]] = None  # whether every replica gets the same result
    # How Poplibs plans it, where it does: "convolution" (convolutions and matrix products) or
    # "multi_slice" (gathers and scatters); its debug log names the plan's memory budget.
    poplibs_plan: str = ""
    # The in-place op types that PopART's Inplace pattern may put in this op's place, the preferred first
    # (each modifies one input, whose memory its output then is):
    inplace_variants: tuple[str, ...] = ()


REGISTRY: dict[str, OpDef] = {}


def zero_gradient(op: Op, output_grads, fwd) -> list[None]:
    """The gradient rule of ops whose gradient is zero wherever it exists (floor, ceil, sign)."""
    return [None] * len(op.inputs)


def register(definition: OpDef) -> OpDef:
    if definition.type in REGISTRY:
        raise ValueError(f"op type {definition.type!r} is registered twice")
    if not callable(definition.infer):
        raise TypeError(f"op type {definition.type!r} needs an infer rule, infer(input_specs, attrs) -> output "
                        f"specs; got {definition.infer!r}")
    REGISTRY[definition.type] = definition
    return definition


def op_types(fact: str) -> frozenset[str]:
    """The registered op types whose entry has the boolean ``fact`` (``'effect'``, ``'exchange'``,
    ``'stop_gradient'``, ``'call_site'``) set."""
    return frozenset(t for t, definition in REGISTRY.items() if getattr(definition, fact))


def op_ipus(op: Op) -> tuple[int, ...]:
    """The IPUs of a replica that ``op`` occupies, the one it runs on first."""
    definition = REGISTRY.get(op.type)
    return definition.ipus(op) if definition is not None and definition.ipus is not None else (op.ipu,)


def written_buffers(op) -> tuple:
    """The remote buffers ``op`` (or an op-like part of a merged exchange) stores into."""
    definition = op_def(op.type)
    if definition.written_buffers is not None:
        return definition.written_buffers(op)
    return (op.attrs["buffer"],) if definition.writes_buffer else ()


def op_def(op_type: str) -> OpDef:
    try:
        return REGISTRY[op_type]
    except KeyError:
        raise KeyError(f"no op type {op_type!r} is registered") from None


def create_op(op_type: str, inputs: Sequence[Tensor], attrs: Optional[dict] = None, *,
              called_graphs: Sequence[Graph] = (), modified: Optional[Sequence[int]] = None,
              aliases: Optional[Mapping[int, int]] = None, output_names: Optional[Sequence[Optional[str]]] = None,
              ipu: Optional[int] = None, output_ipus: Optional[Sequence[int]] = None,
              spans_ipus: bool = False, fragment: Optional[str] = None) -> Op:
    """Add an op of ``op_type`` to the current graph, its outputs inferred by its ``OpDef``: the one way
    to add an op.

    It runs on ``ipu`` (the context's IPU by default) and on the context's tiles (``popxl.io_tiles()``);
    its outputs live there too unless ``output_ipus`` places each (a copy's destination). ``modified``
    and ``aliases`` replace the type's own where the call site decides (a call's by-reference inputs);
    ``spans_ipus`` lets inputs live on several IPUs (a call of a graph whose inputs do). With
    ``fragment``, the op goes to that weights fragment of the main graph (``Ir.fragment_ops``) instead."""
    definition = op_def(op_type)
    graph = get_current_graph() if fragment is None else get_current_graph().ir.main_graph
    graph._check_inputs(op_type, inputs)
    # popxl checks placement in compute ops only: an exchange (remote load/store with an offset on
    # compute tiles and data on IO tiles), or a MultiExchange merging such, takes its inputs wherever they are
    exchange = definition.exchange or definition.written_buffers is not None
    if (len(inputs) > 1 and not definition.crosses_ipus and not exchange and not called_graphs
            and len({(t.ipu, t.tile_set) for t in inputs}) > 1):  # all in one place: nothing to check
        check_same_placement(op_type, {t.name: t for t in inputs})
    attrs = dict(attrs or {})
    input_specs = [t.spec for t in inputs]
    specs = definition.infer(input_specs, {**attrs, CALLED_GRAPHS: tuple(called_graphs)} if called_graphs
                             else attrs)
    if fragment is not None:
        return add_fragment_op(graph.ir, fragment, op_type, inputs, specs, attrs, output_names or (),
                               get_current_context().ipu_id if ipu is None else ipu)
    return graph._add_op(op_type, inputs, specs, attrs=attrs, called_graphs=called_graphs,
                         modified=definition.modifies if modified is None else modified,
                         aliases=dict(definition.aliases) if aliases is None else dict(aliases),
                         output_names=output_names, ipu=ipu, output_ipus=output_ipus,
                         crosses_ipus=definition.crosses_ipus or spans_ipus)


def apply(op_type: str, *inputs: Tensor, name: Optional[str] = None, **attrs: Any) -> Tensor:
    """Add a single-output op and return its output."""
    return create_op(op_type, inputs, attrs, output_names=[name]).outputs[0]


def apply_many(op_type: str, *inputs: Tensor, **attrs: Any) -> tuple[Tensor, ...]:
    return create_op(op_type, inputs, attrs).outputs
