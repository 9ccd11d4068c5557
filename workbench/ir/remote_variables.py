"""Variables stored in Streaming Memory, and variables sharded over replicas (RTS)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

import numpy as np

from . import dtypes
from .context import get_current_graph
from .remote_buffer import RemoteBuffer
from .host_data import to_numpy, variable_data
from .tensor import HostScalarTensor, Variable

if TYPE_CHECKING:
    from .replica_grouping import ReplicaGrouping


def replica_sharded_buffer(shape: Tuple[int, ...], dtype: dtypes.dtype,
                           replica_grouping: Optional["ReplicaGrouping"] = None,
                           shard_over: Optional[int] = None, entries: int = 1) -> RemoteBuffer:
    """A remote buffer whose entries hold one replica's flat shard of a tensor of ``shape``.

    With a grouping of several groups, ``shape`` starts with the group axis, as the variable's data
    does; each group's value is sharded over ``shard_over`` members (default: the whole group).
    """
    ir = get_current_graph().ir
    group_size = replica_grouping.group_size if replica_grouping is not None else ir.replication_factor
    count = group_size if shard_over is None else shard_over
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"shard_over must be a positive int, got {shard_over!r}")
    if count > group_size:
        raise ValueError(f"The sharding group size ({count}) must be less than or equal to the replica "
                         f"group size ({group_size}); without a replica_grouping the group is all "
                         f"{ir.replication_factor} replicas")
    if group_size % count:
        raise ValueError(f"The replica group size ({group_size}) must be divisible by the sharding group "
                         f"size ({count})")
    grouped = replica_grouping is not None and replica_grouping.num_groups > 1
    meta_shape = tuple(shape)[1:] if grouped else tuple(shape)
    nelms = int(np.prod(meta_shape, dtype=np.int64))
    buffer = RemoteBuffer((-(-nelms // count),), dtype, entries)
    buffer.meta_shape = meta_shape
    buffer.shard_count = count
    return buffer


def _place_in_buffer(variable: Variable, buffer: RemoteBuffer, offset: int) -> Variable:
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset < buffer.entries:
        variable.graph._tensors.pop(variable.name)
        raise ValueError(f"offset {offset!r} is outside the {buffer.entries} entries of {buffer!r}")
    variable.remote_buffer = buffer
    variable.remote_offset = offset
    return variable


def _encoded(data: HostScalarTensor, dtype: Optional[dtypes.dtype], downcast: bool,
             log2_scale: Optional[int], nan_on_overflow: Optional[bool]):
    """``data`` as an array, float8 data scaled and encoded as ``popxl.variable`` does."""
    if log2_scale is None and nan_on_overflow is None:
        return data
    return to_numpy(data, dtype, downcast, log2_scale=log2_scale, nan_on_overflow=nan_on_overflow)


def remote_variable(data: HostScalarTensor, remote_buffer: RemoteBuffer, offset: int = 0,
                    dtype: Optional[dtypes.dtype] = None, name: Optional[str] = None, downcast: bool = True,
                    replica_grouping: Optional["ReplicaGrouping"] = None,
                    retrieval_mode: Optional[str] = "one_per_group", log2_scale: Optional[int] = None,
                    nan_on_overflow: Optional[bool] = None) -> Variable:
    """A variable kept in entry ``offset`` of ``remote_buffer``; use it through ``ops.remote_load``.

    As in popxl, its shape is not compared with the buffer's here; a Session refuses a variable
    whose elements do not fill one entry.
    """
    graph = get_current_graph()
    data = _encoded(data, dtype, downcast, log2_scale, nan_on_overflow)
    variable = graph.ir._add_variable(graph, data, dtype, name, downcast, replica_grouping,
                                      retrieval_mode or "one_per_group")
    return _place_in_buffer(variable, remote_buffer, offset)


def _shard_count_for(buffer: RemoteBuffer, nelms: int, group_size: int) -> Optional[int]:
    """How many replicas share the value: the buffer's own count, else the number of members of a
    group whose shards fill one entry (the whole group when several would)."""
    if buffer.shard_count > 1:
        return buffer.shard_count
    entry = int(np.prod(buffer.tensor_shape, dtype=np.int64))
    fitting = [k for k in range(group_size, 0, -1) if not group_size % k and -(-nelms // k) == entry]
    return fitting[0] if fitting else None


def remote_replica_sharded_variable(data: HostScalarTensor, remote_buffer: RemoteBuffer, offset: int = 0,
                                    dtype: Optional[dtypes.dtype] = None, name: Optional[str] = None,
                                    downcast: bool = True,
                                    replica_grouping: Optional["ReplicaGrouping"] = None,
                                    retrieval_mode: Optional[str] = "one_per_group",
                                    log2_scale: Optional[int] = None,
                                    nan_on_overflow: Optional[bool] = None) -> Variable:
    """A variable split over the replicas of each group: entry ``offset`` of each replica's
    ``remote_buffer`` holds that replica's flat shard. Any remote buffer whose entries hold one
    shard will do; the sharding follows the replica grouping (by default all replicas). A Session
    refuses a buffer whose entries do not hold one shard."""
    graph = get_current_graph()
    ir = graph.ir
    if ir.replication_factor <= 1:
        raise ValueError(f"The IR's replication factor is {ir.replication_factor}. It must be greater than 1 "
                         "to create a replica sharded variable.")
    array = variable_data(data, dtype, downcast, log2_scale=log2_scale, nan_on_overflow=nan_on_overflow)
    grouping = replica_grouping or ir.replica_grouping()
    shape = array.shape[1:] if grouping.num_groups > 1 else array.shape
    if not remote_buffer.meta_shape:
        remote_buffer.meta_shape = shape
    elif tuple(remote_buffer.meta_shape) != tuple(shape):
        raise ValueError(f"Cannot use RemoteBuffer[id={remote_buffer.remote_buffer_id}] for replica sharded "
                         f"variable of shape {shape}: the buffer's meta_shape is already "
                         f"{remote_buffer.meta_shape}.")
    nelms = int(np.prod(shape, dtype=np.int64))
    # As in popxl, a buffer whose entries hold no shard is not refused here but by the Session.
    count = _shard_count_for(remote_buffer, nelms, grouping.group_size) or grouping.group_size
    variable = ir._add_variable(graph, array, None, name, False, grouping, retrieval_mode or "one_per_group",
                                shard_count=count)
    return _place_in_buffer(variable, remote_buffer, offset)
