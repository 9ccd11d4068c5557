"""Automatic differentiation of a graph: a new graph computing gradients by the chain rule.

Policy: gradients flow only through floating-point tensors. Each op on a gradient path (an output
receives a gradient and an input needs one) uses the gradient rule of its registry entry. ``detach``
and ``detach_`` stop gradients by design. Any other op without a rule on such a path is an error
naming the op, since its gradient exists in principle; ops off the paths never need rules. A
required tensor that no gradient reaches gets zeros.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Iterable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from workbench import ops
from workbench.ir import (Constant, Graph, Op, Tensor, constant, get_current_context, graph_input, graph_output,
                          ipu, name_scope)
from workbench.ir.errors import popart_exception
from workbench.ops.nn_grads import softmax_under_nll
from workbench.ops.registry import REGISTRY, op_types

from .clone import SIDE_EFFECT_TYPES, clone_graph, side_effect
from .graph_edits import EditLog, call_sites, remove_op, remove_unread, rename
from .grad_graph_info import ExpectedConnection, ExpectedConnectionType, GradGraphInfo

__all__ = ["autodiff", "GradGraphInfo", "ExpectedConnection", "ExpectedConnectionType"]

STOP_GRADIENT_TYPES = op_types("stop_gradient")
GRADIENT_PREFIX = "Gradient___"
# Marks forward outputs that autodiff added for its own use: they carry no gradient.
ACTIVATION_MARK = "autodiff_activation"


@contextmanager
def _scope_of(op: Optional[Op]) -> Iterator[None]:
    """Ops made inside take the name scope of forward op ``op`` (less the scopes already open), so that the
    gradient graph groups as its forward graph does."""
    open_scopes = get_current_context().name_scopes
    scopes = op.name.split("/")[:-1] if op is not None else []
    if scopes[:len(open_scopes)] == open_scopes:
        scopes = scopes[len(open_scopes):]
    with ExitStack() as stack:
        for scope in scopes:
            stack.enter_context(name_scope(scope))
        yield


@contextmanager
def _only_scopes(scopes: Sequence[str]) -> Iterator[None]:
    """Names made inside take ``scopes`` alone: a forward value asked for by a gradient rule (inside
    its op's scopes) is named once by its own, already scoped, name."""
    context = get_current_context()
    open_scopes, context.name_scopes = context.name_scopes, list(scopes)
    try:
        yield
    finally:
        context.name_scopes = open_scopes


def autodiff(graph: Graph, grads_provided: Optional[Iterable[Tensor]] = None,
             grads_required: Optional[Iterable[Tensor]] = None,
             called_graphs_grad_info: Optional[Mapping[Graph, GradGraphInfo]] = None,
             return_all_grad_graphs: bool = False) -> Union[GradGraphInfo, dict[Graph, GradGraphInfo]]:
    """Build the gradient graph of ``graph``.

    Its inputs are the gradients of ``grads_provided`` (default: the graph's outputs), then the forward
    tensors it needs (activations); its outputs are the gradients of ``grads_required`` (default: the
    graph's inputs). Activations that are neither inputs nor outputs of ``graph`` become extra outputs of
    it, and every call op of ``graph`` gains matching outputs. Graphs called inside are differentiated
    too, unless ``called_graphs_grad_info`` already holds their GradGraphInfo.
    ``return_all_grad_graphs`` returns the GradGraphInfo of every differentiated graph, by forward graph.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"autodiff: graph must be a popxl.Graph, got {type(graph).__name__}")
    if graph.is_main:
        raise ValueError("autodiff: the main graph cannot be differentiated, as nothing calls it; build the "
                         "forward pass as a subgraph (ir.create_graph) and differentiate that")
    graph.ir._check_buildable()
    provided = _graph_tensors(graph, graph.outputs if grads_provided is None else grads_provided,
                              "grads_provided")
    # A tensor may be required more than once: each entry gets its own output, as in popxl.
    required = _graph_tensors(graph, graph.inputs if grads_required is None else grads_required,
                              "grads_required", repeats=True)
    reuse = _checked_reuse(graph, called_graphs_grad_info or {})
    run = _Autodiff(graph, reuse)
    context = get_current_context()
    # An open in_sequence block orders the user's ops, not the ones autodiff builds.
    sequence_mode, context.sequence_mode = context.sequence_mode, None
    try:
        info = run.differentiate(graph, provided, required)
    except BaseException:
        run.log.rollback()
        raise
    finally:
        context.sequence_mode = sequence_mode
    if return_all_grad_graphs:
        return {graph: info, **run.called}
    return info


def _graph_tensors(graph: Graph, tensors: Iterable[Tensor], what: str, repeats: bool = False) -> list[Tensor]:
    result = list(tensors)
    for tensor in result:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"autodiff: {what} must hold Tensors, got {type(tensor).__name__} {tensor!r}")
        if tensor.graph is not graph:
            raise ValueError(f"autodiff: {what} holds {tensor.id!r}, which is not a tensor of graph "
                             f"{graph.label!r}")
    if not repeats and len(set(result)) != len(result):
        raise ValueError(f"autodiff: {what} names a tensor more than once: {[t.name for t in result]}")
    return result


def _checked_reuse(graph: Graph, infos: Mapping[Graph, GradGraphInfo]) -> dict[Graph, GradGraphInfo]:
    for forward, info in infos.items():
        if not isinstance(info, GradGraphInfo) or info.forward_graph is not forward:
            raise ValueError(f"autodiff: called_graphs_grad_info must map each graph to its own GradGraphInfo; "
                             f"the entry for {getattr(forward, 'label', forward)!r} does not")
        if forward.ir is not graph.ir:
            raise ValueError(f"autodiff: called_graphs_grad_info holds graph {forward.label!r} of another Ir")
    return dict(infos)


def is_float(tensor: Tensor) -> bool:
    return tensor.dtype.is_floating_point


class _Autodiff:
    """One autodiff call: the graphs differentiated so far and the undo log of its edits."""

    def __init__(self, graph: Graph, reuse: dict[Graph, GradGraphInfo]):
        self.log = EditLog(graph.ir)
        self.reuse = reuse
        self.called: dict[Graph, GradGraphInfo] = {}

    def differentiate(self, graph: Graph, provided: Sequence[Tensor], required: Sequence[Tensor]
                      ) -> GradGraphInfo:
        _check_no_modifying_op(graph)
        for op in graph.ops:
            for called in op.called_graphs:
                self._check_may_differentiate(called)
        return _GradGraphBuilder(self, graph, provided, required).build()

    def _check_may_differentiate(self, graph: Graph) -> None:
        """A graph marked not to be differentiated recursively needs its gradient given, as in PopART."""
        if not graph._recursive_autodiff and graph not in self.called and graph not in self.reuse:
            raise RuntimeError(f"autodiff: graph {graph.label!r} is called by the graph being differentiated but "
                               "has been marked as unsafe to autodiff (setCanBeRecursivelyAutodiffed(False)); "
                               "provide its gradient graph in called_graphs_grad_info")

    def called_graph_grad(self, graph: Graph) -> GradGraphInfo:
        """The gradient of a called graph for all its float outputs and inputs (built once)."""
        info = self.called.get(graph) or self.reuse.get(graph)
        if info is None:
            self._check_may_differentiate(graph)
            provided = [t for t in graph.outputs if is_float(t) and not t.meta.get(ACTIVATION_MARK)]
            info = self.differentiate(graph, provided, [t for t in graph.inputs if is_float(t)])
        self.called[graph] = info
        return info

    def recompute_grad(self, graph: Graph, op: Op) -> GradGraphInfo:
        """The gradient of a private copy of ``graph``, for ``op`` to run forward again inside its
        gradient; ``graph`` itself stays unchanged."""
        effect = side_effect(graph)
        if effect:
            raise NotImplementedError(
                f"autodiff: the gradient of {op.type} op {op.name} runs graph {graph.label!r} again, but "
                f"it holds {effect}; move that out of the graph to differentiate it")
        copy = clone_graph(graph, f"{graph.name}_recompute")
        self.log.created(copy)
        return self.differentiate(copy, [t for t in copy.outputs if is_float(t)],
                                  [t for t in copy.inputs if is_float(t)])


class ForwardValues:
    """The ``fwd`` argument of gradient rules: ``fwd(t)`` is the gradient-graph tensor holding the
    forward value of ``t``; ops that call subgraphs also ask for the subgraphs' gradients."""

    __slots__ = ("_builder",)

    def __init__(self, builder: "_GradGraphBuilder"):
        self._builder = builder

    def __call__(self, tensor: Tensor) -> Tensor:
        return self._builder.activation(tensor)

    def called_graph_grad(self, graph: Graph) -> GradGraphInfo:
        """The GradGraphInfo of ``graph`` for all its float outputs and inputs; ``graph`` gains its
        activations as outputs, and so do its call sites."""
        return self._builder.run.called_graph_grad(graph)

    def recompute_grad(self, graph: Graph, op: Op) -> GradGraphInfo:
        """The GradGraphInfo of a copy of ``graph`` (its ``forward_graph``), to be called forward again
        inside the gradient of ``op`` (a loop or branch whose graph cannot gain outputs)."""
        return self._builder.run.recompute_grad(graph, op)


class _GradGraphBuilder:
    """Builds the gradient graph of one forward graph."""

    def __init__(self, run: _Autodiff, graph: Graph, provided: Sequence[Tensor], required: Sequence[Tensor]):
        self.run = run
        self.graph = graph
        self.provided = list(provided)
        self.required = list(required)
        self.grad_graph: Graph
        self.parts: dict[Tensor, list[Tensor]] = {}
        self.totals: dict[Tensor, Optional[Tensor]] = {}
        self.activations: dict[Tensor, Tensor] = {}
        self.expected_inputs: list[ExpectedConnection] = []
        self.named: dict[Tensor, Tensor] = {}  # gradient tensor -> the forward tensor it is named after
        self.returned: set[Tensor] = set()
        self.open_scopes: list[str] = []  # the name scopes open when autodiff is called

    def build(self) -> GradGraphInfo:
        ir = self.graph.ir
        self.grad_graph = ir.create_empty_graph(f"{self.graph.name}_grad")
        self.run.log.created(self.grad_graph)
        needs = _needing_gradient(self.graph, self.required)
        self.open_scopes = list(get_current_context().name_scopes)
        with self.grad_graph:
            for tensor in self.provided:
                with ipu(tensor.ipu):
                    seed = graph_input(tensor.shape, tensor.dtype, GRADIENT_PREFIX + tensor.name,
                                       meta_shape=tensor.meta_shape)
                self.parts[tensor] = [seed]
                self.named[seed] = tensor
                self.expected_inputs.append(ExpectedConnection._create(tensor, ExpectedConnectionType.FwdGrad))
            fwd = ForwardValues(self)
            for op in reversed(self.graph.ops):
                self._backward(op, needs, fwd)
            outputs = [self._output(tensor) for tensor in self.required]
            for output in outputs:
                graph_output(output)
        self._prune(outputs)
        self._expose_activations()
        ir.events.emit("graph_built", self.grad_graph)
        expected_outputs = [ExpectedConnection._create(t, ExpectedConnectionType.FwdGrad) for t in self.required]
        return GradGraphInfo._create(self.grad_graph, self.graph, self.expected_inputs, expected_outputs)

    # ----- the backward walk -----
    def _backward(self, op: Op, needs: set[Tensor], fwd: ForwardValues) -> None:
        output_grads = [self._total(t) for t in op.outputs]
        if all(g is None for g in output_grads) or not any(t in needs for t in op.inputs):
            return
        softmax = self._softmax_into(op)
        if softmax is not None and softmax.inputs[0] in needs:
            self._softmax_nll_backward(softmax, op, output_grads[0], fwd)
            return
        rule = _rule(op, self.graph)
        if rule is None:
            return
        with ipu(op.ipu), _scope_of(op):
            input_grads = list(rule(op, output_grads, fwd))
        if len(input_grads) != len(op.inputs):
            raise ValueError(f"autodiff: the gradient rule of {op.type} returned {len(input_grads)} gradients "
                             f"for {len(op.inputs)} inputs (op {op.name})")
        for index, (tensor, grad) in enumerate(zip(op.inputs, input_grads)):
            if grad is not None and tensor in needs:
                self.parts.setdefault(tensor, []).append(self._fit(op, index, tensor, grad))

    def _softmax_into(self, op: Op) -> Optional[Op]:
        """For an ``nll_loss`` of probabilities that only a softmax over the classes makes and only
        this loss reads: that softmax (its gradient then skips the probabilities, as PopART's
        ``NlllWithSoftmaxGradDirect`` pattern does). None otherwise."""
        softmax = softmax_under_nll(op)
        probs = op.inputs[0]
        if (softmax is None or list(probs.consumers) != [op] or self.graph.is_output(probs)
                or probs in self.required or probs in self.provided):
            return None
        return softmax

    def _softmax_nll_backward(self, softmax: Op, loss: Op, loss_grad: Tensor, fwd: ForwardValues) -> None:
        """The gradient of the softmax's input, ``(probs - onehot(labels))`` scaled as the loss is, in
        one op; neither the loss's nor the softmax's own rule runs."""
        with ipu(loss.ipu), _scope_of(loss):
            _, grad = ops.nll_loss_with_softmax_grad(fwd(loss.inputs[0]), fwd(loss.inputs[1]), loss_grad,
                                                     ignore_index=loss.attrs["ignore_index"],
                                                     reduction=loss.attrs["reduction"])
        logits = softmax.inputs[0]
        self.parts.setdefault(logits, []).append(self._fit(softmax, 0, logits, grad))

    def _fit(self, op: Op, index: int, tensor: Tensor, grad: Tensor) -> Tensor:
        """The gradient of input ``index`` of ``op``, summed down to the input's shape."""
        if not isinstance(grad, Tensor) or grad.graph is not self.grad_graph:
            raise TypeError(f"autodiff: the gradient rule of {op.type} returned {grad!r} for input {index}; "
                            f"expected a tensor of the gradient graph {self.grad_graph.label!r}")
        if grad.dtype is not tensor.dtype:
            raise TypeError(f"autodiff: the gradient rule of {op.type} returned a {grad.dtype.name} gradient for "
                            f"input {index} ({tensor.spec})")
        if grad.shape == tensor.shape:
            return grad
        try:
            broadcast = np.broadcast_shapes(tensor.shape, grad.shape) == grad.shape
        except ValueError:
            broadcast = False
        if not broadcast:
            raise ValueError(f"autodiff: the gradient rule of {op.type} returned a gradient of shape {grad.shape} "
                             f"for input {index} of shape {tensor.shape}")
        with ipu(tensor.ipu), _scope_of(op):
            return sum_to_shape(grad, tensor.shape)

    def _total(self, tensor: Tensor) -> Optional[Tensor]:
        """The gradient of ``tensor``, all contributions summed (call once all its consumers are done)."""
        if tensor in self.totals:
            return self.totals[tensor]
        parts = self.parts.get(tensor) if is_float(tensor) else None
        total = None
        if parts:
            total = parts[0]
            with ipu(tensor.ipu), _scope_of(tensor.producer):
                for part in parts[1:]:
                    total = ops.add(total, part)
            if total not in self.named and total.producer is not None:
                rename(total, GRADIENT_PREFIX + tensor.name)
                self.named[total] = tensor
        self.totals[tensor] = total
        return total

    def _output(self, tensor: Tensor) -> Tensor:
        total = self._total(tensor)
        name = GRADIENT_PREFIX + tensor.name
        with ipu(tensor.ipu):
            if total is None:
                return ops.init(tensor.shape, tensor.dtype, name=name)
            if self.named.get(total) is tensor and total.producer is not None and total not in self.returned:
                self.returned.add(total)
                return total
            return ops.identity(total, name)

    # ----- activations -----
    def activation(self, tensor: Tensor) -> Tensor:
        if not isinstance(tensor, Tensor) or tensor.graph is not self.graph:
            raise ValueError(f"autodiff: a gradient rule asked for the forward value of {tensor!r}, which is not "
                             f"a tensor of the forward graph {self.graph.label!r}")
        if tensor not in self.activations:
            with self.grad_graph, ipu(tensor.ipu), _only_scopes(self.open_scopes):
                value: Tensor
                if isinstance(tensor, Constant):
                    value = constant(tensor.data, tensor.dtype, tensor.name)
                else:
                    value = graph_input(tensor.shape, tensor.dtype, tensor.name, meta_shape=tensor.meta_shape)
                    self.expected_inputs.append(ExpectedConnection._create(tensor, ExpectedConnectionType.Fwd))
            self.activations[tensor] = value
        return self.activations[tensor]

    def _prune(self, outputs: Sequence[Tensor]) -> None:
        """Drop ops whose results no output needs (gradients of inputs that need none), then the
        activations and constants nothing reads any more."""
        live = set(outputs)
        for op in reversed(self.grad_graph.ops):
            if op.modified or op.type in SIDE_EFFECT_TYPES or any(t in live for t in op.outputs):
                live.update(op.inputs)
            else:
                remove_op(op)
        for forward, value in list(self.activations.items()):
            if value not in live:
                remove_unread(self.grad_graph, value)
                del self.activations[forward]
        for value in self.grad_graph.constants:
            if value not in live:
                remove_unread(self.grad_graph, value)
        self.expected_inputs = [c for c in self.expected_inputs
                                if c.connection_type is ExpectedConnectionType.FwdGrad
                                or c.fwd_tensor in self.activations]

    def _expose_activations(self) -> None:
        """Make each activation an input or output of the forward graph."""
        graph = self.graph
        sites = call_sites(graph)
        for connection in self.expected_inputs:
            tensor = connection.fwd_tensor
            if connection.connection_type is ExpectedConnectionType.FwdGrad:
                continue
            if not graph.is_input(tensor) and not graph.is_output(tensor):
                self.run.log.add_output(graph, tensor, sites)
                tensor.meta[ACTIVATION_MARK] = True
                self.run.log.on_undo(lambda t=tensor: t.meta.pop(ACTIVATION_MARK, None))


def _needing_gradient(graph: Graph, required: Sequence[Tensor]) -> set[Tensor]:
    """The float tensors that depend on a required tensor through ops that pass gradients."""
    needs = {t for t in required if is_float(t)}
    for op in graph.ops:
        if op.type not in STOP_GRADIENT_TYPES and any(t in needs for t in op.inputs):
            needs.update(t for t in op.outputs if is_float(t))
    return needs


def _rule(op: Op, graph: Graph):
    definition = REGISTRY.get(op.type)
    if definition is not None and definition.grad is not None:
        return definition.grad
    if op.type in STOP_GRADIENT_TYPES:
        return None
    raise NotImplementedError(
        f"autodiff: op {op.name} ({op.type}) in graph {graph.label!r} lies on the path of a required "
        f"gradient but {op.type} has no gradient rule. Detach its input (t.detach()) if no gradient "
        "should flow through it, or leave the tensors that depend on it out of grads_required")


def _check_no_modifying_op(graph: Graph) -> None:
    """PopART differentiates no graph with an op that modifies one of its inputs in place (a var update,
    ``+=``, an in-place activation; a view such as ``concat_`` modifies nothing)."""
    for op in graph.ops:
        if op.modified:
            copying = op.type[:-1] if op.type.endswith("_") and REGISTRY.get(op.type[:-1]) is not None else ""
            hint = f"; use ops.{copying} instead" if copying else ""
            raise popart_exception(f"The graph {graph.id} contains a modifying op: {op.type} op {op.name}. Autodiff "
                                   f"cannot be used on graphs with inplace modifying ops{hint}.")


def sum_to_shape(grad: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum a broadcast gradient over the broadcast axes, back to ``shape``."""
    lead = grad.rank - len(shape)
    inner = [lead + i for i, d in enumerate(shape) if d == 1 and grad.shape[lead + i] != 1]
    axes = list(range(lead)) + inner
    if axes:  # summed over leading axes only, the result has the shape already
        grad = ops.sum(grad, axes, keepdims=bool(inner))
    return grad if grad.shape == tuple(shape) else ops.reshape(grad, shape)
