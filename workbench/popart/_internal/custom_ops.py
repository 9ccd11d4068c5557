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


class _EmulatedOp:
    """A binding class ``XOp`` whose ``createOpInGraph(graph, inputs, outputs, *args, **kwargs)`` adds the
    workbench op that ``build(graph, outputs, *input_tensors, *args, **kwargs)`` makes, from the first
    ``inputs`` input tensors and the C++ op's further arguments, and returns a view of it."""

    def __init__(self, build: Callable[..., Any], inputs: int):
        self._build = build
        self._inputs = inputs

    def createOpInGraph(self, pb_graph, inputs: dict, outputs: dict, *args: Any, **kwargs: Any):
        from workbench.popart._internal.ir.op_view import view_op

        graph = pb_graph._graph
        tensors = [graph.get_tensor(inputs[i]) for i in range(self._inputs)]
        with graph:
            op = self._build(graph, outputs, *tensors, *args, **kwargs).producer
        assert op is not None
        return view_op(op)


def _grouping(graph, stride: int, group_size: int):
    return graph.ir.replica_grouping(stride=stride, group_size=group_size)


def _group(group):
    """The workbench grouping of the ``_ir.ReplicaGrouping`` view popxl-addons passes (or of a grouping)."""
    return getattr(group, "_grouping", group)


def _all_gather(graph, outputs, t, stride, group_size, *settings):
    """The C++ op gathers flat: ``group_size * t.nelms`` elements, the members' tensors in turn."""
    from workbench.ops.collectives import replicated_all_gather
    from workbench.ops.shape import reshape
    flat = t if t.rank == 1 else reshape(t, (t.nelms,))
    return replicated_all_gather(flat, group=_grouping(graph, stride, group_size))


def _reduce_scatter(graph, outputs, t, op, stride, group_size, sharded_output=False, *settings):
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


def _all_reduce(graph, outputs, t, op, stride, group_size, identical_inputs=False, identical_grad_inputs=False,
                *settings):
    return _tensor_parallel_all_reduce(graph, outputs, t, op, _grouping(graph, stride, group_size),
                                       identical_inputs, identical_grad_inputs)


def _tensor_parallel_all_reduce(graph, outputs, t, op, group, identical_inputs=False, identical_grad_inputs=False,
                                *settings):
    """An all-reduce whose forward or gradient is an identity once PopART's OpToIdentity pattern has run."""
    from workbench.ops.collectives import replicated_all_reduce
    from workbench.ops.identical_all_reduce import identical_all_reduce
    if not (identical_inputs or identical_grad_inputs):
        return replicated_all_reduce(t, _reduction(op), group=_group(group))
    return identical_all_reduce(t, _reduction(op), _group(group), identical_inputs=bool(identical_inputs),
                                identical_grad_inputs=bool(identical_grad_inputs))


def _all_reduce_inplace(graph, outputs, t, op, stride, group_size, identical_inputs=False,
                        identical_grad_inputs=False, *settings):
    from workbench.ops.collectives import replicated_all_reduce_
    _check_plain_reduce(identical_inputs, identical_grad_inputs)
    return replicated_all_reduce_(t, _reduction(op), group=_grouping(graph, stride, group_size))


def _rotary(halves: bool) -> Callable[..., Any]:
    """``RotaryPosEmbedOp`` (inputs x, sin, cos; then ``rotary_dim``): popxl-addons' op rotates neighbouring
    pairs, the copy in Graphcore's Llama and Dolly applications two halves (``halves``)."""
    def build(graph, outputs, x, sin, cos, rotary_dim: int, *settings):
        from workbench.ops.rotary import rotary_pos_embed
        return rotary_pos_embed(x, sin, cos, rotary_dim, halves=halves, name=outputs.get(0))
    return build


def _layer_norm_distributed(graph, outputs, x, scale, bias, epsilon: float, group, *settings):
    from workbench.ops.layer_norm_distributed import layer_norm_distributed
    return layer_norm_distributed(x, scale, bias, epsilon, _group(group))[0]


def _cross_entropy_sharded(graph, outputs, logits, labels, group, availableMemoryProportion: float = 0.4,
                           settings: Any = None):
    from workbench.ops.cross_entropy_sharded import cross_entropy_sharded
    return cross_entropy_sharded(logits, labels, _group(group), availableMemoryProportion)[0]


def _grad_reduce_square_add(graph, outputs, t, scale, *settings):
    from workbench.ops.grad_reduce_square_add import grad_reduce_square_add
    return grad_reduce_square_add(t, scale)


def _group_quantize_decompress(graph, outputs, x, scale, bias, *settings):
    from workbench.ops.group_quantize_decompress import group_quantize_decompress
    return group_quantize_decompress(x, scale, bias)


def _reduction(op) -> str:
    return op.value if hasattr(op, "value") else str(op)


ROTARY = "rotary_pos_embed_binding"
# The module of each emulated binding, its op classes, and for each the builder and its count of input tensors.
EMULATED: dict[str, dict[str, _EmulatedOp]] = {
    "replicated_all_gather_strided_binding": {"ReplicatedAllGatherStridedOp": _EmulatedOp(_all_gather, 1)},
    "replicated_reduce_scatter_strided_binding": {
        "ReplicatedReduceScatterStridedOp": _EmulatedOp(_reduce_scatter, 1)},
    "replicated_all_reduce_strided_binding": {
        "ReplicatedAllReduceStridedOp": _EmulatedOp(_all_reduce, 1),
        "ReplicatedAllReduceStridedInplaceOp": _EmulatedOp(_all_reduce_inplace, 1)},
    "replicated_all_reduce_TP_binding": {"ReplicatedAllReduceTPOp": _EmulatedOp(_tensor_parallel_all_reduce, 1)},
    ROTARY: {"RotaryPosEmbedOp": _EmulatedOp(_rotary(halves=False), 3)},
    "layer_norm_distributed_binding": {"LayerNormDistributedOp": _EmulatedOp(_layer_norm_distributed, 3)},
    "crossentropysharded_binding": {"CrossEntropyShardedOp": _EmulatedOp(_cross_entropy_sharded, 2)},
    "grad_reduce_square_add_binding": {"GradReduceSquareAddOp": _EmulatedOp(_grad_reduce_square_add, 2)},
    "group_quantize_decompress_binding": {"GroupQuantizeDecompressOp": _EmulatedOp(_group_quantize_decompress, 3)},
}
# Graphcore's applications carry their own copy of the rotary op, which rotates two halves.
APPLICATIONS_ROTARY = {"RotaryPosEmbedOp": _EmulatedOp(_rotary(halves=True), 3)}


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
            bindings = APPLICATIONS_ROTARY
        for attribute, binding in bindings.items():
            setattr(module, attribute, binding)
        return module
    return UnbuildableBinding(name, source)
