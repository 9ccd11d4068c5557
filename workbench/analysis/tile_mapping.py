"""The simulated tile allocator: which elements of each tensor live on which tile of its IPU.

Each tensor is spread linearly over consecutive tiles, as Poplar's linear mapping does: whole grains of
``GRAIN_BYTES`` (the exchange granularity), at least ``MIN_BYTES_PER_TILE`` per tile, as few tiles as
that allows up to every tile of the IPU. Successive tensors of an IPU start where the one before ended
(wrapping round), so small tensors land on different tiles. A pure function of the tensors and the
device: the same program maps the same way every time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

GRAIN_BYTES = 8
MIN_BYTES_PER_TILE = 128


@dataclass(frozen=True, slots=True)
class TensorToMap:
    """What the allocator needs of a tensor: its name, element count and size, and IPU."""

    name: str
    elements: int
    itemsize: int
    ipu: int


@dataclass(frozen=True, slots=True)
class TileMapping:
    """Per tensor, per tile of its IPU (``tiles_per_ipu`` lists), the ``(begin, end)`` element intervals
    held there; and the IPU of each tensor."""

    tiles_per_ipu: int
    intervals: dict[str, list[list[tuple[int, int]]]]
    ipus: dict[str, int]

    def bytes_per_tile(self, ipu: int, itemsizes: dict[str, int]) -> list[int]:
        """The bytes the mapped tensors of ``ipu`` place on each of its tiles."""
        totals = [0] * self.tiles_per_ipu
        for name, per_tile in self.intervals.items():
            if self.ipus[name] == ipu:
                for tile, spans in enumerate(per_tile):
                    totals[tile] += sum(end - begin for begin, end in spans) * itemsizes[name]
        return totals


def tile_mapping(tensors: list[TensorToMap], tiles_per_ipu: int) -> TileMapping:
    """Map ``tensors`` (in order) onto the tiles of their IPUs."""
    if tiles_per_ipu < 1:
        raise ValueError(f"a device needs at least one tile per IPU, got {tiles_per_ipu}")
    next_tile: dict[int, int] = {}
    intervals, ipus = {}, {}
    for tensor in tensors:
        per_tile: list[list[tuple[int, int]]] = [[] for _ in range(tiles_per_ipu)]
        start = next_tile.get(tensor.ipu, 0)
        if tensor.elements > 0:
            grain = max(1, GRAIN_BYTES // tensor.itemsize)
            minimum = max(grain, math.ceil(MIN_BYTES_PER_TILE / tensor.itemsize / grain) * grain)
            grains = math.ceil(tensor.elements / grain)
            per_tile_elements = max(minimum, math.ceil(grains / tiles_per_ipu) * grain)
            used = math.ceil(tensor.elements / per_tile_elements)
            for index in range(used):
                begin = index * per_tile_elements
                per_tile[(start + index) % tiles_per_ipu].append(
                    (begin, min(tensor.elements, begin + per_tile_elements)))
            next_tile[tensor.ipu] = (start + used) % tiles_per_ipu
        intervals[tensor.name] = per_tile
        ipus[tensor.name] = tensor.ipu
    return TileMapping(tiles_per_ipu, intervals, ipus)
