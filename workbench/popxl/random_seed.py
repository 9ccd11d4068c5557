"""popxl.random_seed: host-side seeds for the random ops (a uint64 seed as two uint32)."""
from typing import Tuple

import numpy as np

__all__ = ["create_seeds", "uint64_to_two_uint32", "two_uint32_to_uint64"]

MAX_UINT64 = 2 ** 64 - 1


def create_seeds(seed: int, offset: int = 0, batches_per_step: int = 1, gradient_accumulation_factor: int = 1,
                 replicas: int = 1) -> np.ndarray:
    """Seed tensors for a run, drawn from a NumPy generator seeded with ``seed + offset``.

    One uint64 per batch, accumulation step and replica, each as [high, low] uint32, laid out as
    ``[batches_per_step, gradient_accumulation_factor, replicas, 2]`` with the dimensions of size 1
    squeezed away, which is the layout a seed stream's input takes (``create_seeds(s)`` has shape
    (2,), ``create_seeds(s, replicas=4)`` shape (4, 2)).
    """
    count = batches_per_step * gradient_accumulation_factor * replicas
    values = np.random.default_rng(seed + offset).integers(0, MAX_UINT64, endpoint=True, dtype=np.uint64,
                                                           size=count)
    pairs = np.array([uint64_to_two_uint32(int(v)) for v in values], dtype=np.uint32).reshape(count, 2)
    return np.squeeze(pairs.reshape(batches_per_step, gradient_accumulation_factor, replicas, 2))


def uint64_to_two_uint32(num: int) -> Tuple[int, int]:
    """``num`` split into its most and least significant 32 bits."""
    if not 0 <= num <= MAX_UINT64:
        raise ValueError(f"Number is negative or cannot be represented as a uint64: {num}")
    return num >> 32, num & 0xFFFFFFFF


def two_uint32_to_uint64(a: int, b: int) -> int:
    """The uint64 whose most significant 32 bits are ``a`` and least significant ``b``."""
    if not (0 <= a < 2 ** 32 and 0 <= b < 2 ** 32):
        raise ValueError(f"Either `a` or `b` are negative or cannot be represented as a uint32: {a}, {b}")
    return (a << 32) | b
