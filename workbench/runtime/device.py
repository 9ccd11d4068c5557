"""Simulated devices: what 'cpu', 'ipu_model' and 'ipu_hw' can do, with IPU Mk2 (GC200) figures."""
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
    supports_replication: bool = True
    supports_remote_buffers: bool = True

    @property
    def bytes_per_ipu(self) -> int:
        return self.tiles_per_ipu * self.bytes_per_tile


def device_for(device_desc: str, num_ipus: int | None = None) -> Device:
    """The simulated device for a popxl ``device_desc``."""
    if device_desc not in DEVICE_TYPES:
        raise ValueError(f"unknown device {device_desc!r}; expected one of {', '.join(DEVICE_TYPES)}")
    if device_desc == "cpu":
        return Device("cpu", 1, supports_replication=False, supports_remote_buffers=False)
    return Device(device_desc, num_ipus or 64)
