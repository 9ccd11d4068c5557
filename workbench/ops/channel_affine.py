"""Ops that scale and shift each channel, and one kernel for a run of them.

Batch norm in inference, and a ``mul`` or an ``add`` of a per-channel tensor (one value per channel of
axis 1, broadcast over the rest), each map x to x · factor + shift per channel. A run of them, each
reading the one before, is one such map: ``run_kernels`` composes the factors and shifts (a few
per-channel values) as the ops come, and the last op applies the whole map in two passes over the
data instead of two per op; where every factor is a constant (or a reshape of one, as ONNX's come),
the map is composed once, when the kernels are bound. Its values can differ from the ops one by one in
the last bits.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from workbench.ir import Constant, Op, Tensor

from .nn import batch_norm_factors

Map = tuple[Optional[np.ndarray], Optional[np.ndarray]]  # factor, shift; None: 1 or 0


FOLDED_THROUGH = frozenset({"reshape"})  # ops whose output is known when their input is a constant


def constant_value(tensor: Tensor) -> Optional[np.ndarray]:
    """The value of a constant, or of a reshape of one (as ONNX's per-channel factors come); None for
    anything else."""
    if isinstance(tensor, Constant):
        return tensor.data
    producer = tensor.producer
    if producer is None or producer.type not in FOLDED_THROUGH or len(producer.inputs) != 1:
        return None
    value = constant_value(producer.inputs[0])
    return None if value is None else value.reshape(tensor.shape)


def _per_channel(op: Op) -> bool:
    """Whether input 1 of a mul or add holds one value per channel of input 0 (or one value)."""
    x, other = op.inputs[0].shape, op.inputs[1].shape
    if len(x) < 2 or len(other) > len(x) or other == x:
        return False
    padded = (1,) * (len(x) - len(other)) + tuple(other)
    return all(n == 1 for i, n in enumerate(padded) if i != 1) and padded[1] in (1, x[1])


def channel_map(op: Op) -> Optional[Callable[..., Map]]:
    """``map(*other_inputs)``: the factor and shift of ``op`` as one per-channel map of input 0, each
    shaped to broadcast over it; None where ``op`` is no such map (or not in float32)."""
    if any(t.dtype.as_numpy() != np.float32 for t in (*op.inputs, *op.outputs)):
        return None
    if op.type == "batch_norm_inference" and len(op.inputs[0].shape) >= 2:
        return batch_norm_factors(op)
    if op.type in ("mul", "add") and len(op.inputs) == 2 and _per_channel(op):
        if op.type == "mul":
            return lambda factor: (factor, None)
        return lambda shift: (None, shift)
    return None


def _then(first: Map, second: Map) -> Map:
    """The map applying ``first``, then ``second``."""
    (f1, s1), (f2, s2) = first, second
    factor = f1 if f2 is None else f2 if f1 is None else f1 * f2
    shift = s1 if f2 is None or s1 is None else s1 * f2
    shift = s2 if shift is None else shift if s2 is None else shift + s2
    return factor, shift


def run_kernels(ops: Sequence[Op], overwrite: bool) -> list[Callable]:
    """Kernels for ``ops``, each reading the output of the one before: all but the last give their
    input 0 back unchanged, noting their map; the last applies the composed map to it, over that
    array itself when ``overwrite`` (it dies at the first op), else into a new one."""
    maps = [channel_map(op) for op in ops]
    if any(m is None for m in maps):
        raise ValueError(f"not a run of per-channel maps: {[op.type for op in ops]}")
    constants = [[constant_value(t) for t in op.inputs[1:]] for op in ops]
    if all(value is not None for values in constants for value in values):
        return _constant_run_kernels(maps, constants, overwrite)
    composed: list[Map] = [(None, None)]

    def noting(index: int) -> Callable:
        def note(x, *others):  # the first op starts afresh, whatever a failed run left
            composed[0] = _then(composed[0] if index else (None, None), maps[index](*others))
            return x
        return note

    def apply(x, *others):
        factor, shift = _then(composed[0], maps[-1](*others))
        return _apply(x, factor, shift, overwrite)
    return [noting(i) for i in range(len(ops) - 1)] + [apply]


def _apply(x: np.ndarray, factor: Optional[np.ndarray], shift: Optional[np.ndarray], overwrite: bool) -> np.ndarray:
    y = x if overwrite else None
    if factor is not None:
        y = np.multiply(x, factor, out=y)
    if shift is not None:
        y = np.add(x if y is None else y, shift, out=y)
    return np.array(x) if y is None else y


def _constant_run_kernels(maps: list, constants: list, overwrite: bool) -> list[Callable]:
    """A run whose factors are all constants: its map is composed once, when bound."""
    composed: Map = (None, None)
    for map_of, values in zip(maps, constants):
        composed = _then(composed, map_of(*values))
    factor, shift = composed

    def passed(x, *others):
        return x

    def apply(x, *others):
        return _apply(x, factor, shift, overwrite)
    return [passed] * (len(maps) - 1) + [apply]
