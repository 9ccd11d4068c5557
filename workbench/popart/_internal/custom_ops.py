"""C++ custom ops (popxl-addons builds them with ``cppimport``) on the workbench.

A custom op's Python binding is compiled from a ``.cpp`` file next to the module that imports it, against
the Poplar SDK and PopART's C++ API, neither of which the workbench has. Importing such a binding gives a
module that names the op and says so when used. The replica-strided collectives are ordinary collectives
over a strided replica grouping, and the tensor-parallel all-reduce an all-reduce whose forward or gradient
is an identity, so their bindings are emulated with the workbench's own ops, as are the distributed layer
norm, the sharded cross entropy, the scaled sum of squares and the applications' rotary embedding.
``workbench.custom_op_imports`` finds the modules; this file makes them.
"""
from __future__ import annotations

import types
from pathlib import Path
from typing import Any, Callable


class _StridedCollective:
    """A binding class ``XStridedOp`` whose ``createOpInGraph`` adds the workbench collective ``apply``."""

    def __init__(self, name: str, apply: Callable[..., Any]):
        self._name = name
        self._apply = apply

    def createOpInGraph(self, pb_graph, inputs: dict, outputs: dict, *args: Any):
        from workbench.popart._internal.ir.op_view import view_op

        graph = pb_graph._graph
        tensor = graph.get_tensor(inputs[0])
        with graph:
            out = self._apply(graph, tensor, *args)
        return view_op(out.producer)


def _grouping(graph, stride: int, group_size: int):
    return graph.ir.replica_grouping(stride=stride, group_size=group_size)


def _all_gather(graph, t, stride, group_size, *settings):
    """The C++ op gathers flat: ``group_size * t.nelms`` elements, the members' tensors in turn."""
    from workbench.ops.collectives import replicated_all_gather
    from workbench.ops.shape import reshape
    flat = t if t.rank == 1 else reshape(t, (t.nelms,))
    return replicated_all_gather(flat, group=_grouping(graph, stride, group_size))


def _reduce_scatter(graph, t, op, stride, group_size, sharded_output=False, *settings):
    from workbench.ops.collectives import replicated_reduce_scatter
    return replicated_reduce_scatter(t, _reduction(op), group=_grouping(graph, stride, group_size),
                                     configure_output_for_replicated_tensor_sharding=bool(sharded_output))


def _check_plain_reduce(identical_inputs: bool, identical_grad_inputs: bool) -> None:
    """The in-place all-reduce reduces forward and backward; the C++ op's in-place variants that skip
    either are not emulated."""
    if identical_inputs or identical_grad_inputs:
        raise NotImplementedError(
            "ReplicatedAllReduceStridedInplaceOp with identical_inputs or identical_grad_inputs is not emulated on "
            "the workbench; use replicated_all_reduce_strided_identical_inputs / _identical_grad_inputs (not in "
            "place), which are")


def _all_reduce(graph, t, op, stride, group_size, identical_inputs=False, identical_grad_inputs=False, *settings):
    return _tensor_parallel_all_reduce(graph, t, op, _grouping(graph, stride, group_size), identical_inputs,
                                       identical_grad_inputs)


def _tensor_parallel_all_reduce(graph, t, op, group, identical_inputs=False, identical_grad_inputs=False,
                                *settings):
    """An all-reduce whose forward or gradient is an identity once PopART's OpToIdentity pattern has run."""
    from workbench.ops.collectives import replicated_all_reduce
    from workbench.ops.identical_all_reduce import identical_all_reduce
    group = getattr(group, "_grouping", group)  # the _ir.ReplicaGrouping view popxl-addons passes
    if not (identical_inputs or identical_grad_inputs):
        return replicated_all_reduce(t, _reduction(op), group=group)
    return identical_all_reduce(t, _reduction(op), group, identical_inputs=bool(identical_inputs),
                                identical_grad_inputs=bool(identical_grad_inputs))


def _all_reduce_inplace(graph, t, op, stride, group_size, identical_inputs=False, identical_grad_inputs=False,
                        *settings):
    from workbench.ops.collectives import replicated_all_reduce_
    _check_plain_reduce(identical_inputs, identical_grad_inputs)
    return replicated_all_reduce_(t, _reduction(op), group=_grouping(graph, stride, group_size))


class _RotaryBinding:
    """``RotaryPosEmbedOp``: ``createOpInGraph(graph, {0: x, 1: sin, 2: cos}, {0: out_id}, rotary_dim, settings)``
    adds the workbench's ``rotary_pos_embed``; popxl-addons' op rotates neighbouring pairs, the copy in
    Graphcore's Llama and Dolly applications two halves (``halves``)."""

    def __init__(self, halves: bool):
        self._halves = halves

    def createOpInGraph(self, pb_graph, inputs: dict, outputs: dict, rotary_dim: int, *settings: Any):
        from workbench.ops.rotary import rotary_pos_embed
        from workbench.popart._internal.ir.op_view import view_op

        graph = pb_graph._graph
        x, sin, cos = (graph.get_tensor(inputs[i]) for i in range(3))
        with graph:
            op = rotary_pos_embed(x, sin, cos, rotary_dim, halves=self._halves, name=outputs.get(0)).producer
        assert op is not None
        return view_op(op)


class _LayerNormDistributedBinding:
    """popxl-addons' ``LayerNormDistributedOp``: ``createOpInGraph(graph, {0: x, 1: scale, 2: bias}, outputs,
    epsilon, replica_grouping, settings)`` adds the workbench's ``layer_norm_distributed``."""

    def createOpInGraph(self, pb_graph, inputs: dict, outputs: dict, epsilon: float, group, *settings: Any):
        from workbench.ops.layer_norm_distributed import layer_norm_distributed
        from workbench.popart._internal.ir.op_view import view_op

        graph = pb_graph._graph
        x, scale, bias = (graph.get_tensor(inputs[i]) for i in range(3))
        with graph:
            op = layer_norm_distributed(x, scale, bias, epsilon, getattr(group, "_grouping", group))[0].producer
        assert op is not None
        return view_op(op)


class _CrossEntropyShardedBinding:
    """popxl-addons' ``CrossEntropyShardedOp``: ``createOpInGraph(graph, {0: logits, 1: labels}, outputs, group,
    availableMemoryProportion, settings)`` adds the workbench's ``cross_entropy_sharded``."""

    def createOpInGraph(self, graph, inputs: dict, outputs: dict, group, availableMemoryProportion: float = 0.4,
                        settings: Any = None):
        from workbench.ops.cross_entropy_sharded import cross_entropy_sharded
        from workbench.popart._internal.ir.op_view import view_op

        wb_graph = graph._graph
        logits, labels = (wb_graph.get_tensor(inputs[i]) for i in range(2))
        with wb_graph:
            op = cross_entropy_sharded(logits, labels, getattr(group, "_grouping", group),
                                       availableMemoryProportion)[0].producer
        assert op is not None
        return view_op(op)


class _GradReduceSquareAddBinding:
    """popxl-addons' ``GradReduceSquareAddOp``: ``createOpInGraph(graph, {0: t, 1: scale}, outputs, settings)``
    adds the workbench's ``grad_reduce_square_add``."""

    def createOpInGraph(self, pb_graph, inputs: dict, outputs: dict, *settings: Any):
        from workbench.ops.grad_reduce_square_add import grad_reduce_square_add
        from workbench.popart._internal.ir.op_view import view_op

        graph = pb_graph._graph
        t, scale = (graph.get_tensor(inputs[i]) for i in range(2))
        with graph:
            op = grad_reduce_square_add(t, scale).producer
        assert op is not None
        return view_op(op)


class _GroupQuantizeDecompressBinding:
    """popxl-addons' ``GroupQuantizeDecompressOp``: ``createOpInGraph(graph, {0: x, 1: scale, 2: bias}, outputs,
    settings)`` adds the workbench's ``group_quantize_decompress``."""

    def createOpInGraph(self, pb_graph, inputs: dict, outputs: dict, *settings: Any):
        from workbench.ops.group_quantize_decompress import group_quantize_decompress
        from workbench.popart._internal.ir.op_view import view_op

        graph = pb_graph._graph
        x, scale, bias = (graph.get_tensor(inputs[i]) for i in range(3))
        with graph:
            op = group_quantize_decompress(x, scale, bias).producer
        assert op is not None
        return view_op(op)


def _reduction(op) -> str:
    return op.value if hasattr(op, "value") else str(op)


ROTARY = "rotary_pos_embed_binding"
EMULATED: dict[str, dict[str, Any]] = {
    "replicated_all_gather_strided_binding": {
        "ReplicatedAllGatherStridedOp": _StridedCollective("ReplicatedAllGatherStridedOp", _all_gather)},
    "replicated_reduce_scatter_strided_binding": {
        "ReplicatedReduceScatterStridedOp": _StridedCollective("ReplicatedReduceScatterStridedOp", _reduce_scatter)},
    "replicated_all_reduce_strided_binding": {
        "ReplicatedAllReduceStridedOp": _StridedCollective("ReplicatedAllReduceStridedOp", _all_reduce),
        "ReplicatedAllReduceStridedInplaceOp": _StridedCollective("ReplicatedAllReduceStridedInplaceOp",
                                                                  _all_reduce_inplace)},
    "replicated_all_reduce_TP_binding": {
        "ReplicatedAllReduceTPOp": _StridedCollective("ReplicatedAllReduceTPOp", _tensor_parallel_all_reduce)},
    ROTARY: {"RotaryPosEmbedOp": _RotaryBinding(halves=False)},
    "layer_norm_distributed_binding": {"LayerNormDistributedOp": _LayerNormDistributedBinding()},
    "crossentropysharded_binding": {"CrossEntropyShardedOp": _CrossEntropyShardedBinding()},
    "grad_reduce_square_add_binding": {"GradReduceSquareAddOp": _GradReduceSquareAddBinding()},
    "group_quantize_decompress_binding": {"GroupQuantizeDecompressOp": _GroupQuantizeDecompressBinding()},
}


class UnbuildableBinding(types.ModuleType):
    """The module of a C++ custom op the workbench cannot build: any use names the op and the reason."""

    def __init__(self, name: str, source: Path):
        super().__init__(name)
        self.__file__ = str(source)
        self._source = source

    def __getattr__(self, attribute: str):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise NotImplementedError(
            f"{attribute} of the C++ custom op {self._source.name} ({self.__name__}) is not available on the IPU "
            "Workbench: custom ops are compiled against the Poplar SDK and PopART's C++ API, which the workbench "
            "does not have. Build the same computation from popxl ops, or run it on an IPU with the Poplar SDK.")


def binding_module(name: str, source: Path) -> types.ModuleType:
    """The module for C++ source ``source`` imported as ``name``: an emulation, or one that refuses use."""
    short = name.rsplit(".", 1)[-1]
    if short in EMULATED:
        module = types.ModuleType(name, f"Emulation of the C++ custom op {source.name} with workbench ops.")
        module.__file__ = str(source)
        bindings = EMULATED[short]
        if short == ROTARY and not name.startswith("popxl_addons."):
            bindings = {"RotaryPosEmbedOp": _RotaryBinding(halves=True)}  # an application's copy of the op
        for attribute, binding in bindings.items():
            setattr(module, attribute, binding)
        return module
    return UnbuildableBinding(name, source)
