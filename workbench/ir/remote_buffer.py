"""Remote buffers: arrays of equally shaped entries in Streaming Memory, one set per replica."""
from __future__ import annotations

from typing import Iterable, Tuple

from . import dtypes
from .context import get_current_graph


class RemoteBuffer:
    """``entries`` slots, each holding a tensor of ``tensor_shape`` and ``tensor_dtype``."""

    def __init__(self, tensor_shape: Tuple[int, ...], tensor_dtype: dtypes.dtype, entries: int):
        _check_entries(entries)
        ir = get_current_graph().ir
        self._ir = ir
        self._tensor_shape = tuple(int(d) for d in tensor_shape)
        self._tensor_dtype = dtypes.dtype.as_dtype(tensor_dtype)
        self._entries = entries
        self._meta_shape: Tuple[int, ...] = ()
        self.shard_count = 1  # replicas one tensor is split over (replica_sharded_buffer sets it)
        self._remote_buffer_id = ir._register_remote_buffer(self)

    @property
    def remote_buffer_id(self) -> int:
        return self._remote_buffer_id

    @property
    def _current_ir(self):
        """The Ir the buffer belongs to (popxl's private name)."""
        return self._ir

    @property
    def tensor_shape(self) -> Tuple[int, ...]:
        return self._tensor_shape

    @tensor_shape.setter
    def tensor_shape(self, value) -> None:
        raise AttributeError("can't set attribute 'tensor_shape'")  # as popxl words it: make a new buffer

    @property
    def tensor_dtype(self) -> dtypes.dtype:
        return self._tensor_dtype

    @tensor_dtype.setter
    def tensor_dtype(self, value) -> None:
        raise AttributeError("can't set attribute 'tensor_dtype'")

    @property
    def entries(self) -> int:
        return self._entries

    @entries.setter
    def entries(self, entries: int) -> None:
        self._ir._check_buildable()
        _check_entries(entries)
        self._entries = entries

    @property
    def meta_shape(self) -> Tuple[int, ...]:
        return self._meta_shape

    @meta_shape.setter
    def meta_shape(self, shape: Iterable[int]) -> None:
        self._meta_shape = tuple(shape)

    @property
    def nbytes(self) -> int:
        """Bytes this buffer occupies in each replica's Streaming Memory."""
        size = 1
        for d in self._tensor_shape:
            size *= d
        return size * self._tensor_dtype.itemsize * self._entries

    def set_remote_buffer_info(self, tensor_dtype: dtypes.dtype, tensor_shape: Iterable[int],
                               entries: int) -> None:
        self._ir._check_buildable()
        self._tensor_dtype = dtypes.dtype.as_dtype(tensor_dtype)
        self._tensor_shape = tuple(tensor_shape)
        self.entries = entries

    def validate_tensor_matches_buffer(self, t, num_shards: int = 1) -> None:
        """Raise ValueError unless ``t`` (or a shard of ``num_shards``) fits one entry."""
        shape = self._tensor_shape
        if num_shards > 1:
            expected = -(-max(1, _prod(shape)) // num_shards)
            fits = _prod(t.shape) == expected
        else:
            fits = tuple(t.shape) == shape
        if not fits or t.dtype is not self._tensor_dtype:
            raise ValueError(f"Tensor {t.id} does not match buffer. The tensor is {t.spec}; entries of remote "
                             f"buffer {self._remote_buffer_id} hold {self._tensor_dtype.name}{list(shape)}"
                             + (f" split into {num_shards} shards" if num_shards > 1 else ""))

    def __hash__(self) -> int:
        return hash((self._ir.id, self._remote_buffer_id))

    def __repr__(self) -> str:
        return (f"RemoteBuffer[id={self._remote_buffer_id} {self._tensor_dtype.name}"
                f"{list(self._tensor_shape)} x{self._entries}]")


def _check_entries(entries) -> None:
    if not isinstance(entries, int) or isinstance(entries, bool) or entries < 1:
        raise ValueError(f"Entries must be a non-zero, positive integer. Got {entries!r}")


def _prod(shape) -> int:
    result = 1
    for d in shape:
        result *= d
    return result


def remote_buffer(tensor_shape: Tuple[int, ...], tensor_dtype: dtypes.dtype,
                  entries: int = 1) -> RemoteBuffer:
    """Create a remote buffer in the current Ir."""
    return RemoteBuffer(tensor_shape, tensor_dtype, entries)
