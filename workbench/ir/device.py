"""Simulated devices: what 'cpu', 'ipu_model' and 'ipu_hw' can do, with IPU Mk2 (GC200) figures.

The speeds and latencies feed the cost model (``workbench.analysis.cost_model``); they are the
published peak figures of a GC200 in an IPU-M2000; the latencies are order-of-magnitude estimates.
"""
from __future__ import annotations

from dataclasses import dataclass

DEVICE_TYPES = ("ipu_hw", "ipu_model", "cpu")


@dataclass(frozen=True, slots=True)
class Device:
    """A simulated IPU system. All kinds run on NumPy; they differ in what popxl allows on them."""

    kind: str
    num_ipus: int
    tiles_per_ipu: int = 1472
    bytes_per_tile: int = 624 * 1024
    clock_hz: float = 1.33e9
    streaming_memory_bytes: int = 64 * 2**30
    # Throughput per tile and clock cycle. Matrix products run on the tile's accumulating matrix
    # units (128 float16 or 32 float32 flops a cycle: ~250 and ~62.5 TFLOPS per IPU); other
    # arithmetic on the 64-bit vector unit (2 float32 or 4 float16 results a cycle).
    matmul_flops_per_tile_cycle_fp16: int = 128
    matmul_flops_per_tile_cycle_fp32: int = 32
    vector_bytes_per_tile_cycle: int = 8
    # Tile memory (~47.5 TB/s per IPU) and the on-chip exchange between tiles (~8 TB/s per IPU).
    memory_bytes_per_tile_cycle: int = 24
    exchange_bytes_per_tile_cycle: int = 4
    # Links off the chip, in bytes per second: IPU-Links between IPUs (320 GB/s), the host link
    # (100 Gbps) and Streaming Memory behind the gateway (a PCIe Gen4 x8 link, ~16 GB/s).
    ipu_link_bytes_per_second: float = 320e9
    host_bytes_per_second: float = 12.5e9
    streaming_memory_bytes_per_second: float = 16e9
    # Fixed latencies, in cycles: the sync of all tiles that ends each compute or exchange phase,
    # a sync between IPUs (over the Sync-Links), a host transfer and a Streaming Memory access.
    sync_cycles: int = 150
    ipu_sync_cycles: int = 1500
    host_latency_cycles: int = 13300
    streaming_memory_latency_cycles: int = 2660
    supports_replication: bool = True
    supports_remote_buffers: bool = True

    @property
    def bytes_per_ipu(self) -> int:
        return self.tiles_per_ipu * self.bytes_per_tile


def ipu_model_size(ipus_per_replica: int, replication_factor: int) -> int:
    """IPUs of the IPU model popxl makes for an Ir: the next power of two of all the IPUs it uses."""
    needed = max(1, ipus_per_replica * replication_factor)
    return 1 << (needed - 1).bit_length()


def device_for(device_desc: str, num_ipus: int | None = None) -> Device:
    """The simulated device for a popxl ``device_desc``."""
    if device_desc not in DEVICE_TYPES:
        raise ValueError(f"unknown device {device_desc!r}; expected one of {', '.join(DEVICE_TYPES)}")
    if device_desc == "cpu":
        return Device("cpu", 1, supports_replication=False, supports_remote_buffers=False)
    return Device(device_desc, num_ipus or 64)
