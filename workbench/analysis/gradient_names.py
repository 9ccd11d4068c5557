"""Which tensor a gradient is the gradient of, for the views to say it.

popxl names the gradient of a forward tensor ``x`` ``Gradient___x``, and a forward graph made with
``create_graph(fn, *weights)`` names its variadic inputs ``ws_0``, ``ws_1``, ...: its gradients read
``Gradient___ws_0``. The IR names stay as popxl has them; here each gradient is traced to the tensor the
program bound to that input (``layer0.qkv``), through the call site of the forward graph, so that a label can
say '∂ layer0.qkv (Gradient___ws_0)'.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Optional

from workbench.ir import Graph, Ir, Op, Tensor
from workbench.ops.call_binding import call_bindings
from workbench.ops.registry import REGISTRY

GRADIENT_PREFIX = "Gradient___"  # popxl's (PopART's reservedGradientPrefix), as autodiff writes it
GRADIENT_SUFFIX = "_grad"  # autodiff names the gradient graph of ``f`` ``f_grad``
GRADIENT_MARK = "∂\u00a0"  # with a no-break space: a wrapped label keeps the mark beside its name


def gradient_sources(ir: Ir, only: Optional[Iterable[Graph]] = None) -> dict[Tensor, Tensor]:
    """Each gradient tensor of ``ir`` (its name holds ``Gradient___``) whose forward tensor is found, mapped
    to the tensor the program bound to it: a variable where the forward graph's call site binds one. With
    ``only``, the gradients of those graphs alone (a picture of one graph names no others)."""
    call_sites = _call_sites(ir)
    graphs = {graph.name: graph for graph in ir.graphs}
    named: dict[Graph, dict[str, Tensor]] = {}  # each forward graph's tensors by name, made when first needed
    sources = {}
    for graph in (ir.graphs if only is None else only):
        for tensor in graph.device_tensors:
            if GRADIENT_PREFIX in tensor.name:
                source = _source(tensor, call_sites, graphs, named)
                if source is not None:
                    sources[tensor] = source
    return sources


def gradient_label(tensor: Tensor, sources: Mapping[Tensor, Tensor]) -> str:
    """'∂ layer0.qkv (Gradient___ws_0)' for a gradient whose source has another name than the one its own
    name gives; the tensor's name otherwise."""
    source = sources.get(tensor)
    if source is None or tensor.name.endswith(GRADIENT_PREFIX + source.name):
        return tensor.name
    return f"{GRADIENT_MARK}{source.name} ({tensor.name})"


def gradient_name(tensor: Tensor, sources: Mapping[Tensor, Tensor]) -> str:
    """'∂ layer0.qkv' for a gradient that ``gradient_label`` names by its source; the tensor's name otherwise:
    the short form, for a list that gathers names (``name_ranges``)."""
    label = gradient_label(tensor, sources)
    return label if label == tensor.name else f"{GRADIENT_MARK}{sources[tensor].name}"


def gradient_short_name(tensor: Tensor, sources: Mapping[Tensor, Tensor]) -> str:
    """What a label with little room calls ``tensor``: '∂ layer0.qkv' as ``gradient_name`` has it, else a
    gradient named by its forward tensor alone ('∂ relu_2' for 'Gradient___relu_2'), else its name."""
    name = gradient_name(tensor, sources)
    if name == tensor.name and name.startswith(GRADIENT_PREFIX):
        return GRADIENT_MARK + name[len(GRADIENT_PREFIX):]
    return name


def gradient_title(tensor: Tensor, sources: Mapping[Tensor, Tensor]) -> str:
    """``gradient_short_name`` followed by the tensor's own name where they differ, '∂ relu_2
    (Gradient___relu_2)': the long form, for a hover that a search by either name should agree with."""
    short = gradient_short_name(tensor, sources)
    return short if short == tensor.name else f"{short} ({tensor.name})"


def name_matches(needle: str, name: str) -> bool:
    """Whether ``needle`` (lower case) is in ``name``, either's no-break spaces read as spaces: '∂ w0' as typed
    finds the label '∂ W0', whose mark is followed by a no-break space."""
    return needle.replace("\u00a0", " ") in name.lower().replace("\u00a0", " ")


def _call_sites(ir: Ir) -> dict[Graph, list[tuple[Op, object]]]:
    """Each graph's call sites: (op, binding) for every call, repeat or branch that calls it."""
    sites: dict[Graph, list[tuple[Op, object]]] = {}
    for graph in ir.graphs:
        for op in graph.ops:
            for binding in call_bindings(op):
                sites.setdefault(binding.graph, []).append((op, binding))
    return sites


def _source(tensor: Tensor, call_sites, graphs: Mapping[str, Graph],
            named: dict[Graph, dict[str, Tensor]]) -> Optional[Tensor]:
    """Walk from ``tensor`` to the gradient graph's own ``Gradient___x`` (into a call's output, or back from a
    tensor named after its input, such as an all-reduce's 'Gradient___ws_0_all_reduce'), then from the forward
    tensor ``x`` out to what the program bound to it."""
    seen = set()
    grad_call: Optional[Op] = None
    while tensor not in seen:
        seen.add(tensor)
        graph = tensor.graph
        if tensor.name.startswith(GRADIENT_PREFIX) and graph.name.endswith(GRADIENT_SUFFIX):
            forward = graphs.get(graph.name[:-len(GRADIENT_SUFFIX)])
            if forward is not None:
                if forward not in named:
                    named[forward] = {t.name: t for t in forward.device_tensors}
                found = _forward_tensor(named[forward], tensor.name[len(GRADIENT_PREFIX):])
                if found is not None:
                    return _bound(found, _forward_call(forward, graph, grad_call, call_sites), call_sites)
        producer = tensor.producer
        if producer is None:
            return None
        bindings = call_bindings(producer)
        if bindings and bindings[0].kind in ("call", "repeat"):
            index = producer.outputs.index(tensor)
            grad_call, tensor = producer, bindings[0].graph.outputs[index]
            continue
        named_after = [t for t in producer.inputs if GRADIENT_PREFIX in t.name and t.name in tensor.name]
        if len(named_after) != 1:
            return None
        tensor = named_after[0]
    return None


def _forward_tensor(by_name: Mapping[str, Tensor], name: str) -> Optional[Tensor]:
    """The forward graph's tensor called ``name`` (``by_name``: its tensors by name), followed back through
    copies to where it came from."""
    tensor = by_name.get(name)
    while tensor is not None and tensor.producer is not None and _passes_value_on(tensor.producer):
        tensor = tensor.producer.inputs[0]
    return tensor


def _passes_value_on(op: Op) -> bool:
    """Whether ``op``'s one output is its input 0, moved to another IPU or viewed unchanged (an identity)."""
    definition = REGISTRY[op.type]
    if len(op.outputs) != 1 or not op.inputs:
        return False
    same = op.outputs[0].shape == op.inputs[0].shape and op.outputs[0].dtype == op.inputs[0].dtype
    return same and (definition.moves_to_ipu or (definition.view and len(op.inputs) == 1))


def _forward_call(forward: Graph, grad_graph: Graph, grad_call: Optional[Op], call_sites) -> Optional[Op]:
    """The call of ``forward`` whose gradient ``grad_call`` computes: the only call of it, else the one whose
    binding agrees with ``grad_call``'s (each activation the gradient graph reads is the tensor that call was
    given or returned); None where that leaves more than one."""
    calls = [op for op, _ in call_sites.get(forward, ())]
    if len(calls) == 1:
        return calls[0]
    if grad_call is None:
        grad_calls = [op for op, _ in call_sites.get(grad_graph, ())]
        grad_call = grad_calls[0] if len(grad_calls) == 1 else None
    if grad_call is None:
        return None
    agreeing = [op for op in calls if _agreement(op, forward, grad_call, grad_graph) > 0]
    return agreeing[0] if len(agreeing) == 1 else None


def _agreement(call: Op, forward: Graph, grad_call: Op, grad_graph: Graph) -> int:
    """How many activations ``grad_call`` hands its graph that ``call`` was given or returned under the same
    name; -1 where one differs."""
    binding = next(b for b in call_bindings(call) if b.graph is forward)
    grad_binding = next((b for b in call_bindings(grad_call) if b.graph is grad_graph), None)
    if grad_binding is None:
        return -1
    inputs, outputs = forward.inputs_by_name, {t.name: i for i, t in enumerate(forward.outputs)}
    agreed = 0
    for parent, grad_input in grad_binding.pairs():
        if grad_input.name in inputs:
            expected = binding.parent_of(inputs[grad_input.name])
        elif grad_input.name in outputs and binding.kind == "call":
            expected = call.outputs[outputs[grad_input.name]]
        else:
            continue
        if expected is not parent:
            return -1
        agreed += 1
    return agreed


def _bound(tensor: Tensor, call: Optional[Op], call_sites) -> Tensor:
    """What the program bound to ``tensor``: through ``call`` when it is an input of the called graph, then
    up through each enclosing graph called from one place only."""
    while tensor.graph.is_input(tensor):
        if call is None:
            sites = call_sites.get(tensor.graph, ())
            call = sites[0][0] if len(sites) == 1 else None
        if call is None:
            return tensor
        binding = next((b for b in call_bindings(call) if b.graph is tensor.graph), None)
        parent = binding.parent_of(tensor) if binding is not None else None
        if parent is None:
            return tensor
        tensor, call = parent, None
        while tensor.producer is not None and _passes_value_on(tensor.producer):
            tensor = tensor.producer.inputs[0]
    return tensor
