"""Gradient clipping by global norm (``popart.ClipNormSettings``), as PopART's transform adds it.

For each clip group, the gradients the optimiser is about to read (accumulated, reduced over replicas and
loss-scaled, as PopART clips the input of its weight update) give the global norm
``GlobalNorm___<group> = sqrt(sum of every element squared)``; each gradient of the group is then multiplied
by ``maxNorm / max(GlobalNorm, maxNorm)``. The norm is computed on the IPU holding most of the group's
gradients, the others copied there, and the factor copied back to each gradient's IPU.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from workbench import ops
from workbench.ir import Tensor, constant, ipu
from workbench.onnx.lowering import adopt_name

from .errors import popart_exception
from .optimizers import ClipNormSettings
from .reserved import PREFIXES

GLOBAL_NORM = PREFIXES["reservedGlobalNormPrefix"]


def check_clip_groups(settings: Sequence[ClipNormSettings], trainable: Sequence[str]) -> None:
    """PopART's checks: one group at most when a group clips every weight, and every weight named trainable."""
    if len(settings) > 1 and any(s.getMode() is ClipNormSettings.Mode.ClipAllWeights for s in settings):
        raise popart_exception("Multiple clip groups specified, but one has the mode 'ClipAllWeights'. When using "
                               "ClipNormSettings.clipAllWeights(...), only one group should be specified.")
    for group in settings:
        for weight in group.getWeightIds():
            if weight not in trainable:
                raise popart_exception(f"Could not find a varupdate op for tensor {weight}: gradient clipping "
                                       f"applies to weights the optimizer updates ({', '.join(trainable) or 'none'})")


def clip_by_norms(settings: Sequence[ClipNormSettings], gradients: dict[str, Tensor]) -> dict[str, Tensor]:
    """``gradients`` (by weight) with every clip group of ``settings`` clipped (see the module docstring)."""
    check_clip_groups(settings, list(gradients))
    clipped = dict(gradients)
    for index, group in enumerate(settings):
        names = list(gradients) if group.getMode() is ClipNormSettings.Mode.ClipAllWeights else group.getWeightIds()
        factor = _clip_factor(index, [gradients[name] for name in names], group.getMaxNorm())
        for name in names:
            gradient = gradients[name]
            with ipu(gradient.ipu):
                clipped[name] = ops.mul(gradient, _on(factor, gradient.ipu))
    return clipped


def _clip_factor(index: int, gradients: list[Tensor], max_norm: float) -> Tensor:
    """``maxNorm / max(global norm, maxNorm)`` of ``gradients``, on the IPU holding most of them."""
    chosen = Counter(gradient.ipu for gradient in gradients).most_common(1)[0][0]
    squares = []
    for gradient in gradients:
        with ipu(gradient.ipu):
            squares.append(_on(ops.sumsquare(gradient), chosen))
    with ipu(chosen):
        total = squares[0]
        for square in squares[1:]:
            total = ops.add(total, square)
        norm = ops.sqrt(total)
        adopt_name(norm, f"{GLOBAL_NORM}{index}")
        limit = constant(np.array(max_norm, norm.dtype.as_numpy()), norm.dtype)
        return ops.div(limit, ops.maximum(norm, limit))


def _on(tensor: Tensor, target: int) -> Tensor:
    return tensor if tensor.ipu == target else ops.ipu_copy(tensor, target)
