"""Hypothesis strategies for gradient checks: shapes, and seeds for values kept away from kinks."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

SETTINGS = dict(max_examples=25, deadline=None)

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
nonscalar_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)
broadcast_pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=4)
seeds = st.integers(0, 2 ** 32 - 1)


def values(seed: int, shape, low: float = -2.0, high: float = 2.0, gap: float = 0.05) -> np.ndarray:
    """Uniform float64 values in [low, high], none within ``gap`` of zero (where abs, relu and sign bend)
    and no two within ``gap`` of each other (where max, min and sorting switch)."""
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape, dtype=np.int64))
    grid = np.arange(low + gap, high, gap)
    grid = grid[np.abs(grid) >= gap]
    picked = rng.choice(grid, size=count, replace=count > len(grid))
    return (picked + rng.uniform(-gap / 4, gap / 4, count)).reshape(shape)
