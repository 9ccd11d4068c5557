"""What PopART logs at each step a script takes, under PopART's modules: ``builder`` (each node added, at
debug), ``session`` (each API call, at trace), ``ir`` (the model read and lowered), ``pattern`` (the
patterns in force), ``devicex`` (compiling for the device, its host streams, weight transfers and runs).
Each message is built only when its module logs at that level."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional

from workbench.ops.registry import op_def

from . import debug_info
from .introspection import versionString
from .logging_ import TRACE, python_logger
from .node_attributes import DEBUG_INFO_ID
from .patterns import PATTERNS, Patterns

if TYPE_CHECKING:
    from workbench.onnx.lowering import LoweredModel
    from workbench.onnx.model import GraphBuilder

_SESSION, _IR, _PATTERN, _DEVICEX, _BUILDER = (python_logger(m) for m in
                                                ("session", "ir", "pattern", "devicex", "builder"))


def _on(logger: logging.Logger, level: int) -> bool:
    return logger.isEnabledFor(level)


def node_added(domain: str, op_type: str, opset: int, inputs: list[str], outputs: int,
               name: str = "") -> debug_info.DebugInfo:
    """Log a node the builder adds; returns its ``popartbuilder`` DebugInfo (whose number the node keeps)."""
    if _on(_BUILDER, logging.DEBUG):
        _BUILDER.debug(f"Adding {domain}.{op_type} to builder opset:{opset}, numInputs:{len(inputs)} "
                       f"numOutputs:{outputs}")
    return debug_info.builder_node(name or op_type, {"category": "api", "api": op_type, "opset": f"{domain}:{opset}",
                                                     "opType": op_type, "inputs": list(inputs),
                                                     "numInputs": len(inputs), "numOutputs": outputs})


def _opid(op: Any) -> str:
    """PopART's name of an op: its ONNX node's op, or the op's own PopART class (``ai.graphcore.HostLoad:1``)."""
    if "onnx_op" in op.meta:
        return op.meta["onnx_op"]
    popart_class = op_def(op.type).popart_class.rsplit(".", 1)[-1]
    return f"ai.graphcore.{popart_class.removesuffix('Op') or op.type}:1"


def _parent(op: Any, optimizer_records: dict[tuple[str, str], Optional[int]]) -> Optional[int]:
    """The number of the record an op's record comes under: its node's (``__debug_info_id``) or, for an
    optimizer's update of a weight, a ``popartbuilder`` record of the optimizer's debug context made
    once per weight, as PopART's optimizers make one for each weight's update."""
    update = op.meta.get("optimizer_update")
    if update is None:
        return op.meta.get("popart", {}).get(DEBUG_INFO_ID)
    if update not in optimizer_records:
        context, weight = update
        record = debug_info.note(context, "popartbuilder", {"category": "optimizer", "weight": weight})
        optimizer_records[update] = record.getId() if record is not None else None
    return optimizer_records[update]


def created(name: str, builder: "GraphBuilder", lowered: "LoweredModel", patterns: Patterns, device: Any) -> None:
    """A session read its model, applied its patterns and lowered it."""
    if _on(_SESSION, TRACE):
        _SESSION.log(TRACE, f"Session::configureFromOnnx ({name})")
    if _on(_SESSION, logging.INFO):
        _SESSION.info(f"Popart version: {versionString()}")
    if _on(_IR, logging.INFO):
        _IR.info(f"Preparing the Ir of '{name}': {len(builder.nodes)} ONNX nodes, {len(builder.inputs)} inputs, "
                 f"{len(builder.initializers)} weights")
    if _on(_PATTERN, logging.DEBUG):
        enabled = [name for name in PATTERNS if patterns.isPatternEnabled(name)]
        _PATTERN.debug(f"Patterns in force: {', '.join(enabled) or 'none'}; InPlace {patterns.InPlace}")
    if _on(_IR, TRACE):
        for node in builder.nodes:
            _IR.log(TRACE, f"Lowering node '{node.name}' ({node.domain or 'ai.onnx'}.{node.op_type}) "
                           f"-> {', '.join(node.output)} on IPU {lowered.node_ipus.get(node.name, 0)}")
    if debug_info.collecting():
        optimizer_records: dict[tuple[str, str], Optional[int]] = {}
        for graph in lowered.ir.graphs:
            for op in graph.ops:
                values = {"category": "op", "opid": _opid(op), "graph": graph.name,
                          "opType": op.type, "ipu": op.ipu}
                debug_info.note(op.name, "popart", values, parent=_parent(op, optimizer_records))
            for tensor in graph.tensors:
                debug_info.note(tensor.name, "popart", {"graph": graph.name, "tensorInfo": str(tensor.spec)})
    if _on(_IR, logging.INFO):
        _IR.info(f"Ir of '{name}' ready: {sum(len(g.ops) for g in lowered.ir.graphs)} ops in "
                 f"{len(lowered.ir.graphs)} graphs, for {device}")


def prepared(device: Any, lowered: "LoweredModel", memory: Any) -> None:
    """The program was compiled for the device (``memory``: its memory report)."""
    if _on(_SESSION, TRACE):
        _SESSION.log(TRACE, "Session::prepareDevice()")
    if _on(_DEVICEX, logging.INFO):
        _DEVICEX.info(f"Graph compiled: the program for {device}")
    if _on(_DEVICEX, logging.DEBUG):
        for tensor_id in lowered.inputs:
            _DEVICEX.debug(f"Creating host-to-device FIFO {tensor_id}")
        for tensor_id in lowered.anchors:
            _DEVICEX.debug(f"Creating device-to-host FIFO {tensor_id}")
        for ipu in memory.ipus:
            _DEVICEX.debug(f"IPU {ipu.ipu}: peak tile memory {ipu.peak_bytes:,} of {ipu.tile_capacity:,} bytes")


def engine_loaded(device: Any) -> None:
    """The compiled program was loaded onto the (attached) device."""
    if _on(_SESSION, TRACE):
        _SESSION.log(TRACE, "Session::loadEngineAndConnectStreams()")
    if _on(_DEVICEX, logging.INFO):
        _DEVICEX.info(f"Engine loaded on {device}")


def weights(direction: str, names: Any) -> None:
    """Weights went ``"FromHost"`` or ``"ToHost"``."""
    if _on(_SESSION, TRACE):
        _SESSION.log(TRACE, f"Session::weights{direction}")
    if _on(_DEVICEX, logging.DEBUG):
        towards = "to the device" if direction == "FromHost" else "to the host"
        _DEVICEX.debug(f"Copying {len(names)} weights {towards}: {', '.join(names)}")


def optimizer_from_host(values: dict) -> None:
    """Changed optimiser values went to the device."""
    if _on(_SESSION, TRACE):
        _SESSION.log(TRACE, "Session::optimizerFromHost")
    if _on(_DEVICEX, logging.DEBUG):
        _DEVICEX.debug(f"Writing {len(values)} optimizer values to the device: "
                       f"{', '.join(f'{name}={value}' for name, value in sorted(values.items()))}")


def model_to_host(path: str) -> None:
    if _on(_SESSION, TRACE):
        _SESSION.log(TRACE, "Session::modelToHost")
    if _on(_SESSION, logging.INFO):
        _SESSION.info(f"Writing the model with its current weights to {path}")


def ran(debug_name: str, batches: int, replicas: int) -> None:
    if _on(_SESSION, TRACE):
        _SESSION.log(TRACE, f"Session::run {debug_name}".rstrip())
    if _on(_DEVICEX, logging.DEBUG):
        _DEVICEX.debug(f"Ran {batches} batches on {replicas} replica(s)")
