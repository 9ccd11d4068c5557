"""Variables stored in Streaming Memory, and variables sharded over replicas (RTS)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

import numpy as np

from . import dtypes
from .context import get_current_graph
from .remote_buffer import RemoteBuffer
from .tensor import HostScalarTensor, Variable

if TYPE_CHECKING:
    from .replica_grouping import ReplicaGrouping


def _shard_count(grouping: Optional["ReplicaGrouping"], shard_over: Optional[int]) -> int:
    ir = get_current_graph().ir
    count = shard_over or (grouping.group_size if grouping is not None else ir.replication_factor)
    if not isinstance(count, int) or count < 1 or ir.replication_factor % count:
        raise ValueError(f"shard_over must divide the replication factor {ir.replication_factor}, got {count!r}")
    return count


def replica_sharded_buffer(shape: Tuple[int, ...], dtype: dtypes.dtype,
                           replica_grouping: Optional["ReplicaGrouping"] = None,
                           shard_over: Optional[int] = None, entries: int = 1) -> RemoteBuffer:
    """A remote buffer whose entries hold one replica's flat shard of a tensor of ``shape``."""
    count = _shard_count(replica_grouping, shard_over)
    nelms = int(np.prod(shape, dtype=np.int64))
    buffer = RemoteBuffer((-(-nelms // count),), dtype, entries)
    buffer.meta_shape = tuple(shape)
    buffer.shard_count = count
    return buffer


def _place_in_buffer(variable: Variable, buffer: RemoteBuffer, offset: int) -> Variable:
    if not 0 <= offset < buffer.entries:
        raise ValueError(f"offset {offset} is outside the {buffer.entries} entries of {buffer!r}")
    try:
        buffer.validate_tensor_matches_buffer(variable)
    except ValueError:
        variable.graph._tensors.pop(variable.name)
        raise
    variable.remote_buffer = buffer
    variable.remote_offset = offset
    return variable


def remote_variable(data: HostScalarTensor, remote_buffer: RemoteBuffer, offset: int = 0,
                    dtype: Optional[dtypes.dtype] = None, name: Optional[str] = None, downcast: bool = True,
                    replica_grouping: Optional["ReplicaGrouping"] = None,
                    retrieval_mode: Optional[str] = "one_per_group", log2_scale: Optional[int] = None,
                    nan_on_overflow: Optional[bool] = None) -> Variable:
    """A variable kept in entry ``offset`` of ``remote_buffer``; use it through ``ops.remote_load``."""
    graph = get_current_graph()
    variable = graph.ir._add_variable(graph, data, dtype, name, downcast, replica_grouping,
                                      retrieval_mode or "one_per_group")
    return _place_in_buffer(variable, remote_buffer, offset)


def remote_replica_sharded_variable(data: HostScalarTensor, remote_buffer: RemoteBuffer, offset: int = 0,
                                    dtype: Optional[dtypes.dtype] = None, name: Optional[str] = None,
                                    downcast: bool = True,
                                    replica_grouping: Optional["ReplicaGrouping"] = None,
                                    retrieval_mode: Optional[str] = "one_per_group",
                                    log2_scale: Optional[int] = None,
                                    nan_on_overflow: Optional[bool] = None) -> Variable:
    """A variable split over the replicas of each group: entry ``offset`` of each replica's
    ``remote_buffer`` holds that replica's flat shard."""
    graph = get_current_graph()
    if remote_buffer.shard_count < 2:
        raise ValueError(f"{remote_buffer!r} is not sharded over replicas; create it with "
                         "popxl.replica_sharded_buffer(shape, dtype, ...)")
    variable = graph.ir._add_variable(graph, data, dtype, name, downcast, replica_grouping,
                                      retrieval_mode or "one_per_group",
                                      shard_count=remote_buffer.shard_count)
    return _place_in_buffer(variable, remote_buffer, offset)
