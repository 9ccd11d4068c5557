"""popdist on the IPU Workbench: ``import popdist`` resolves to this module.

Every instance of a job is one process (launched by ``poprun`` or ``mpiexec``) running the same script;
its local replicas are threads. These functions read the settings of the calling instance; MPI is only
loaded when a job has several instances.

>>> import popdist
>>> if popdist.isPopdistEnvSet():
...     ir = popxl.Ir(replication="popdist")   # replication_factor: global; instance_replication_factor: local
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Iterable, Union

from workbench.ir.popdist_settings import PopdistSettings, PopdistSettingsError, read_settings

__all__ = ["isPopdistEnvSet", "init", "isBackendInitialized", "getNumInstances", "getInstanceIndex",
           "getNumTotalReplicas", "getNumLocalReplicas", "getReplicaIndexOffset", "getNumIpusPerReplica",
           "getDeviceId", "execute_on_instances", "PopdistSettings", "PopdistSettingsError"]

_ONE_INSTANCE = PopdistSettings(num_instances=1, instance_index=0, num_total_replicas=1, num_local_replicas=1,
                                replica_index_offset=0, ipus_per_replica=1)


def _settings() -> PopdistSettings:
    return read_settings() or _ONE_INSTANCE


def isPopdistEnvSet() -> bool:
    """Whether this process runs under poprun (or mpiexec): popdist settings are present."""
    return read_settings() is not None


def init() -> None:
    """Check the settings and, for a job of several instances, connect the instances (MPI)."""
    settings = _settings()
    if settings.num_instances > 1:
        from workbench.runtime.mpi import world

        world(settings)


def isBackendInitialized() -> bool:
    """Whether the instances are connected (``init`` or a multi-instance Session did it)."""
    mpi = sys.modules.get("workbench.runtime.mpi")
    return mpi is not None and mpi.connected()


def getNumInstances() -> int:
    return _settings().num_instances


def getInstanceIndex() -> int:
    return _settings().instance_index


def getNumTotalReplicas() -> int:
    return _settings().num_total_replicas


def getNumLocalReplicas() -> int:
    return _settings().num_local_replicas


def getReplicaIndexOffset() -> int:
    return _settings().replica_index_offset


def getNumIpusPerReplica() -> int:
    return _settings().ipus_per_replica


def getDeviceId() -> int:
    """The simulated device of this instance: one per instance, numbered as the instances are."""
    return _settings().instance_index


def execute_on_instances(instances: Union[int, Iterable[int]], function: Callable, *args, **kwargs) -> Any:
    """Call ``function(*args, **kwargs)`` on the given instance(s) only; the others get None.

    >>> popdist.execute_on_instances({0}, print, "written once per job")
    """
    chosen = {instances} if isinstance(instances, int) else set(instances)
    if getInstanceIndex() in chosen:
        return function(*args, **kwargs)
    return None
