"""Collective values exchanged through memory that every instance of a job maps (MPI shared memory,
when all instances run on one machine).

An all-gather through MPI copies each instance's values into MPICH's shared buffers and out again on
every other instance: megabytes of gradients cost milliseconds. Through a shared window each instance
writes its replicas' values once, in its own part, and after a barrier every instance reads all of
them where they are. Two halves take turns, so an instance may write the next exchange's values
while the others still read the last one's: it can only be two exchanges ahead once every instance
has passed the barrier of the one in between, and so has finished reading.

Each part starts with what its instance says it exchanges (op, occurrence, dtype, shape); the values
are read only when all say the same.
"""
from __future__ import annotations

import hashlib
from typing import Callable, Optional

import numpy as np

from ..replication.communicator import CollectiveMismatchError

# What each instance says it is about to exchange: a digest of the whole description (op, occurrence,
# dtype, shape, reduction, groups), which must be the same everywhere, then as much of its text as fits.
HEADER_BYTES, DIGEST_BYTES = 256, 16
ALIGNMENT = 64


def header(description: str) -> np.ndarray:
    """The header of an exchange that ``description`` describes."""
    said = description.encode()
    text = said[:HEADER_BYTES - DIGEST_BYTES]
    result = np.zeros(HEADER_BYTES, np.uint8)
    result[:DIGEST_BYTES] = np.frombuffer(hashlib.sha256(said).digest()[:DIGEST_BYTES], np.uint8)
    result[DIGEST_BYTES: DIGEST_BYTES + len(text)] = np.frombuffer(text, np.uint8)
    return result


def mismatch(headers: np.ndarray, who: str = "instance") -> CollectiveMismatchError:
    """The error when the parts' ``headers`` differ: where each ``who`` (instance, process) is."""
    reached = "; ".join(f"{who} {i} at {bytes(h[DIGEST_BYTES:]).rstrip(bytes(1)).decode(errors='replace')}"
                        for i, h in enumerate(headers))
    return CollectiveMismatchError(f"the {who}s reached different collectives: {reached}")


class ExchangeWindow:
    """Both halves of a window in ``memory`` that every part (instance, process) maps: per half, every
    part's header, then every part's values. ``sync`` makes this part's writes visible to the others
    and theirs to it (MPI's window sync; nothing for plain shared memory)."""

    def __init__(self, memory: np.ndarray, part: int, parts: int, part_bytes: int,
                 sync: Callable[[], None] = lambda: None, who: str = "instance"):
        self._part = part
        self._parts = parts
        self._sync = sync
        self._who = who
        self.part_bytes = part_bytes
        half = parts * (HEADER_BYTES + part_bytes)
        self._halves = [memory[h * half: (h + 1) * half] for h in range(2)]
        self._exchanges = 0

    @staticmethod
    def size(parts: int, part_bytes: int) -> int:
        """Bytes of the memory that a window of ``parts`` parts of ``part_bytes`` each needs."""
        return 2 * parts * (HEADER_BYTES + part_bytes)

    def allgather(self, values: list[np.ndarray], description: str,
                  barrier: Callable[[], None]) -> np.ndarray:
        """Every part's ``values`` (alike in number, shape and dtype), in part order, stacked on a
        leading axis: a view of the window, valid until the exchange after next."""
        first = values[0]
        nbytes = len(values) * first.nbytes
        if nbytes > self.part_bytes:
            raise ValueError(f"{description}: {nbytes} bytes do not fit the {self.part_bytes} bytes each "
                             f"{self._who} has in the shared window")
        half = self._halves[self._exchanges % 2]
        self._exchanges += 1
        headers = half[: self._parts * HEADER_BYTES].reshape(self._parts, HEADER_BYTES)
        said = header(description)
        headers[self._part] = said
        data = half[self._parts * HEADER_BYTES:]
        mine = data[self._part * nbytes: (self._part + 1) * nbytes].view(first.dtype).reshape(len(values), *first.shape)
        if not all(_is_row(value, mine, index) for index, value in enumerate(values)):  # else written there
            np.stack(values, out=mine)
        self._sync()
        barrier()
        self._sync()
        if (headers != said).any():
            raise mismatch(headers, self._who)
        everyone = data[: self._parts * nbytes].view(first.dtype)
        return everyone.reshape(self._parts * len(values), *first.shape)

    def row(self, index: int, count: int, shape: tuple, dtype: np.dtype) -> Optional[np.ndarray]:
        """Where the next exchange's ``index``-th value of this part goes, when the part gives ``count``
        values of ``shape`` and ``dtype`` (None where they do not fit): written there before the
        exchange, a value is not copied again. Safe to write once this part has passed the exchange
        before, as ``allgather``'s own copy is."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if count * nbytes > self.part_bytes:
            return None
        half = self._halves[self._exchanges % 2]
        start = self._parts * HEADER_BYTES + (self._part * count + index) * nbytes
        return half[start: start + nbytes].view(dtype).reshape(shape)

    def restart(self) -> None:
        """After a failed run, when every part starts again from the first half."""
        self._exchanges = 0


def _is_row(value: np.ndarray, rows: np.ndarray, index: int) -> bool:
    """Whether ``value`` is row ``index`` of ``rows`` itself (written in place, ``row``)."""
    return (value.shape == rows.shape[1:] and value.dtype == rows.dtype
            and value.__array_interface__["data"][0] == rows[index].__array_interface__["data"][0]
            and value.flags.c_contiguous)


class SharedWindow(ExchangeWindow):
    """An ``ExchangeWindow`` in MPI shared memory, across the instances of a job on one machine."""

    def __init__(self, MPI, window, instance: int, instances: int, part_bytes: int):
        self._window = window
        memory, _ = window.Shared_query(0)
        super().__init__(np.frombuffer(memory, np.uint8), instance, instances, part_bytes, window.Sync)
        window.Lock_all(MPI.MODE_NOCHECK)

    @classmethod
    def open(cls, MPI, comm, part_bytes: int) -> Optional["SharedWindow"]:
        """A window on ``comm`` (collective: every instance calls it alike), or None when the instances
        do not all share this machine's memory or have nothing to exchange."""
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        shared = node.Get_size() == comm.Get_size()
        node.Free()
        if not shared or part_bytes == 0:
            return None
        instances, instance = comm.Get_size(), comm.Get_rank()
        part_bytes = -(-part_bytes // ALIGNMENT) * ALIGNMENT
        size = cls.size(instances, part_bytes)
        window = MPI.Win.Allocate_shared(size if instance == 0 else 0, 1, comm=comm)
        return cls(MPI, window, instance, instances, part_bytes)

    def close(self) -> None:
        self._window.Unlock_all()
        self._window.Free()
