"""Moving variable values between the host layout and each replica's device copy.

Host layout (what ``get_tensor_data`` returns): ``'one_per_group'`` has one value per replica group,
with a leading group dimension when there is more than one group; ``'all_replicas'`` has one value
per replica, with a leading replica dimension when there is more than one replica.

A replica-sharded variable's device copy is one flat shard: the value, flattened and zero-padded, is
split over ``shard_count`` consecutive members of each group (its shard group).
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

from workbench.ir import Variable


def device_storage(variable: Variable, buffers: dict) -> np.ndarray:
    """A replica's array for ``variable``: its remote buffer entry, or a new on-chip array."""
    if variable.remote_buffer is None:
        return np.zeros(variable.shape, variable.dtype.as_numpy())
    entry = buffers[variable.remote_buffer][variable.remote_offset, ...]
    expected = shard_size(variable) if variable.shard_count > 1 else variable.nelms
    if entry.size != expected:
        raise ValueError(f"Tensor {variable.id} does not match buffer. The variable needs "
                         f"{expected} elements on each replica ({variable.spec}"
                         + (f" in {variable.shard_count} shards" if variable.shard_count > 1 else "")
                         + f") but entries of {variable.remote_buffer!r} hold {entry.size}")
    return entry if variable.shard_count > 1 else entry.reshape(variable.shape)


def initial_host_value(variable: Variable) -> np.ndarray:
    """The host cache at Session creation, from the data the variable was created with."""
    data = variable.host_data
    if variable.retrieval_mode == "all_replicas":
        grouping = variable.replica_grouping
        per_replica = [data[g] if grouping.num_groups > 1 else data for g in grouping.assignment]
        return np.array(per_replica) if len(per_replica) > 1 else np.array(per_replica[0])
    return data if isinstance(data, np.memmap) else np.array(data)  # weights_to_host writes into a memmap


def read_only_memmaps(variables: Iterable[Variable]) -> list[str]:
    """Names of the variables made from a read-only np.memmap, which the host cannot write back to."""
    return [v.name for v in variables
            if isinstance(v.host_data, np.memmap) and not v.host_data.flags.writeable]


def flush_memmaps(host: Mapping[Variable, np.ndarray]) -> None:
    """Write the host cache's memory-mapped arrays (variables made from an np.memmap) to their files."""
    for value in host.values():
        if isinstance(value, np.memmap):
            value.flush()


def replica_value(variable: Variable, host: np.ndarray, replica: int) -> np.ndarray:
    """The value replica ``replica`` holds, taken from the host cache."""
    grouping = variable.replica_grouping
    if variable.retrieval_mode == "all_replicas":
        value = host[replica, ...] if grouping.num_replicas > 1 else host
    else:
        group = grouping.assignment[replica]
        value = host[group, ...] if grouping.num_groups > 1 else host
    if variable.shard_count > 1:
        return _shards(value, variable)[_shard_group(variable, replica).index(replica)]
    return value


def shard_size(variable: Variable) -> int:
    return -(-variable.nelms // variable.shard_count)


def _shard_group(variable: Variable, replica: int) -> list[int]:
    """The members of ``replica``'s group that share one copy of the value between them."""
    grouping = variable.replica_grouping
    members = grouping.members(grouping.assignment[replica])
    start = members.index(replica) // variable.shard_count * variable.shard_count
    return members[start: start + variable.shard_count]


def _shards(full: np.ndarray, variable: Variable) -> np.ndarray:
    """``full`` flattened, zero-padded and split into one row per shard."""
    size = shard_size(variable)
    padded = np.zeros(size * variable.shard_count, full.dtype)
    padded[: full.size] = full.reshape(-1)
    return padded.reshape(variable.shard_count, size)


def _assembled(variable: Variable, device: list[dict], replica: int, target: np.ndarray) -> np.ndarray:
    """``replica``'s full value: its own copy, or its shard group's shards put together."""
    if variable.shard_count == 1:
        return device[replica][variable]
    shards = [device[r][variable] for r in _shard_group(variable, replica)]
    return np.concatenate(shards)[: target.size].reshape(target.shape)


def gather_to_host(variable: Variable, device: list[dict], host: np.ndarray, own: Sequence[int] = ()) -> None:
    """Write the replicas' device values into the host cache; a group's value is that of its first
    member among ``own`` (this instance's replicas), if any, else of its first member."""
    grouping = variable.replica_grouping
    if variable.retrieval_mode == "all_replicas":
        for replica in range(len(device)):
            target = host[replica, ...] if grouping.num_replicas > 1 else host
            target[...] = _assembled(variable, device, replica, target)
        return
    for group in range(grouping.num_groups):
        target = host[group, ...] if grouping.num_groups > 1 else host
        members = grouping.members(group)
        target[...] = _assembled(variable, device, next((r for r in members if r in own), members[0]), target)
