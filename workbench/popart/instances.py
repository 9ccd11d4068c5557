"""What a PopART session exchanges itself with the other instances of its job: ``broadcastWeights``.

MPI is loaded only here, and only for a job of several instances; the exchange travels on a channel
of the session's own, opened by every instance at the same call.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from workbench.ir.popdist_settings import PopdistSettings

from .errors import popart_exception


class JobLink:
    """One session's link to the other instances of its job (made for a job of several only)."""

    def __init__(self, job: PopdistSettings):
        self.job = job
        self._channel: Optional[Any] = None

    def broadcast(self, weights: dict[str, np.ndarray], root: int) -> dict[str, np.ndarray]:
        """Instance ``root``'s ``weights`` (same names, shapes and dtypes on every instance)."""
        if self._channel is None:
            from workbench.runtime.mpi import world

            self._channel = world(self.job).channel()
        names = sorted(weights)
        arrays = [np.ascontiguousarray(weights[name]) for name in names]
        packed = np.concatenate([a.reshape(-1).view(np.uint8) for a in arrays]) if arrays \
            else np.zeros(0, np.uint8)
        everyone = self._channel.allgather(packed, f"broadcastWeights from instance {root}: {len(names)} weights, "
                                                   f"{packed.nbytes} bytes")
        result, start = {}, 0
        for name, like in zip(names, arrays):
            result[name] = everyone[root][start: start + like.nbytes].view(like.dtype).reshape(like.shape).copy()
            start += like.nbytes
        return result


def check_root(root: Any, instances: int) -> int:
    if not isinstance(root, int) or isinstance(root, bool) or not 0 <= root < instances:
        raise popart_exception(f"broadcastWeights: rootRank must be the index of an instance of the job, 0 to "
                               f"{instances - 1}, got {root!r}")
    return root
