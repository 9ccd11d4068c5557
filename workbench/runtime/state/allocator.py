"""Freed memory kept for the next run.

A run allocates and frees the same arrays every time. glibc's allocator gives large freed blocks back
to the system (arrays above its mmap threshold, and free memory at the top of its heap beyond its trim
threshold), so the next run faults in fresh zeroed pages for them: with several replicas taking turns
that was some 800 page faults and half the time of a training step. Raising both thresholds once per
process keeps that memory for reuse, as a device's static allocation would. Elsewhere than glibc
nothing changes.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
KEPT_BYTES = 512 << 20  # free heap memory kept rather than given back
LARGEST_HEAP_BLOCK = 32 << 20  # the largest block taken from the heap (glibc's own upper bound)

_kept: bool | None = None


def keep_freed_memory() -> bool:
    """Keep freed memory for reuse from now on (once per process); whether the allocator allows it."""
    global _kept
    if _kept is None:
        _kept = _set_thresholds()
    return _kept


def _set_thresholds() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, LARGEST_HEAP_BLOCK)) and bool(mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES))
