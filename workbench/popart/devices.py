"""Devices: ``DeviceManager`` hands out simulated devices, ``DeviceInfo`` describes one.

``createCpuDevice`` and ``createIpuModelDevice`` make devices of their own; ``acquireAvailableDevice``
and ``acquireDeviceById`` take IPUs of one simulated POD, numbered as ``gc-info`` numbers them: the
single IPUs first (ids 0..N-1), then the pairs, the fours, and so on up to the whole POD. A device
holds its IPUs while attached; ``detach`` gives them back.
"""
from __future__ import annotations

import enum
import os
import threading
from typing import Any, Mapping, Optional

from workbench.ir.device import Device

from .errors import popart_exception, poplar_exception

POD_IPUS = int(os.environ.get("WORKBENCH_POD_IPUS", "64"))
TILES_PER_IPU = 1472
SIM_TILES_PER_IPU = 4  # Poplar's IPU simulator, unless told otherwise


class DeviceType(enum.Enum):
    IpuModel = 0
    Cpu = 1
    Ipu = 2
    OfflineIpu = 3
    Sim = 4


class DeviceConnectionType(enum.Enum):
    Always = 0
    OnDemand = 1
    Never = 2


class DeviceSelectionCriterion(enum.Enum):
    First = 0
    Random = 1


class SyncPattern(enum.Enum):
    Full = 0
    SinglePipeline = 1
    ReplicaAndLadder = 2
    PingPong = 3  # the name of the seed guide's example (an older release's ReplicaAndLadder)


_KIND = {DeviceType.Cpu: "cpu", DeviceType.IpuModel: "ipu_model", DeviceType.Sim: "ipu_model",
         DeviceType.Ipu: "ipu_hw", DeviceType.OfflineIpu: "ipu_hw"}


class DeviceInfo:
    """One device: its id, type, IPUs and tiles, and whether it is attached."""

    def __init__(self, device_type: DeviceType, num_ipus: int, tiles_per_ipu: int = TILES_PER_IPU,
                 device_id: int = 0, ipus: tuple = (), connection: DeviceConnectionType = DeviceConnectionType.Always,
                 ipu_version: str = "ipu2"):
        self._type = device_type
        self._num_ipus = num_ipus
        self._tiles = tiles_per_ipu
        self._id = device_id
        self._ipus = ipus
        self._connection = connection
        self._ipu_version = ipu_version
        self._attached = False

    # ----- what it is -----
    @property
    def id(self) -> int:
        return self._id

    @property
    def numIpus(self) -> int:
        return self._num_ipus

    num_ipus = numIpus  # the name popxl's and PopART's test utilities read

    @property
    def tilesPerIPU(self) -> int:
        return self._tiles

    tilesPerIpu = tilesPerIPU

    @property
    def type(self) -> DeviceType:
        return self._type

    @property
    def connectionType(self) -> DeviceConnectionType:
        return self._connection

    @property
    def version(self) -> str:
        return self._ipu_version

    @property
    def ipuVersion(self) -> str:
        return self._ipu_version

    @property
    def driverIds(self) -> list[int]:
        return list(self._ipus)

    @property
    def isAttached(self) -> bool:
        return self._attached

    def workbench_device(self) -> Device:
        """The simulated device the runtime runs on."""
        kind = _KIND[self._type]
        if kind == "cpu":
            return Device("cpu", 1, supports_replication=False, supports_remote_buffers=False)
        return Device(kind, self._num_ipus, tiles_per_ipu=self._tiles)

    # ----- attaching -----
    def attach(self) -> bool:
        if self._attached:
            return True
        if self._ipus and not _POD.take(self._ipus):
            return False
        self._attached = True
        return True

    def tryAttachUntilTimeout(self) -> bool:
        return self.attach()

    def detach(self) -> None:
        if self._attached and self._ipus:
            _POD.give_back(self._ipus)
        self._attached = False

    def __enter__(self) -> "DeviceInfo":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.detach()

    def __repr__(self) -> str:
        return (f"Device Type:{self._type.name} Connection Type:{self._connection.name} Id:{self._id} "
                f"Version:{self._ipu_version} NumIPUs:{self._num_ipus} NumTilesPerIPU:{self._tiles}")

    __str__ = __repr__


class _Pod:
    """The simulated POD's IPUs that attached devices hold."""

    def __init__(self, size: int):
        self.size = size
        self.held: set[int] = set()
        self.lock = threading.Lock()

    def groups(self) -> list[tuple[int, tuple]]:
        """(device id, IPUs) of every device of the POD, in gc-info's order."""
        found, next_id, width = [], 0, 1
        while width <= self.size:
            for start in range(0, self.size - width + 1, width):
                found.append((next_id, tuple(range(start, start + width))))
                next_id += 1
            width *= 2
        return found

    def take(self, ipus: tuple) -> bool:
        with self.lock:
            if self.held & set(ipus):
                return False
            self.held |= set(ipus)
            return True

    def give_back(self, ipus: tuple) -> None:
        with self.lock:
            self.held -= set(ipus)


_POD = _Pod(POD_IPUS)


class DeviceManager:
    """Creates and acquires simulated devices."""

    def _ipu_device(self, device_type: DeviceType, options: Optional[Mapping[str, Any]],
                    default_tiles: int = TILES_PER_IPU) -> DeviceInfo:
        options = dict(options or {})
        known = {"numIPUs", "tilesPerIPU", "compileIPUCode", "ipuVersion", "syncPattern", "numIpus"}
        unknown = set(options) - known
        if unknown:
            raise popart_exception(f"Unknown device option(s) {sorted(unknown)}; expected some of {sorted(known)}")
        num_ipus = int(options.get("numIPUs", options.get("numIpus", 1)))
        tiles = int(options.get("tilesPerIPU", default_tiles)) or TILES_PER_IPU  # 0: every tile of the IPU
        if num_ipus < 1 or tiles < 1:
            raise popart_exception(f"numIPUs and tilesPerIPU must be positive, got {num_ipus} and {tiles}")
        return DeviceInfo(device_type, num_ipus, tiles, ipu_version=str(options.get("ipuVersion", "ipu2")))

    def createCpuDevice(self) -> DeviceInfo:
        return DeviceInfo(DeviceType.Cpu, 1, 1)

    def createIpuModelDevice(self, opts: Optional[Mapping[str, Any]] = None) -> DeviceInfo:
        """An IPU model: ``{"numIPUs": n, "tilesPerIPU": t}``."""
        return self._ipu_device(DeviceType.IpuModel, opts)

    def createSimDevice(self, opts: Optional[Mapping[str, Any]] = None) -> DeviceInfo:
        """A simulator device: ``{"numIPUs": n, "tilesPerIPU": t}``, of 4 tiles per IPU unless told, as Poplar's."""
        return self._ipu_device(DeviceType.Sim, opts, default_tiles=SIM_TILES_PER_IPU)

    def createOfflineIPUDevice(self, opts: Optional[Mapping[str, Any]] = None) -> DeviceInfo:
        """A device to compile for, not to run on."""
        return self._ipu_device(DeviceType.OfflineIpu, opts)

    def createOfflineIpuFromDeviceInfo(self, deviceInfo: DeviceInfo) -> DeviceInfo:
        return DeviceInfo(DeviceType.OfflineIpu, deviceInfo.numIpus, deviceInfo.tilesPerIPU)

    def enumerateDevices(self, pattern: SyncPattern = SyncPattern.Full, numIpus: int = 1,
                         deviceType: DeviceType = DeviceType.Ipu, connectionType: DeviceConnectionType =
                         DeviceConnectionType.Always, tilesPerIPU: int = 0) -> list[DeviceInfo]:
        """The POD's devices of ``numIpus`` IPUs."""
        return [DeviceInfo(DeviceType.Ipu, len(ipus), tilesPerIPU or TILES_PER_IPU, device_id, ipus,
                           connectionType) for device_id, ipus in _POD.groups() if len(ipus) == numIpus]

    def acquireAvailableDevice(self, numIpus: int = 1, tilesPerIpu: int = 0, pattern: SyncPattern = SyncPattern.Full,
                               connectionType: DeviceConnectionType = DeviceConnectionType.Always,
                               selectionCriterion: DeviceSelectionCriterion = DeviceSelectionCriterion.First
                               ) -> DeviceInfo:
        """The first free device of ``numIpus`` IPUs (a power of two), attached; an error if none is free."""
        device = self.tryAcquireAvailableDevice(numIpus, tilesPerIpu, pattern, connectionType, selectionCriterion)
        if device is None:
            raise popart_exception(f"Failed to acquire device with {numIpus} IPUs. Ensure that there are sufficient "
                                   f"IPUs available: every device of {numIpus} IPUs of the simulated POD is attached")
        return device

    def tryAcquireAvailableDevice(self, numIpus: int = 1, tilesPerIpu: int = 0,
                                  pattern: SyncPattern = SyncPattern.Full,
                                  connectionType: DeviceConnectionType = DeviceConnectionType.Always,
                                  selectionCriterion: DeviceSelectionCriterion = DeviceSelectionCriterion.First
                                  ) -> Optional[DeviceInfo]:
        """As ``acquireAvailableDevice``, but None when every such device is attached."""
        if numIpus < 1 or numIpus & (numIpus - 1) or numIpus > _POD.size:
            raise popart_exception(f"Failed to acquire device with {numIpus} IPUs. Ensure that there are sufficient "
                                   f"IPUs available: the simulated POD has devices of 1, 2, 4, ... {_POD.size} IPUs")
        for device in self.enumerateDevices(pattern, numIpus, connectionType=connectionType, tilesPerIPU=tilesPerIpu):
            if connectionType is not DeviceConnectionType.Always or device.attach():
                return device
        return None

    def acquireDeviceById(self, id: int, pattern: SyncPattern = SyncPattern.Full,  # noqa: A002
                          connectionType: DeviceConnectionType = DeviceConnectionType.Always) -> DeviceInfo:
        """Device ``id`` (as ``enumerateDevices`` numbers them), attached; an error if it is attached already."""
        device = self.tryAcquireDeviceById(id, pattern, connectionType)
        if device is None:
            raise popart_exception(f"Failed to acquire device with id '{id}': its IPUs are attached (detach the "
                                   "device holding them, or use tryAcquireDeviceById)")
        return device

    def tryAcquireDeviceById(self, id: int, pattern: SyncPattern = SyncPattern.Full,  # noqa: A002
                             connectionType: DeviceConnectionType = DeviceConnectionType.Always
                             ) -> Optional[DeviceInfo]:
        """As ``acquireDeviceById``, but None when its IPUs are attached."""
        groups = dict(_POD.groups())
        if id not in groups:
            raise poplar_exception(f"No such device set id: '{id}' (the simulated POD has ids 0 to "
                                   f"{len(groups) - 1})")
        device = DeviceInfo(DeviceType.Ipu, len(groups[id]), TILES_PER_IPU, id, groups[id], connectionType)
        if connectionType is DeviceConnectionType.Always and not device.attach():
            return None
        return device

    def setOnDemandAttachTimeout(self, attachTimeout: int) -> None:
        self._timeout = int(attachTimeout)
