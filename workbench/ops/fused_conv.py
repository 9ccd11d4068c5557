"""A convolution with a constant weight, the per-channel scales and shifts after it and a closing relu, as
one kernel: what an inference CNN's Conv, bias, BatchNormalization and Relu become.

The scales and shifts (batch norm in inference, a ``mul`` or ``add`` of one value per channel) must be
constants too, or reshapes of constants, as ONNX initializers are: their composed factor is folded into
the weight once, when the kernel is built, and their shift becomes a bias that the convolution adds
(``conv_kernels.conv``: its matrix product adds it, or a Winograd convolution at one tile position);
the relu then runs over that output. Batch norm, its scale and shift and the bias cost no pass of
their own. ``runtime/execution/fusion.py`` finds such runs; the ops after the convolution then give
their input back unchanged. Values differ from the ops one by one in the last bits.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from workbench.ir import Op

from .activations import zero_rows
from .channel_affine import Map, channel_map, constant_value
from .conv_kernels import conv

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
        step: Map = channel_map(op)(*(constant_value(t) for t in op.inputs[1:]))
        f, s = (np.broadcast_to(v, op.inputs[0].shape)[(0, slice(None)) + (0,) * (len(op.inputs[0].shape) - 2)]
                if v is not None else None for v in step)
        if f is not None:
            factor, shift = factor * f, shift * f
        if s is not None:
            shift = shift + s
    return factor.astype(np.float32), shift.astype(np.float32)


def run_kernels(ops: Sequence[Op]) -> list[Callable]:
    """Kernels for a run: a foldable convolution, foldable maps, maybe a relu, each reading the one
    before. The first computes the whole run; the others give their input 0 back."""
    head, maps = ops[0], [op for op in ops[1:] if op.type != "relu"]
    relu = ops[-1].type == "relu"
    if not foldable_conv(head) or not all(foldable_map(op) for op in maps) or (
            len(maps) + 1 + relu != len(ops) or any(op.type == "relu" for op in ops[1:-1])):
        raise ValueError(f"not a convolution with constant scales and shifts: {[op.type for op in ops]}")
    x_shape, out_shape = head.inputs[0].shape, head.outputs[0].shape
    weight = constant_value(head.inputs[1])
    factor, shift = _composed(maps, weight.shape[0])
    folded = (weight * factor.reshape((-1,) + (1,) * (weight.ndim - 1))).astype(np.float32)
    attrs = head.attrs
    pads = tuple(zip(attrs["pads_begin"], attrs["pads_end"]))
    out = out_shape[2:]
    base = conv(x_shape, folded.shape, attrs["stride"], attrs["dilation"], pads, attrs["groups"], out,
                np.dtype(np.float32), folded, shift if np.any(shift) else None)
    rows, zeros = zero_rows(out_shape, np.dtype(np.float32))

    def fused(x: np.ndarray, _weight: np.ndarray) -> np.ndarray:
        y = base(x, folded)
        if relu:
            flat = y.reshape(rows)
            np.maximum(flat, zeros, out=flat)
        return y

    def passed(x: np.ndarray, *others: np.ndarray) -> np.ndarray:
        return x
    return [fused] + [passed] * (len(ops) - 1)
