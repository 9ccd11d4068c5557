"""Decompression of 4-bit group-quantised weights, as popxl-addons' ``GroupQuantizeDecompressOp`` C++ custom op
computes it (emulated in ``workbench.popart._internal.custom_ops``).

Input ``x`` is uint16 ``(rows, groups, ids)``, each element four 4-bit codes, the most significant first;
``scale`` and ``bias`` are ``(rows, groups, 1)``. Each code ``q`` becomes ``q * scale + bias`` in the dtype of
``scale`` (a product then a sum, each rounded), and the output is ``(rows, groups * ids * 4)``. It has no
gradient.
"""
from __future__ import annotations

import numpy as np

from workbench.ir import Tensor, TensorSpec, dtypes

from .registry import OpDef, create_op, register

OP_TYPE = "group_quantize_decompress"
_SHIFTS = np.array([12, 8, 4, 0], np.uint16)


def _infer(specs, attrs):
    x, scale, bias = specs
    if len(x.shape) != 3:
        raise ValueError("GroupQuantizeDecompressOp::setup x should have rank 3")
    if x.dtype is not dtypes.uint16:
        raise TypeError(f"{OP_TYPE}: x must hold uint16 packs of four 4-bit codes, got {x.dtype}")
    for name, spec in (("groupScale", scale), ("groupBias", bias)):
        if len(spec.shape) != 3:
            raise ValueError(f"GroupQuantizeDecompressOp::setup {name} should same rank as x")
        if spec.shape[2] != 1:
            raise ValueError(f"GroupQuantizeDecompressOp::setup {name} shape at last dimension should be 1")
        if tuple(spec.shape[:2]) != tuple(x.shape[:2]):
            raise ValueError(f"{OP_TYPE}: {name} {list(spec.shape)} must be [{x.shape[0]}, {x.shape[1]}, 1] for x "
                             f"{list(x.shape)}")
    rows, groups, ids = x.shape
    return [TensorSpec((rows, groups * ids * 4), scale.dtype)]


def _kernel(op, env):
    dtype = op.outputs[0].dtype.as_numpy()

    def run(x, scale, bias):
        codes = (x[..., None] >> _SHIFTS) & 15  # (rows, groups, ids, 4), most significant code first
        codes = codes.reshape(x.shape[0], x.shape[1], -1).astype(dtype)
        out = codes * scale.astype(dtype) + bias.astype(dtype)
        return out.reshape(op.outputs[0].shape)
    return run


register(OpDef(OP_TYPE, _infer, _kernel, popart_class="GroupQuantizeDecompressOp"))


def group_quantize_decompress(x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    """The weights packed in ``x`` as 4-bit codes of groups with their own ``scale`` and ``bias``."""
    return create_op(OP_TYPE, [x, scale, bias], output_names=[x.name + "_decompressed"]).outputs[0]
