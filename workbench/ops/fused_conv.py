"""A convolution with a constant weight, the per-channel scales and shifts after it and a closing relu, as
one kernel: what an inference CNN's Conv, bias, BatchNormalization and Relu become; and, before an
unpadded convolution, the scales, shifts and relu feeding it (DenseNet's BatchNormalization and Relu
before each 1×1 Conv), which become one pass and more folding (``run_kernels``).

The scales and shifts (batch norm in inference, a ``mul`` or ``add`` of one value per channel) must be
constants too, or reshapes of constants, as ONNX initializers are: their composed factor is folded into
the weight once, when the kernel is built, and their shift becomes a bias that the convolution adds
(``conv_kernels.conv``: its matrix product adds it, or a Winograd convolution at one tile position);
the relu is taken in the convolution's own passes where it has some that can. Batch norm, its scale
and shift and the bias cost no pass of their own. ``runtime/execution/fusion.py`` finds such runs; the
ops after the convolution then give their input back unchanged. A run may close with a 3×3 max pool of
stride 2 after its relu (``pooled_conv.py``), whose step then gives the run's result. Values differ from
the ops one by one in the last bits.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from workbench.ir import Op

from .channel_affine import Map, channel_map, constant_value
from . import pooled_conv
from .conv_kernels import Destination, conv


def activation(op: Op) -> bool:
    """The relu that may close a run, or end a prologue."""
    return op.type == "relu"


def has_convolution(ops: Sequence[Op]) -> bool:
    """Whether a run (of ``runtime/execution/fusion.py``) is a convolution run."""
    return any(op.type == "conv" for op in ops)


def foldable_conv(op: Op) -> bool:
    """A float32 convolution of a constant weight."""
    return (op.type == "conv" and op.inputs[0].dtype.as_numpy() == np.float32
            and constant_value(op.inputs[1]) is not None)


def foldable_map(op: Op) -> bool:
    """A per-channel scale or shift (``channel_affine``) whose factors are all constants."""
    return channel_map(op) is not None and all(constant_value(t) is not None for t in op.inputs[1:])


def _composed(maps: Sequence[Op], channels: int) -> tuple[np.ndarray, np.ndarray]:
    """The factor and shift, one float32 per channel, of applying ``maps`` in turn."""
    factor, shift = np.ones(channels, np.float64), np.zeros(channels, np.float64)
    for op in maps:
        map_of = channel_map(op)
        if map_of is None:
            raise ValueError(f"{op.name} ({op.type}) scales or shifts no channel")
        step: Map = map_of(*(constant_value(t) for t in op.inputs[1:]))
        f, s = (np.broadcast_to(v, op.inputs[0].shape)[(0, slice(None)) + (0,) * (len(op.inputs[0].shape) - 2)]
                if v is not None else None for v in step)
        if f is not None:
            factor, shift = factor * f, shift * f
        if s is not None:
            shift = shift + s
    return factor.astype(np.float32), shift.astype(np.float32)


def takes_prologue(op: Op) -> bool:
    """A convolution of one group reading no padding: what a relu before it may be folded into
    (``run_kernels``)."""
    return op.attrs["groups"] == 1 and not any(op.attrs["pads_begin"]) and not any(op.attrs["pads_end"])


def nonzero_factor(maps: Sequence[Op]) -> bool:
    """Whether ``maps`` (foldable) compose to a finite factor other than zero in every channel."""
    factor, shift = _composed(maps, maps[0].inputs[0].shape[1])
    return bool(np.all(np.isfinite(factor) & (factor != 0) & np.isfinite(shift)))


def _parts(ops: Sequence[Op]) -> tuple[list[Op], Op, list[Op], bool, Optional[Op]]:
    """The maps of the prologue (before its relu), the convolution, the maps after it, whether a relu
    closes them, and the max pool after that relu, if any; a ValueError where ``ops`` are no such run."""
    pool = ops[-1] if ops and pooled_conv.pools_phases(ops[-1]) else None
    if pool is not None:
        ops = ops[:-1]
    at = next((i for i, op in enumerate(ops) if op.type == "conv"), None)
    if at is None:
        raise ValueError(f"not a run with a convolution: {[op.type for op in ops]}")
    prologue, head, tail = list(ops[:at]), ops[at], list(ops[at + 1:])
    relu = bool(tail) and activation(tail[-1])
    before, maps = prologue[:-1], tail[:-1] if relu else tail
    well_formed = (foldable_conv(head) and all(foldable_map(op) for op in before + maps)) and (
        not prologue or (before and activation(prologue[-1]) and takes_prologue(head) and nonzero_factor(before)))
    if pool is not None and not (relu and pooled_conv.writes_phases(head)):
        well_formed = False
    if not well_formed:
        raise ValueError(f"not a convolution with constant scales and shifts: {[op.type for op in ops]}")
    return before, head, maps, relu, pool


def run_kernels(ops: Sequence[Op], destination: Destination = None) -> list[Callable]:
    """Kernels for a run: maybe foldable maps and a relu before an unpadded convolution of one group
    (its prologue), the convolution of a constant weight, foldable maps, maybe a relu, each reading the
    one before. With a ``destination`` the run's result goes into the array it gives (``concat_into.py``).

    A prologue x -> relu(x f + s) (per channel, f finite and not zero) is |f| max(x g, c g) + s with
    g = sign(f) and c = -s / f: its first op computes max(x g, c g), one pass over x where every g is
    1, two else; |f| is folded into the convolution's weight, and the weight times s, a constant per
    output channel (no padding reads anything else), into its bias. The convolution's step computes
    the rest of the run; every other op gives its input 0 back."""
    before, head, maps, relu, pool = _parts(ops)
    x_shape, out_shape = head.inputs[0].shape, head.outputs[0].shape
    weight = np.asarray(constant_value(head.inputs[1]), np.float64)
    factor, shift = (v.astype(np.float64) for v in _composed(maps, weight.shape[0]))
    per_input_channel = (1, -1) + (1,) * (weight.ndim - 2)
    first: list[Callable] = []
    if before:
        in_factor, in_shift = (v.astype(np.float64) for v in _composed(before, weight.shape[1]))
        sign = np.sign(in_factor)
        shift = shift + factor * (weight.sum(axis=tuple(range(2, weight.ndim))) @ in_shift)
        weight = weight * np.abs(in_factor).reshape(per_input_channel)
        threshold = (-in_shift / in_factor * sign).astype(np.float32).reshape(per_input_channel)
        flip = None if np.all(sign > 0) else sign.astype(np.float32).reshape(per_input_channel)
        first = [_clipping(threshold, flip)] + [_passed] * len(before)
    folded = (weight * factor.reshape((-1,) + (1,) * (weight.ndim - 1))).astype(np.float32)
    attrs = head.attrs
    pads = tuple(zip(attrs["pads_begin"], attrs["pads_end"]))
    bias = shift.astype(np.float32) if np.any(shift) else None
    if pool is not None:
        pooled, pooling = pooled_conv.pooled_conv(x_shape, folded, bias, attrs["stride"], attrs["dilation"], pads,
                                                  out_shape[2:], pool.attrs["pads_begin"], pool.outputs[0].shape[2:],
                                                  destination)
        return first + [pooled] + [_passed] * (len(maps) + 1) + [pooling]
    fused = conv(x_shape, folded.shape, attrs["stride"], attrs["dilation"], pads, attrs["groups"], out_shape[2:],
                 np.dtype(np.float32), folded, bias, relu, destination)
    return first + [fused] + [_passed] * (len(maps) + relu)


def _clipping(threshold: np.ndarray, flip: Optional[np.ndarray]) -> Callable:
    """The prologue's first kernel: max(x g, c g), with ``flip`` g (None where every g is 1) and
    ``threshold`` c g."""
    def clipped(x: np.ndarray, *others: np.ndarray) -> np.ndarray:
        if flip is None:
            return np.maximum(x, threshold)
        z = np.multiply(x, flip)
        return np.maximum(z, threshold, out=z)
    return clipped


def _passed(x: np.ndarray, *others: np.ndarray) -> np.ndarray:
    return x
