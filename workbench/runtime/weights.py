"""Moving variable values between the host layout and each replica's device copy.

Host layout (what ``get_tensor_data`` returns): ``'one_per_group'`` has one value per replica group,
with a leading group dimension when there is more than one group; ``'all_replicas'`` has one value
per replica, with a leading replica dimension when there is more than one replica.
"""
from __future__ import annotations

import numpy as np

from workbench.ir import Variable


def host_shape(variable: Variable) -> tuple[int, ...]:
    if variable.retrieval_mode == "all_replicas":
        replicas = variable.replica_grouping.num_replicas
        return (replicas, *variable.shape) if replicas > 1 else tuple(variable.shape)
    return variable.shape_on_host


def initial_host_value(variable: Variable) -> np.ndarray:
    """The host cache at Session creation, from the data the variable was created with."""
    data = variable.host_data
    if variable.retrieval_mode == "all_replicas":
        grouping = variable.replica_grouping
        per_replica = [data[g] if grouping.num_groups > 1 else data for g in grouping.assignment]
        return np.array(per_replica) if len(per_replica) > 1 else np.array(per_replica[0])
    return np.array(data)


def replica_value(variable: Variable, host: np.ndarray, replica: int) -> np.ndarray:
    """The value replica ``replica`` holds, taken from the host cache."""
    grouping = variable.replica_grouping
    if variable.retrieval_mode == "all_replicas":
        return host[replica] if grouping.num_replicas > 1 else host
    return host[grouping.assignment[replica]] if grouping.num_groups > 1 else host


def gather_to_host(variable: Variable, device: list[dict], host: np.ndarray) -> None:
    """Write the replicas' device values into the host cache."""
    grouping = variable.replica_grouping
    if variable.retrieval_mode == "all_replicas":
        for replica, values in enumerate(device):
            target = host[replica] if grouping.num_replicas > 1 else host
            target[...] = values[variable]
        return
    for group in range(grouping.num_groups):
        first = grouping.members(group)[0]
        target = host[group] if grouping.num_groups > 1 else host
        target[...] = device[first][variable]
