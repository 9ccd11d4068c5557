"""``popdist.popart``: what PopART sessions read from popdist (``import popdist.popart``)."""
from __future__ import annotations

from typing import Any, Optional

from workbench.popart.devices import DeviceConnectionType, DeviceInfo, DeviceType

from . import _settings

__all__ = ["configureSessionOptions", "getDevice"]


def configureSessionOptions(opts: Any) -> None:
    """Set the replication options of PopART ``SessionOptions`` for this instance.

    ``replicatedGraphCount`` is the local replica count; with several instances the graphs are
    distributed, with this instance's ``globalReplicaOffset`` in ``globalReplicationFactor`` replicas.
    """
    settings = _settings()
    opts.enableReplicatedGraphs = settings.num_local_replicas > 1 or settings.num_instances > 1
    opts.replicatedGraphCount = settings.num_local_replicas
    opts.enableDistributedReplicatedGraphs = settings.num_instances > 1
    opts.globalReplicationFactor = settings.num_total_replicas
    opts.globalReplicaOffset = settings.replica_index_offset


def getDevice(ipus_per_replica: Optional[int] = None, connectionType: Any = None) -> DeviceInfo:
    """This instance's simulated IPUs, as a PopART device: its local replicas times the IPUs of each
    replica. ``connectionType`` (``popart.DeviceConnectionType`` or its name) is kept; attaching a
    simulated device always succeeds.
    """
    settings = _settings()
    ipus = settings.ipus_per_replica if ipus_per_replica is None else ipus_per_replica
    if not isinstance(ipus, int) or isinstance(ipus, bool) or ipus < 1:
        raise ValueError(f"ipus_per_replica must be a positive int, got {ipus!r}")
    return DeviceInfo(DeviceType.Ipu, ipus * settings.num_local_replicas, device_id=settings.instance_index,
                      connection=_connection(connectionType))


def _connection(given: Any) -> DeviceConnectionType:
    if given is None:
        return DeviceConnectionType.Always
    if isinstance(given, DeviceConnectionType):
        return given
    if isinstance(given, str) and given in DeviceConnectionType.__members__:
        return DeviceConnectionType[given]
    raise ValueError(f"connectionType must be a popart.DeviceConnectionType or one of "
                     f"{list(DeviceConnectionType.__members__)}, got {given!r}")
