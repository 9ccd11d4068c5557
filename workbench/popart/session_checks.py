"""PopART's checks of a session's arguments before anything is built: the model's size against the
host memory, the anchors, gradient accumulation and pipelining; each refusal a ``popart_exception``
in PopART's words."""
from __future__ import annotations

import os
from typing import Any, Optional

from workbench.ir import Ir, Tensor
from workbench.onnx.loading import serialized_size
from workbench.ops.registry import op_def
from workbench.onnx.model import GraphBuilder
from workbench.runtime.options import default_run_options
from workbench.runtime.state.host_memory import require_host_memory

from .dataflow import DataFlow
from .errors import poplar_exception, popart_exception
from .node_attributes import IPU, RECOMPUTE
from .option_records import AccumulateOuterFragmentSchedule
from .options import RecomputationType, RecomputeType, SessionOptions, VirtualGraphMode

# Loading holds about three copies of the weights at its peak: the parsed model, the builder's weights
# and the program's (test_popart_model_memory.py measures it).
LOADING_COPIES = 3


def check_loading_memory(fnModel: Any) -> None:
    """HostMemoryError before reading a model whose loading would not fit the host memory."""
    size = serialized_size(fnModel)
    if size >= 1 << 20:
        source = "bytes" if isinstance(fnModel, (bytes, bytearray, memoryview)) else f"file {os.fspath(fnModel)}"
        require_host_memory(LOADING_COPIES * size, f"to load the model from {source}",
                            f"(about {LOADING_COPIES} times its {size:,} bytes)",
                            "Use a smaller model, or a host with more memory",
                            default_run_options().host_memory_limit)


def check_return_periods(data_flow: DataFlow) -> None:
    for anchor in data_flow.anchors():
        if data_flow.batchesPerStep() % data_flow.art(anchor).rp():
            raise popart_exception("Return period must be a factor of the number of batches per step")


def check_anchors(data_flow: DataFlow, builder: GraphBuilder) -> None:
    """Every anchor is a tensor of the model, with a return period dividing the batches per step."""
    for anchor in data_flow.anchors():
        if anchor not in builder.types:
            raise popart_exception(f"Anchor tensor `{anchor}' not in Ir Tensors. ")
    check_return_periods(data_flow)


def check_accumulation(options: SessionOptions, trains: bool) -> None:
    """Gradient accumulation: only when training, and a factor only when enabled."""
    if not options.enableGradientAccumulation and int(options.accumulationFactor) > 1:
        raise popart_exception("enableGradientAccumulation is false, but accumulationFactor > 1. Either enable "
                               "gradient accumulation, or set the accumulation factor to 1")
    if options.enableGradientAccumulation and not trains:
        raise popart_exception("Gradient Accumulation only available when training.")


def check_pipelining(options: SessionOptions, builder: GraphBuilder, data_flow: DataFlow,
                     loss: Optional[str] = None) -> None:
    """Pipelining needs the model split over IPUs and enough batches to fill every stage: the
    accumulation factor with gradient accumulation, else the batches per step. Training (``loss``
    given) adds a backward stage for each forward stage before the loss's: 2L+1 stages when the loss
    is in stage L (2L+2 with the forward-only program)."""
    if not options.enablePipelining:
        return
    if options.virtualGraphMode is VirtualGraphMode.Off:
        raise popart_exception("Pipelining requires the model to be split over IPUs: set "
                               "SessionOptions.virtualGraphMode to Manual (with builder.virtualGraph) or Auto")
    stage_of = _node_stages(builder)
    count = max(len(set(stage_of.values())), 1)
    if options.virtualGraphMode is VirtualGraphMode.Manual and count < 2:
        raise popart_exception(f"Pipelining requires more than 1 IPU (currently {count})")
    if loss is not None and stage_of:
        last = stage_of.get(loss, max(stage_of.values()))
        count = 2 * last + (2 if options.createImplicitPipeliningFwdOnlyProgram else 1)
    if options.enableGradientAccumulation:
        if int(options.accumulationFactor) < count:
            raise popart_exception("For pipelining, depth (gradient accumulation factor) must equal at least the "
                                   f"number of pipeline stages ({count})")
    elif data_flow.batchesPerStep() < count:
        raise popart_exception(f"For pipelining, depth (batchesPerStep) must equal at least the number of "
                               f"pipeline stages ({count})")


def _node_stages(builder: GraphBuilder) -> dict[str, int]:
    """The pipeline stage of each annotated node's outputs: its ``pipelineStage``, else (when no node
    has one) its virtual graph, as PopART infers stages from IPUs."""
    for key in ("__pipeline_stage", "__ipu_number"):
        stage_of = {output: int(a.i) for node in builder.nodes for a in node.attribute if a.name == key
                    for output in node.output}
        if stage_of:
            return stage_of
    return {}


def check_virtual_graphs(ir: Ir, num_ipus: int) -> None:
    """Every op runs on one of the ``num_ipus`` IPUs of a replica, or compiling stops at the first that
    does not (in PopART's words, naming a copied input by its source and the IPU it is copied to)."""
    for graph in ir.graphs:
        for op in graph.ops:
            if op_def(op.type).moves_to_ipu or 0 <= op.ipu < num_ipus:
                continue
            inputs = ", ".join(_input_name(t) for t in op.inputs)
            outputs = ", ".join(t.id for t in op.outputs)
            raise popart_exception(f"Op({op.name}, inputs=[{inputs}], outputs=[{outputs}]) has been assigned to an "
                                   f"invalid virtual graph {op.ipu}. numIPUs = {num_ipus}.")


def _input_name(tensor: Tensor) -> str:
    producer = tensor.producer
    if producer is not None and op_def(producer.type).moves_to_ipu:
        return f"{producer.inputs[0].id}_c{tensor.ipu}"
    return tensor.id


def check_virtual_graph_annotations(options: SessionOptions, builder: GraphBuilder) -> None:
    """With manual virtual graphs, the model's ops have an IPU each or none has (a constant is no op)."""
    if options.virtualGraphMode is not VirtualGraphMode.Manual:
        return
    counts: dict[int, int] = {}
    missing = []
    for node in builder.nodes:
        if node.op_type == "Constant":
            continue
        ipu = next((a.i for a in node.attribute if a.name == IPU), None)
        if ipu is None:
            missing.append(node)
        else:
            counts[ipu] = counts.get(ipu, 0) + 1
    if counts and missing:
        lines = [f"  {ipu} : {count}" for ipu, count in sorted(counts.items())]
        unset = [f"  {node.op_type}({node.name or node.output[0]})" for node in missing]
        raise popart_exception("Either all Ops must have their virtual graph ids set, or none must. Op count per "
                               "virtual graph id\n" + "\n".join(lines) + "\nOps with no virtual graph id :  \n"
                               + "\n".join(unset))


# The families of Poplar's engine options; a name in none of them is refused as Poplar refuses it.
ENGINE_OPTION_FAMILIES = ("autoReport.", "debug.", "opt.", "target.", "exchange.", "profiler.", "streamCallbacks.")


def check_engine_options(options: SessionOptions) -> None:
    """Every engine option must be one of Poplar's: a name outside their families is a typo."""
    for name in options.engineOptions:
        if not str(name).startswith(ENGINE_OPTION_FAMILIES):
            raise poplar_exception(f"engineOptions: '{name}' is not a Poplar engine option (their names start with "
                                   f"{', '.join(ENGINE_OPTION_FAMILIES)}). Unrecognised option '{name}'")


def check_gradient_clipping(options: SessionOptions, optimizer: Any) -> None:
    """Gradient clipping with pipelining needs the accumulate outer fragment scheduled other than serially."""
    if optimizer.clipNormSettings and options.enablePipelining and \
            options.accumulateOuterFragmentSettings.schedule is AccumulateOuterFragmentSchedule.Serial:
        raise popart_exception("Incompatible accumulateOuterFragmentSchedule used with gradient clipping, "
                               "SessionOptions::accumulateOuterFragmentSettings.schedule can not be set to "
                               "AccumulateOuterFragmentSchedule::Serial")


def check_recomputation(options: SessionOptions, builder: GraphBuilder) -> None:
    """Automatic recomputation and nodes the user marked for recomputation do not mix."""
    if options.autoRecomputation is RecomputationType.NoRecompute:
        return
    marked = any(a.name == RECOMPUTE and a.i == RecomputeType.Recompute.value for node in builder.nodes
                 for a in node.attribute)
    if marked and int(options.executionPhaseSettings.phases) < 2:
        raise popart_exception("A mixture of auto and manual recomputation is not supported")


def check_something_computed(data_flow: DataFlow, builder: GraphBuilder) -> None:
    """An inference program needs an anchor, and one whose anchors no node produces computes nothing:
    every node is pruned (a node with no outputs is kept for what it does, a store say)."""
    if not data_flow.anchors():
        raise popart_exception("User must specify an anchor tensor when doing inference.")
    produced = {output for node in builder.nodes for output in node.output}
    kept = any(not node.output for node in builder.nodes)
    if builder.nodes and not kept and not produced & set(data_flow.anchors()):
        raise popart_exception("All operations in the main graph were pruned, nothing to compute")


# ONNX nodes drawing random numbers; Dropout only while training (inference passes its input on).
RANDOM_NODES = ("RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike")
TRAINING_RANDOM_NODES = ("Dropout",)


def uses_random_seed(builder: GraphBuilder, trains: bool) -> bool:
    """Whether the model has random behaviour, which the session's random seed governs."""
    kinds = RANDOM_NODES + (TRAINING_RANDOM_NODES if trains else ())
    return any(node.op_type in kinds for node in builder.nodes)
