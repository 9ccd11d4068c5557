"""Gradient rules and pieces of the convolutions and poolings of ``convolution.py``, made of ordinary ops.

A weight gradient is itself a convolution: batch and channel axes swap roles, the gradient acts as
the kernel, and stride and dilation trade places. Pooling gradients send each window's gradient
back to the window's positions, one kernel offset at a time.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from workbench.ir import Tensor

from . import grad_blocks as blocks
from .elementwise import add, equal
from .registry import apply, apply_many


def _channel_groups(t: Tensor, groups: int) -> list[Tensor]:
    if groups == 1:
        return [t]
    return list(apply_many("split", t, axis=1, splits=(t.shape[1] // groups,) * groups))


def _swap_batch_and_channels(t: Tensor) -> Tensor:
    return blocks.transpose(t, (1, 0) + tuple(range(2, t.rank)))


def planning_options(op) -> dict:
    """The forward convolution's planning options (memory proportions, dithering), which its gradient
    convolutions are planned with too, as PopART passes them on."""
    return {name: op.attrs[name] for name in ("available_memory_proportions", "enable_conv_dithering")
            if name in op.attrs}


def weight_grad(data: Tensor, source: Tensor, pads_begin: Sequence[int], pads_end: Sequence[int],
                stride: Sequence[int], dilation: Sequence[int], groups: int, kernel: Sequence[int],
                options: Optional[dict] = None) -> Tensor:
    """``w[c, d, k] = sum over n, o of source[n, c, o] * padded data[n, d, o * stride + k * dilation]``
    per channel group: a [C_source, C_data / groups, *kernel] tensor."""
    spatial = tuple(range(2, data.rank))
    parts = []
    for data_part, source_part in zip(_channel_groups(data, groups), _channel_groups(source, groups)):
        part = apply("conv", _swap_batch_and_channels(data_part), _swap_batch_and_channels(source_part), groups=1,
                     stride=tuple(dilation), dilation=tuple(stride), pads_begin=tuple(pads_begin),
                     pads_end=tuple(pads_end), **(options or {}))
        for axis, length in zip(spatial, kernel):
            part = blocks.keep_first(part, axis, length)
        parts.append(_swap_batch_and_channels(part))
    return blocks.concat(parts, 0)


def conv_grad(op, grads, fwd):
    """The input gradient is the transposed convolution of the gradient with the same weight;
    the weight gradient correlates the input with the gradient."""
    grad, attrs = grads[0], op.attrs
    if grad is None:
        return [None, None]
    x, weight = op.inputs
    geometry = {name: attrs[name] for name in ("groups", "stride", "dilation", "pads_begin")}
    options = planning_options(op)
    input_grad = apply("conv_transpose", grad, fwd(weight), output_shape=x.shape[2:], **geometry, **options)
    kernel_grad = weight_grad(fwd(x), grad, attrs["pads_begin"], attrs["pads_end"], attrs["stride"],
                              attrs["dilation"], attrs["groups"], weight.shape[2:], options)
    return [input_grad, kernel_grad]


def conv_transpose_grad(op, grads, fwd):
    """A convolution of the gradient (padded back to the uncropped output) with the same weight
    gives the input gradient; correlating it with the input gives the weight gradient."""
    grad, attrs = grads[0], op.attrs
    if grad is None:
        return [None, None]
    x, weight = op.inputs
    begin, stride, dilation = attrs["pads_begin"], attrs["stride"], attrs["dilation"]
    full = [max(s * (n - 1) + (k - 1) * d + 1, b + o) for n, k, s, d, b, o in zip(
        x.shape[2:], weight.shape[2:], stride, dilation, begin, attrs["output_shape"])]
    end = tuple(f - b - o for f, b, o in zip(full, begin, attrs["output_shape"]))
    input_grad = apply("conv", grad, fwd(weight), groups=attrs["groups"], stride=stride, dilation=dilation,
                       pads_begin=begin, pads_end=end)
    for axis, length in enumerate(x.shape[2:], 2):
        input_grad = blocks.keep_first(input_grad, axis, length)
    kernel_grad = weight_grad(grad, fwd(x), begin, end, stride, dilation, attrs["groups"], weight.shape[2:])
    return [input_grad, kernel_grad]


def windows_back(per_offset: Callable[[Sequence[int]], Tensor], in_shape: Sequence[int], padded: Sequence[int],
                 kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
                 pads_begin: Sequence[int]) -> Tensor:
    """Sum, over the kernel offsets ``k``, of ``per_offset(k)`` (one value per window) placed at
    the positions ``window start + k * dilation`` of the padded input; then the padding is cut."""
    axes = tuple(range(2, len(in_shape)))
    total = None
    for offset in np.ndindex(*kernel):
        starts = [k * d for k, d in zip(offset, dilation)]
        part = blocks.place(per_offset(offset), tuple(in_shape[:2]) + tuple(padded), starts, stride, axes)
        total = part if total is None else add(total, part)
    return blocks.take(total, pads_begin, [1] * len(axes), in_shape[2:], axes)


def max_pool_grad(x: Tensor, y: Tensor, grad: Tensor, padded: Sequence[int], kernel: Sequence[int],
                  stride: Sequence[int], dilation: Sequence[int], pads_begin: Sequence[int]) -> Tensor:
    """Each window's gradient goes to the elements equal to the window's maximum. Zero padding
    stands in for the forward pass's -inf: whatever lands on a pad is cut away."""
    axes = tuple(range(2, x.rank))
    full = x
    for axis, begin, length in zip(axes, pads_begin, padded):
        full = blocks.pad(full, axis, begin, length - begin - x.shape[axis])

    def routed(offset):
        starts = [k * d for k, d in zip(offset, dilation)]
        picked = blocks.take(full, starts, stride, y.shape[2:], axes)
        return blocks.masked(equal(picked, y), grad)
    return windows_back(routed, x.shape, padded, kernel, stride, dilation, pads_begin)
