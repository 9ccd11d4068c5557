"""Moving variable values between the host layout and each replica's device copy.

Host layout (what ``get_tensor_data`` returns): ``'one_per_group'`` has one value per replica group,
with a leading group dimension when there is more than one group; ``'all_replicas'`` has one value
per replica, with a leading replica dimension when there is more than one replica.
"""
from __future__ import annotations

import numpy as np

from workbench.ir import Variable


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
    group = grouping.assignment[replica]
    value = host[group] if grouping.num_groups > 1 else host
    if variable.shard_count > 1:
        return _shards(value, variable)[grouping.members(group).index(replica) % variable.shard_count]
    return value


def _shards(full: np.ndarray, variable: Variable) -> np.ndarray:
    """``full`` flattened, zero-padded and split into one row per shard."""
    size = variable.shape[0]
    padded = np.zeros(size * variable.shard_count, full.dtype)
    padded[: full.size] = full.reshape(-1)
    return padded.reshape(variable.shard_count, size)


def gather_to_host(variable: Variable, device: list[dict], host: np.ndarray) -> None:
    """Write the replicas' device values into the host cache."""
    grouping = variable.replica_grouping
    if variable.retrieval_mode == "all_replicas":
        for replica, values in enumerate(device):
            target = host[replica] if grouping.num_replicas > 1 else host
            target[...] = values[variable]
        return
    for group in range(grouping.num_groups):
        members = grouping.members(group)
        target = host[group] if grouping.num_groups > 1 else host
        if variable.shard_count > 1:
            shards = [device[r][variable] for r in members[: variable.shard_count]]
            target[...] = np.concatenate(shards)[: target.size].reshape(target.shape)
        else:
            target[...] = device[members[0]][variable]
