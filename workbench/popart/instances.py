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

            self._channel = world(self.job).channel("PopART's broadcastWeights")
        names = sorted(weights)
        everyone = self._channel.allgather_arrays([weights[name] for name in names],
                                                  f"broadcastWeights from instance {root}: {len(names)} weights")
        return {name: array.copy() for name, array in zip(names, everyone[root])}


def check_root(root: Any, instances: int) -> int:
    if not isinstance(root, int) or isinstance(root, bool) or not 0 <= root < instances:
        raise popart_exception(f"broadcastWeights: rootRank must be the index of an instance of the job, 0 to "
                               f"{instances - 1}, got {root!r}")
    return root
