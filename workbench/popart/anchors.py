"""Host arrays of a session run, laid out as PopART lays them out.

With every factor above 1, an input is ``[batchesPerStep, accumulationFactor, replicationFactor,
*shape]`` (any array of that many elements is taken). Anchors: ALL ``[batchesPerStep,
accumulationFactor, replication, *shape]``, EVERYN ``[batchesPerStep // N, accumulationFactor,
replication, *shape]``, FINAL and SUM ``[replication, *shape]``; each factor of 1 is left out. The
program stores ALL and EVERYN anchors every micro-batch (the host keeps every N-th micro-batch for
EVERYN, as PopART does), and FINAL and SUM anchors once, after the loops.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .dataflow import AnchorReturnType, AnchorReturnTypeId
from .errors import popart_exception

_ONCE = (AnchorReturnTypeId.Final, AnchorReturnTypeId.Sum)


@dataclass(frozen=True, slots=True)
class HostLayout:
    """The factors of a run's host arrays: batches per step, micro-batches per batch, replicas."""

    batches_per_step: int
    accumulation: int
    replicas: int

    @property
    def micro_batches(self) -> int:
        return self.batches_per_step * self.accumulation

    def input_shape(self, shape: tuple) -> list[int]:
        factors = (self.batches_per_step, self.accumulation, self.replicas)
        return [d for d in factors if d != 1] + list(shape)

    def stream_shape(self, shape: tuple) -> list[int]:
        """How the runtime takes an input: ``[micro-batches, replicas, *shape]`` without the 1s."""
        return [d for d in (self.micro_batches, self.replicas) if d != 1] + list(shape)

    def anchor_shape(self, art: AnchorReturnType, shape: tuple) -> list[int]:
        if art.id() in _ONCE:
            factors: tuple = (self.replicas,)
        elif art.id() is AnchorReturnTypeId.EveryN:
            factors = (self.batches_per_step // art.rp(), self.accumulation, self.replicas)
        else:
            factors = (self.batches_per_step, self.accumulation, self.replicas)
        return [d for d in factors if d != 1] + list(shape)

    def describe(self, elements: int) -> str:
        """The factors behind an expected element count, as PopART lists them."""
        return (f"\n   replication  factor = {self.replicas}\n   accumulation factor = {self.accumulation}"
                f"\n   batches per step    = {self.batches_per_step}\n   Tensor nelms        = {elements}")


def create(session: Any) -> dict[str, np.ndarray]:
    """Zeroed anchor arrays of the session's anchors (``initAnchorArrays``)."""
    arrays = {}
    flow, layout = session.dataFlow, session._host_layout()
    for anchor in flow.anchors():
        info = session.getInfo(anchor)
        art = flow.art(anchor)
        if art.id() is AnchorReturnTypeId.EveryN and flow.batchesPerStep() % art.rp():
            raise popart_exception("Invalid anchor period, is not divisble by batchesPerStep")
        arrays[anchor] = np.zeros(layout.anchor_shape(art, tuple(info.shape())), info.data_type_lcase())
    return arrays


def picked_batches(stored: np.ndarray, art: AnchorReturnType, layout: HostLayout) -> np.ndarray:
    """What one anchor returns of the micro-batches the program stored, as
    ``[kept micro-batches, replicas, *shape]``."""
    head = (layout.micro_batches > 1) + (layout.replicas > 1)
    full = stored.reshape((layout.micro_batches, layout.replicas) + stored.shape[head:])
    if art.id() in _ONCE:
        return full[:1]  # stored once, after the loops
    if art.id() is AnchorReturnTypeId.EveryN:
        return full[art.rp() - 1::art.rp()]  # every N-th micro-batch, as PopART counts them
    return full


def deliver(tensor_id: str, stored: np.ndarray, art: AnchorReturnType, stepio: Any, layout: HostLayout) -> None:
    """Write one anchor's stored micro-batches into the step IO as its return type asks (the arrays
    of a ``PyStepIO`` were checked before the run)."""
    picked = picked_batches(stored, art, layout)
    if hasattr(stepio, "write_output"):
        stepio.write_output(tensor_id, picked)
        return
    target = stepio.output(tensor_id)
    target[...] = picked.reshape(target.shape)
