"""All or nothing: the device memory a run may write, saved before it and put back if it does not finish.

A run writes the variables and persistent tensors that some op updates in place, and the remote
buffers that ``remote_store`` writes. Each replica gets one spare array per such value, made once
with the session, so saving is a copy into memory that is already there.
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from workbench.ir import Ir

#: The op types that write a remote buffer (rather than one of their inputs) during a run.
BUFFER_WRITERS = frozenset({"remote_store"})


def written_buffers(ir: Ir) -> list:
    """The remote buffers some graph of ``ir`` stores into."""
    return list(dict.fromkeys(op.attrs["buffer"] for graph in ir.graphs for op in graph._ops
                              if op.type in BUFFER_WRITERS))


class Snapshot:
    """Spare copies of what a run may write, for every replica."""

    def __init__(self, device_values: list[dict], device_buffers: list[dict], written: list,
                 buffers: list):
        self._pairs = [(live, np.empty_like(live))
                       for values, replica_buffers in zip(device_values, device_buffers)
                       for live in [*(values[t] for t in written), *(replica_buffers[b] for b in buffers)]]

    def save(self) -> None:
        for live, spare in self._pairs:
            np.copyto(spare, live)

    def restore(self) -> None:
        """Put the saved values back; an interrupt meanwhile cannot leave it half done."""
        uninterrupted(lambda live=live, spare=spare: np.copyto(live, spare) for live, spare in self._pairs)


def uninterrupted(actions: Iterable[Callable[[], object]]) -> None:
    """Run each action to its end, again if a KeyboardInterrupt cut it short (actions are idempotent).

    Used while a run is being undone because of an interrupt or a failure, which the caller raises
    afterwards: a second Ctrl-C must not leave the undoing half done."""
    for action in actions:
        while True:
            try:
                action()
                break
            except KeyboardInterrupt:
                continue
