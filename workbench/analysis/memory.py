"""Memory per IPU against a device's capacities: peak tile memory and Streaming Memory.

Tile memory peaks at the step where ``tensor_liveness``'s total (variables, constants, live
intermediates and live code) is largest. Streaming Memory holds the remote buffers (on the IPU of the
ops or variables that use them, IPU 0 when none does) and the code of every graph that a
``remote_code_load`` loads (one copy, however many loads). Figures are per replica: every replica has
the same, on the ``Device`` given.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Optional

from workbench.ir import Ir, RemoteBuffer, Tensor
from workbench.ir.device import Device
from workbench.ops.multi_exchange import transfers_of

from .code_size import graph_code_bytes
from .flatten import FlatSchedule
from .tensor_liveness import Allocation, StepMemory, TensorLiveness, tensor_liveness


@dataclass(slots=True)
class IpuMemory:
    """One IPU: the tile-memory peak (its step, breakdown and largest live tensors) and Streaming
    Memory (remote buffers plus offloaded code), with the device's capacities."""

    ipu: int
    peak_bytes: int
    peak_step: Optional[int]
    peak: Optional[StepMemory]
    largest_at_peak: list[Allocation]
    remote_buffer_bytes: int
    streaming_code_bytes: int
    tile_capacity: int
    streaming_capacity: int

    @property
    def streaming_bytes(self) -> int:
        return self.remote_buffer_bytes + self.streaming_code_bytes

    @property
    def tile_fraction(self) -> float:
        return self.peak_bytes / self.tile_capacity


@dataclass(slots=True)
class CapacityProblem:
    """Something that does not fit: ``kind`` is 'tile_memory', 'streaming_memory' or 'ipus'."""

    kind: str
    ipu: Optional[int]
    needed: int
    available: int

    @property
    def message(self) -> str:
        if self.kind == "ipus":
            return f"the program needs {self.needed} IPUs but the device has {self.available}"
        where = "tile memory" if self.kind == "tile_memory" else "Streaming Memory"
        return (f"IPU {self.ipu} needs {self.needed:,} bytes of {where} but has {self.available:,} "
                f"({self.needed - self.available:,} over)")


@dataclass(slots=True)
class MemoryReport:
    ipus: list[IpuMemory]
    over_capacity: list[CapacityProblem]
    ipus_needed: int
    ipus_available: int
    liveness: TensorLiveness

    @property
    def fits(self) -> bool:
        return not self.over_capacity

    def ipu(self, ipu: int) -> IpuMemory:
        for record in self.ipus:
            if record.ipu == ipu:
                return record
        raise KeyError(f"IPU {ipu} runs nothing of this program")


def memory(ir: Ir, device: Device, liveness: Optional[TensorLiveness] = None, top: int = 10) -> MemoryReport:
    """Peak tile memory and Streaming Memory per IPU of ``ir`` on ``device``, and what does not fit.
    ``top`` bounds ``largest_at_peak``. Code is sized for the device's tiles per IPU."""
    liveness = tensor_liveness(ir, tiles_per_ipu=device.tiles_per_ipu) if liveness is None else liveness
    remote = _remote_buffer_bytes(ir)
    offloaded = _offloaded_code_bytes(liveness, device.tiles_per_ipu)
    records, problems = [], []
    ipus = sorted(set(liveness.ipus) | set(remote) | set(offloaded))
    for ipu in ipus:
        steps = liveness.steps.get(ipu, [])
        peak = max(steps, key=lambda record: record.total) if steps else None
        if peak is None:
            peak_bytes = sum(a.nbytes for a in liveness.always_live(ipu))
            live = liveness.always_live(ipu)
        else:
            peak_bytes = peak.total
            live = liveness.live_at(peak.step, ipu)
        largest = sorted(live, key=lambda a: -a.nbytes)[:top]
        record = IpuMemory(ipu, peak_bytes, peak.step if peak else None, peak, largest, remote.get(ipu, 0),
                           offloaded.get(ipu, 0), device.bytes_per_ipu, device.streaming_memory_bytes)
        records.append(record)
        if record.peak_bytes > record.tile_capacity:
            problems.append(CapacityProblem("tile_memory", ipu, record.peak_bytes, record.tile_capacity))
        if record.streaming_bytes > record.streaming_capacity:
            problems.append(CapacityProblem("streaming_memory", ipu, record.streaming_bytes,
                                            record.streaming_capacity))
    needed = (max(ipus) + 1) * ir.replication_factor
    if needed > device.num_ipus:
        problems.insert(0, CapacityProblem("ipus", None, needed, device.num_ipus))
    return MemoryReport(records, problems, needed, device.num_ipus, liveness)


@dataclass(slots=True)
class StreamingTransfer:
    """A step that moves a tensor between Streaming Memory and an IPU: ``direction`` 'load' brings
    ``tensor`` (the loaded value) onto ``ipu``, 'store' writes it (the stored value) back."""

    step: int
    ipu: int
    direction: str
    tensor: Tensor
    buffer: RemoteBuffer

    @property
    def nbytes(self) -> int:
        return self.tensor.nbytes


TRANSFER_DIRECTIONS = {"remote_load": "load", "remote_load_": "load", "remote_store": "store"}


def streaming_transfers(flat: FlatSchedule) -> list[StreamingTransfer]:
    """Every remote load and store of the flattened schedule, those merged into a MultiExchange too, in
    step order: where a phased program brings each layer's weights in and writes them back."""
    transfers = []
    for step in flat.steps:
        for part in transfers_of(step.op):
            direction = TRANSFER_DIRECTIONS.get(part.type)
            if direction is not None:
                tensor = part.outputs[0] if direction == "load" else part.inputs[0]
                transfers.append(StreamingTransfer(step.index, step.op.ipu, direction, tensor, part.attrs["buffer"]))
    return transfers


def _remote_buffer_bytes(ir: Ir) -> dict[int, int]:
    """Bytes of remote buffers per IPU, placed on the IPU of the first op or variable using them."""
    placed: dict[RemoteBuffer, int] = {}
    for graph in ir.graphs:
        for op in graph.ops:
            for value in op.attrs.values():
                if isinstance(value, RemoteBuffer):
                    placed.setdefault(value, op.ipu)
    for variable in ir.variables:
        buffer = getattr(variable, "remote_buffer", None)
        if buffer is not None:
            placed.setdefault(buffer, variable.ipu)
    per_ipu: dict[int, int] = {}
    for buffer in ir.remote_buffers:
        ipu = placed.get(buffer, 0)
        per_ipu[ipu] = per_ipu.get(ipu, 0) + buffer.nbytes
    return per_ipu


def _offloaded_code_bytes(liveness: TensorLiveness, tiles_per_ipu: int) -> dict[int, int]:
    per_ipu: dict[int, int] = {}
    for graph, record in liveness.code.items():
        if record.load_steps:
            for ipu, nbytes in graph_code_bytes(graph, tiles_per_ipu).items():
                per_ipu[ipu] = per_ipu.get(ipu, 0) + nbytes
    return per_ipu


def surely_fits(ir: Ir, device: Device) -> bool:
    """True when the program fits even if every tensor of every call frame and all code were live
    at once: a cheap bound that spares the full analysis for the programs that cannot overflow."""
    frames = _frames_per_graph(ir)
    tile: dict[int, int] = defaultdict(int)
    code_total = 0
    for graph, count in frames.items():
        for tensor in graph.device_tensors:
            tile[tensor.ipu] += count * tensor.nbytes
        for ipu, nbytes in graph_code_bytes(graph, device.tiles_per_ipu).items():
            tile[ipu] += nbytes
            code_total += nbytes
    streaming = sum(buffer.nbytes for buffer in ir.remote_buffers) + code_total
    return (all(nbytes <= device.bytes_per_ipu for nbytes in tile.values())
            and streaming <= device.streaming_memory_bytes)


def _frames_per_graph(ir: Ir) -> dict:
    """How many frames of each reachable graph the flattened schedule holds: one per call path."""
    counts: dict = defaultdict(int)

    def visit(graph, paths: int) -> None:
        counts[graph] += paths
        for op in graph.ops:
            for callee in op.called_graphs:
                visit(callee, paths)

    visit(ir.main_graph, 1)
    return counts
