"""How a session's options replicate its program.

``enableReplicatedGraphs`` with ``replicatedGraphCount`` gives the replicas of this process. With
``enableDistributedReplicatedGraphs`` this process is one instance of a job of
``globalReplicationFactor`` replicas, and its replicas are the global ones from
``globalReplicaOffset`` on. A job of several instances runs under ``poprun`` or ``mpiexec``, one
process per instance; the options must describe the job the launcher started
(``popdist.popart.configureSessionOptions`` sets them so).
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Union

from workbench.ir.popdist_settings import PopdistSettings, PopdistSettingsError, read_settings

from .errors import popart_exception


def local_replication(options: Any) -> int:
    """The replicas this process runs."""
    if not options.enableReplicatedGraphs:
        return 1
    return _count(options, "replicatedGraphCount", minimum=1)


def replication_of(options: Any, environ: Optional[Mapping[str, str]] = None) -> Union[int, PopdistSettings]:
    """What a session lowers its program for: the replica count of a session alone, or, with the
    distributed options, this instance's place in its job (read against ``environ``, by default
    the process's environment)."""
    local = local_replication(options)
    if not options.enableDistributedReplicatedGraphs:
        return host_all_reduce_job(options, local, environ) or local
    total = _count(options, "globalReplicationFactor", minimum=1)
    offset = _count(options, "globalReplicaOffset", minimum=0)
    if total % local:
        raise popart_exception(f"globalReplicationFactor {total} is not a multiple of the {local} replicas of "
                               f"each instance (replicatedGraphCount): every instance runs as many replicas")
    if offset % local or offset >= total:
        starts = ", ".join(str(start) for start in range(0, total, local))
        raise popart_exception(f"globalReplicaOffset {offset} is not where an instance's replicas start: with "
                               f"{local} replicas per instance and globalReplicationFactor {total} it is one of "
                               f"{starts}")
    try:
        launched = read_settings(environ)
    except PopdistSettingsError as error:
        raise popart_exception(f"the popdist environment of this process is inconsistent: {error}") from None
    instances, index = total // local, offset // local
    if launched is None:
        if instances > 1:
            raise popart_exception(
                f"enableDistributedReplicatedGraphs with globalReplicationFactor {total} and {local} replica(s) per "
                f"instance makes a job of {instances} instances, but this process was not launched as one (no "
                f"poprun or mpiexec environment): run it with `poprun --num-instances {instances} --num-replicas "
                f"{total} python ...`")
        return PopdistSettings(1, 0, total, local, 0, 1)
    _check_against_launch(launched, total, local, offset, environ)
    return PopdistSettings(instances, index, total, local, offset, launched.ipus_per_replica)


def host_all_reduce_job(options: Any, local: int, environ: Optional[Mapping[str, str]] = None
                        ) -> Optional[PopdistSettings]:
    """With ``hostAllReduce`` in a process launched as one of several (``mpiexec``, ``horovodrun``): this
    instance's place in the job its launcher started, every instance running ``local`` replicas; the
    gradients are then averaged over every replica of the job, as Horovod's ``DistributedOptimizer``
    does. None otherwise."""
    if not options.hostAllReduce:
        return None
    try:
        launched = read_settings(environ)
    except PopdistSettingsError as error:
        raise popart_exception(f"the MPI environment of this process is inconsistent: {error}") from None
    if launched is None or launched.num_instances == 1:
        return None
    index = launched.instance_index
    return PopdistSettings(launched.num_instances, index, launched.num_instances * local, local, index * local,
                           launched.ipus_per_replica)


def averages_over_instances(options: Any, replicas: Union[int, PopdistSettings]) -> bool:
    """Whether a training session averages its gradients over the job's replicas because Horovod
    (``hostAllReduce``) reduces them between instances."""
    return bool(options.hostAllReduce) and isinstance(replicas, PopdistSettings) and replicas.num_instances > 1


def _check_against_launch(launched: PopdistSettings, total: int, local: int, offset: int,
                          environ: Optional[Mapping[str, str]]) -> None:
    """The options must describe the job poprun (or a bare mpiexec) started."""
    environ = os.environ if environ is None else environ
    if "POPDIST_NUM_TOTAL_REPLICAS" in environ:  # poprun says how many replicas each instance runs
        expected_local = launched.num_local_replicas
        launcher = f"poprun's job of {launched.num_total_replicas} replicas in {launched.num_instances} instances"
    else:  # a bare mpiexec says only how many instances there are
        expected_local = local
        launcher = f"mpiexec's job of {launched.num_instances} instances"
    expected = {"globalReplicationFactor": launched.num_instances * expected_local,
                "replicatedGraphCount (replicas per instance)": expected_local,
                "globalReplicaOffset": launched.instance_index * expected_local}
    given = {"globalReplicationFactor": total, "replicatedGraphCount (replicas per instance)": local,
             "globalReplicaOffset": offset}
    wrong = [f"{name} is {given[name]}, expected {value}" for name, value in expected.items() if given[name] != value]
    if wrong:
        raise popart_exception(f"the distributed options do not match the job this process runs in (instance "
                               f"{launched.instance_index} of {launcher}): {'; '.join(wrong)}. "
                               "popdist.popart.configureSessionOptions(opts) sets them from the job")


def _count(options: Any, name: str, minimum: int) -> int:
    value = getattr(options, name)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        kind = "a positive integer" if minimum else "a non-negative integer"
        raise popart_exception(f"SessionOptions.{name} must be {kind}, got {value!r}")
    return value
