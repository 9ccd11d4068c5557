"""Streaming Memory: loading tensors from and storing them to remote buffer entries.

Each replica has its own copy of every remote buffer. A store and a later load of the same entry
are not connected by any tensor: order them with ``popxl.in_sequence()``.
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np

from workbench.ir import RemoteBuffer, ReplicaGrouping, Tensor, TensorSpec, Variable, constant, dtypes
from workbench.ir.fragments import WEIGHTS_FROM_HOST, WEIGHTS_TO_HOST
from workbench.ir.host_data import variable_data
from workbench.ir.remote_variables import remote_replica_sharded_variable, replica_sharded_buffer

from .creation import init
from .registry import OpDef, create_op, register

__all__ = ["remote_load", "remote_load_", "remote_store"]


def _offset(op_type: str, buffer: RemoteBuffer, offset: Union[int, Tensor]) -> Tensor:
    """The offset as the op's tensor input; an int becomes a uint32 constant named ``offset``, as popxl
    makes it."""
    if not isinstance(buffer, RemoteBuffer):
        raise TypeError(f"{op_type}: expected a RemoteBuffer (popxl.remote_buffer), got {buffer!r}")
    if isinstance(offset, Tensor):
        if offset.nelms != 1 or not offset.dtype.is_int:
            raise ValueError(f"{op_type}: a tensor offset must be a single integer, got {offset.spec}")
        return offset
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset < buffer.entries:
        raise ValueError(f"{op_type}: offset must be an int in 0..{buffer.entries - 1} (the buffer's entries), "
                         f"got {offset!r}")
    return constant(offset, dtypes.uint32, name="offset")


def _entry(buffer_array: np.ndarray, offset, op) -> np.ndarray:
    index = int(np.asarray(offset).reshape(-1)[0])
    if not 0 <= index < len(buffer_array):
        raise IndexError(f"{op.name}: offset {index} is outside the {len(buffer_array)} entries of remote "
                         f"buffer {op.attrs['buffer'].remote_buffer_id}")
    return buffer_array[index, ...]


def _load_kernel(op, env):
    """Inputs: none (a weights fragment's load of a fixed entry), or the undefined target and the offset."""
    storage, fixed = env.remote_buffer(op.attrs["buffer"]), op.attrs["offset"]
    if fixed is not None:
        return lambda: storage[fixed, ...].copy()
    return lambda undefined_target, offset: _entry(storage, offset, op).copy()


def _load_in_place_kernel(op, env):
    storage, fixed = env.remote_buffer(op.attrs["buffer"]), op.attrs["offset"]

    def load(target, offset=fixed):
        target[...] = storage[offset, ...] if fixed is not None else _entry(storage, offset, op)
        return target
    return load


def _store_kernel(op, env):
    storage, fixed = env.remote_buffer(op.attrs["buffer"]), op.attrs["offset"]

    def store(value, offset=fixed):
        entry = storage[offset, ...] if fixed is not None else _entry(storage, offset, op)
        entry[...] = value
    return store


def _buffer_spec(specs, attrs) -> list[TensorSpec]:
    buffer = attrs["buffer"]
    return [TensorSpec(buffer.tensor_shape, buffer.tensor_dtype, buffer.meta_shape)]


register(OpDef("remote_load", _buffer_spec, _load_kernel, effect=True, exchange=True,
               popart_class="exchange.RemoteLoadOp"))
register(OpDef("remote_load_", lambda specs, attrs: [specs[0]], _load_in_place_kernel, modifies=(0,),
               aliases=((0, 0),), effect=True, exchange=True, popart_class="exchange.RemoteLoadInplaceOp"))
register(OpDef("remote_store", lambda specs, attrs: [], _store_kernel, effect=True, exchange=True,
               writes_buffer=True, popart_class="exchange.RemoteStoreOp"))


def remote_load(remote_buffer: RemoteBuffer, offset: Union[int, Tensor], name: Optional[str] = None) -> Tensor:
    """Load entry ``offset`` of ``remote_buffer`` from Streaming Memory into a new tensor (an undefined
    ``init`` the load writes, as popxl builds it)."""
    offset_tensor = _offset("remote_load", remote_buffer, offset)
    out_name = name or "remote_load"
    target = init(remote_buffer.tensor_shape, remote_buffer.tensor_dtype, f"{out_name}_init", "undef",
                  remote_buffer.meta_shape)
    attrs = {"buffer": remote_buffer, "offset": None}
    return create_op("remote_load", [target, offset_tensor], attrs, output_names=[out_name]).outputs[0]


def remote_load_(remote_buffer: RemoteBuffer, offset: Union[int, Tensor], t: Tensor) -> Tensor:
    """Load entry ``offset`` of ``remote_buffer`` into ``t``, in place."""
    offset_tensor = _offset("remote_load_", remote_buffer, offset)
    remote_buffer.validate_tensor_matches_buffer(t)
    attrs = {"buffer": remote_buffer, "offset": None}
    return create_op("remote_load_", [t, offset_tensor], attrs).outputs[0]


def remote_store(remote_buffer: RemoteBuffer, offset: Union[int, Tensor], t: Tensor) -> None:
    """Store ``t`` into entry ``offset`` of ``remote_buffer``."""
    offset_tensor = _offset("remote_store", remote_buffer, offset)
    remote_buffer.validate_tensor_matches_buffer(t)
    attrs = {"buffer": remote_buffer, "offset": None}
    create_op("remote_store", [t, offset_tensor], attrs)


def replica_sharded_variable(data, dtype: Optional[dtypes.dtype] = None, name: Optional[str] = None,
                             downcast: bool = True, replica_grouping: Optional[ReplicaGrouping] = None,
                             shard_over: Optional[int] = None, retrieval_mode: Optional[str] = "one_per_group",
                             log2_scale: Optional[int] = None,
                             nan_on_overflow: Optional[bool] = None) -> tuple[Variable, Tensor]:
    """A variable sharded over the replicas of each group, and this replica's shard for ops to use.

    The variable has the data's shape and is the handle for ``Session.get_tensor_data`` and
    ``write_variable_data``. The shard (flat, the full shape as its ``meta_shape``) is loaded when
    weights go to the device and stored back when they come to the host, so it stays on chip
    between runs and in-place updates to it are the variable's new value.
    """
    array = variable_data(data, dtype, downcast, log2_scale=log2_scale, nan_on_overflow=nan_on_overflow)
    buffer = replica_sharded_buffer(array.shape, dtypes.dtype.as_dtype(array.dtype), replica_grouping,
                                    shard_over)
    variable = remote_replica_sharded_variable(array, buffer, 0, None, name, False, replica_grouping,
                                               retrieval_mode)
    attrs = {"buffer": buffer, "offset": 0}
    shard = create_op("remote_load", [], attrs, fragment=WEIGHTS_FROM_HOST, output_names=[variable.name + "_rts"],
                      ipu=variable.ipu).outputs[0]
    create_op("remote_store", [shard], attrs, fragment=WEIGHTS_TO_HOST, ipu=variable.ipu)
    return variable, shard
