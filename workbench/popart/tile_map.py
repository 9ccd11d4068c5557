"""``session.getTensorTileMap()`` and ``POPART_TENSOR_TILE_MAP``: the tile mapping of every tensor of a
session's model by the simulated tile allocator (``workbench.analysis.tile_mapping``), in PopART's form:
``{tensor id: [per tile: [[begin, end], ...]]}``, written as JSON to ``logDir``/the file named by the
variable when the device is prepared."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from workbench.analysis.tile_mapping import TensorToMap, TileMapping, tile_mapping
from workbench.onnx import dtypes
from workbench.onnx.model import GraphBuilder
from workbench.onnx.lowering import LoweredModel

from .errors import popart_exception


def session_tile_mapping(builder: GraphBuilder, lowered: LoweredModel, tiles_per_ipu: int) -> TileMapping:
    """Every tensor of the model with a known shape (inputs, weights, node outputs), each on the IPU of
    the node that makes it (inputs: of the first node that reads them; weights: their variable's)."""
    ipu_of: dict[str, int] = {}
    for node in builder.nodes:
        ipu = lowered.node_ipus.get(node.name, 0)
        for name in node.output:
            ipu_of.setdefault(name, ipu)
        for name in node.input:
            ipu_of.setdefault(name, ipu)
    for name, variable in lowered.weights.items():
        ipu_of[name] = variable.ipu or 0
    tensors = []
    for name in [*builder.inputs, *builder.initializers, *(o for n in builder.nodes for o in n.output)]:
        ttype = lowered.types.get(name)
        if ttype is None or ttype.shape is None or any(d is None for d in ttype.shape) or not ttype.elem_type:
            continue
        itemsize = dtypes.numpy_dtype(ttype.elem_type).itemsize
        tensors.append(TensorToMap(name, int(np.prod(ttype.shape, dtype=np.int64)), itemsize, ipu_of.get(name, 0)))
    return tile_mapping(list({t.name: t for t in tensors}.values()), tiles_per_ipu)


@dataclass(frozen=True, slots=True)
class TileUse:
    """What one tile of an IPU holds of the mapped tensors: bytes in all, and bytes per tensor."""

    tile: int
    bytes: int
    tensors: dict[str, int]


def tile_uses(mapping: TileMapping, itemsizes: Mapping[str, int], ipu: int) -> list[TileUse]:
    """Per tile of ``ipu`` (every one, empty ones included), the tensors mapped there and their bytes."""
    per_tile: list[dict[str, int]] = [{} for _ in range(mapping.tiles_per_ipu)]
    for name, spans_per_tile in mapping.intervals.items():
        if mapping.ipus[name] != ipu:
            continue
        for tile, spans in enumerate(spans_per_tile):
            held = sum(end - begin for begin, end in spans) * itemsizes[name]
            if held:
                per_tile[tile][name] = held
    return [TileUse(tile, sum(held.values()), held) for tile, held in enumerate(per_tile)]


def itemsizes_of(mapping: TileMapping, lowered: LoweredModel) -> dict[str, int]:
    """The bytes of one element of each tensor of ``mapping``."""
    return {name: dtypes.numpy_dtype(lowered.types[name].elem_type).itemsize for name in mapping.intervals}


def as_popart_map(mapping: TileMapping) -> dict[str, list[list[tuple[int, int]]]]:
    return {name: [list(spans) for spans in per_tile] for name, per_tile in mapping.intervals.items()}


def save_if_asked(mapping: Callable[[], TileMapping], log_dir: str) -> None:
    """Write the map (made only then) to ``POPART_TENSOR_TILE_MAP`` (under ``logDir``) when the variable
    is set."""
    file_name = os.environ.get("POPART_TENSOR_TILE_MAP", "")
    if not file_name:
        return
    made = mapping()
    path = Path(log_dir or ".") / file_name
    try:
        path.write_text(json.dumps({name: [[list(span) for span in spans] for spans in per_tile]
                                    for name, per_tile in made.intervals.items()}), encoding="utf-8")
    except OSError as error:
        raise popart_exception(f"Unable to open file '{path}': {error.strerror}") from None
