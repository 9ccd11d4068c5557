"""Host memory for a session's copies of the weights, checked before they are allocated.

Every replica's weights, persistent tensors and remote buffers, and the host copy of the variables,
live in this process's memory. A session that needs more than the host can give fails at once with
``HostMemoryError``, naming what it needs and what is available, instead of a bare ``MemoryError``
from deep inside NumPy, or the kernel's out-of-memory killer ending the process. A PopART session
checks the same way before it reads a model (``require_host_memory``).

What is available is the least of: ``MemAvailable`` in ``/proc/meminfo``; the address space the
process's ``RLIMIT_AS`` leaves (its limit less ``VmSize``); the room left under the memory limit of the
process's cgroup; and ``RunOptions.host_memory_limit``, when set.
"""
from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np

from workbench.ir import Ir, Variable

UNLIMITED = 1 << 60  # a cgroup limit this large means none (cgroup v1 writes 2**63 rounded to pages)


class HostMemoryError(MemoryError):
    """The session's copies of the weights need more host memory than is available."""

    def __init__(self, message: str, needed: int, available: int):
        super().__init__(message)
        self.needed, self.available = needed, available


@dataclass(frozen=True, slots=True)
class HostMemory:
    """``available`` bytes, as ``source`` says (the tightest of the limits found)."""

    available: int
    source: str


@dataclass(frozen=True, slots=True)
class WeightCopies:
    """What a session allocates, in bytes: each replica's ``device`` storage (the copies replicas
    share counted once) for ``replicas`` replicas, and the ``host`` copy of the variables."""

    device: int
    host: int
    replicas: int

    @property
    def total(self) -> int:
        return self.device + self.host


def weight_copies(ir: Ir, shared: Iterable[Variable], shared_copies: int = 1) -> WeightCopies:
    """The bytes of the copies a session of ``ir`` makes for this process's replicas (``shared_copies``
    of the weights they share: one, or one per worker process)."""
    shared = set(shared)
    replicas = len(ir.local_replicas)
    per_replica = sum(_bytes(b.tensor_dtype, (b.entries, *b.tensor_shape)) for b in ir.remote_buffers)
    per_replica += sum(_bytes(t.dtype, t.shape) for t in ir.persistent_tensors)
    on_chip = [v for v in ir.variables if v.remote_buffer is None]
    per_replica += sum(_bytes(v.dtype, v.shape) for v in on_chip if v not in shared)
    device = per_replica * replicas + shared_copies * sum(_bytes(v.dtype, v.shape) for v in on_chip if v in shared)
    return WeightCopies(device, sum(_host_bytes(v) for v in ir.variables), replicas)


def _bytes(dtype, shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) * dtype.as_numpy().itemsize


def _host_bytes(variable: Variable) -> int:
    """The host copy of ``variable`` (``weights.initial_host_value``): none for a memory-mapped one."""
    grouping = variable.replica_grouping
    if variable.retrieval_mode == "all_replicas":
        return len(grouping.assignment) * _bytes(variable.dtype, variable.shape)
    if isinstance(variable.host_data, np.memmap):
        return 0
    return grouping.num_groups * _bytes(variable.dtype, variable.shape)


def available_host_memory(limit: Optional[int] = None) -> Optional[HostMemory]:
    """The host memory this process can still take, and what limits it (None if nothing is known)."""
    found = [HostMemory(limit, "RunOptions.host_memory_limit")] if limit is not None else []
    found += [m for m in (_mem_available(), _address_space_left(), _cgroup_room()) if m is not None]
    return min(found, key=lambda m: m.available, default=None)


def check_host_memory(ir: Ir, shared: Iterable[Variable], limit: Optional[int] = None,
                      shared_copies: int = 1) -> None:
    """Raise ``HostMemoryError`` if the copies a session of ``ir`` makes do not fit the host memory
    available (``limit``: at most that many bytes; ``shared_copies``: of the weights replicas share)."""
    copies = weight_copies(ir, shared, shared_copies)
    if limit is None and copies.total < 1 << 20:
        return  # a few arrays: not worth reading the system's files
    replicas = f"{copies.replicas} replica{'s' if copies.replicas != 1 else ''}"
    require_host_memory(
        copies.total, "for this session",
        f"for the copies of its weights ({_size(copies.device, exact=False)} for {replicas}' variables, "
        f"persistent tensors and remote buffers, {_size(copies.host, exact=False)} for the host copy of the "
        "variables)",
        "Use fewer replicas, a smaller model, or replica-sharded variables (popxl.replica_sharded_variable or "
        "remote_replica_sharded_variable: each replica holds one shard)", limit)


def require_host_memory(needed: int, purpose: str, detail: str, advice: str, limit: Optional[int] = None) -> None:
    """Raise ``HostMemoryError`` if ``needed`` bytes (``detail`` says for what) do not fit the host
    memory available: the message names both numbers, what limits the memory and ``advice``."""
    memory = available_host_memory(limit)
    if memory is None or needed <= memory.available:
        return
    raise HostMemoryError(f"not enough host memory {purpose}: it needs {_size(needed)} {detail}, but "
                          f"{_size(memory.available)} is available ({memory.source}). {advice}",
                          needed, memory.available)


def _size(count: int, exact: bool = True) -> str:
    """``count`` bytes in the largest unit it reaches, with the exact count if ``exact``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}" + (f" ({count:,} bytes)" if exact else "")
    return f"{count:,} bytes"


def _mem_available() -> Optional[HostMemory]:
    kib = _field("/proc/meminfo", "MemAvailable:")
    return HostMemory(kib * 1024, "MemAvailable in /proc/meminfo") if kib is not None else None


def _address_space_left() -> Optional[HostMemory]:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    used = _field("/proc/self/status", "VmSize:")
    left = max(soft - (used or 0) * 1024, 0)
    return HostMemory(left, f"the process's RLIMIT_AS of {soft:,} bytes, less its {(used or 0) * 1024:,} bytes "
                            "of address space in use")


def _cgroup_room() -> Optional[HostMemory]:
    """The room under the memory limit of this process's cgroup (v2 or v1), if it has one."""
    for path in _cgroup_dirs():
        for limit_file, usage_file in (("memory.max", "memory.current"),
                                       ("memory.limit_in_bytes", "memory.usage_in_bytes")):
            limit, usage = _number(os.path.join(path, limit_file)), _number(os.path.join(path, usage_file))
            if limit is not None and usage is not None and limit < UNLIMITED:
                return HostMemory(max(limit - usage, 0), f"the cgroup memory limit of {limit:,} bytes in {path}, "
                                                         f"{usage:,} bytes of it in use")
    return None


def _cgroup_dirs() -> list[str]:
    """The directories that may hold this process's cgroup memory files: its own, then the root's (a
    container's namespace shows its own cgroup as the root)."""
    dirs = []
    try:
        with open("/proc/self/cgroup") as file:
            for line in file:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controllers == "":
                    dirs.append("/sys/fs/cgroup" + path.rstrip("/"))
                elif "memory" in controllers.split(","):
                    dirs.append("/sys/fs/cgroup/memory" + path.rstrip("/"))
    except (OSError, ValueError):
        pass
    return list(dict.fromkeys([*dirs, "/sys/fs/cgroup", "/sys/fs/cgroup/memory"]))


def _field(path: str, name: str) -> Optional[int]:
    """The number after ``name`` on its line of ``path`` (kB for /proc's files), None if absent."""
    try:
        with open(path) as file:
            for line in file:
                if line.startswith(name):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _number(path: str) -> Optional[int]:
    try:
        with open(path) as file:
            text = file.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # cgroup v2 writes "max" for no limit
