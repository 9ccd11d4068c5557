"""Ops that ONNX or PopART's ai.graphcore domain have and popxl does not: more unary functions (log1p and
expm1 among them), the minimum of two tensors, atan2, pad, GatherElements, GatherND, local response
normalisation, bucketize and sequence_slice. PopART programs lower onto them; they have no popxl front end. Half-precision
inputs are computed in float32 and rounded back.
"""
from __future__ import annotations

from typing import Callable, Literal

import numpy as np

from workbench.ir import Op, TensorSpec, dtypes
from .elementwise import binary_entries, like_input
from .registry import OpDef, register
from .onnx_function_grads import grad_rule
from .special import erf


def _in_float32(fn: Callable[..., np.ndarray]) -> Callable[[Op, object], Callable]:
    """A kernel builder computing ``fn(x, **attrs)`` in at least float32, returned in the op's dtype."""
    def build(op: Op, env) -> Callable:
        dtype = op.outputs[0].dtype.as_numpy()
        attrs = {k: v for k, v in op.attrs.items()}
        if dtype == np.float16:
            return lambda a: fn(a.astype(np.float32), **attrs).astype(dtype)
        return lambda a: np.asarray(fn(a, **attrs), dtype=dtype)
    return build


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _softplus(x):
    return np.logaddexp(0.0, x)


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _selu(x, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875):
    return gamma * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _leaky_relu(x, alpha=0.01):
    return np.where(x >= 0, x, alpha * x)


def _hard_sigmoid(x, alpha=0.2, beta=0.5):
    return np.clip(alpha * x + beta, 0.0, 1.0)


def _thresholded_relu(x, alpha=1.0):
    return np.where(x > alpha, x, 0.0)


UNARY = {
    "sigmoid": _sigmoid, "erf": erf, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "softsign": lambda x: x / (1.0 + np.abs(x)), "softplus": _softplus, "elu": _elu, "selu": _selu,
    "leaky_relu": _leaky_relu, "hard_sigmoid": _hard_sigmoid, "thresholded_relu": _thresholded_relu,
    "reciprocal": lambda x: 1.0 / x, "round": np.round, "log1p": np.log1p, "expm1": np.expm1,
}
UNARY_POPART_CLASSES = {
    "sigmoid": "SigmoidOp", "erf": "ErfOp", "tan": "TanOp", "asin": "AsinOp", "acos": "AcosOp", "atan": "AtanOp",
    "sinh": "SinhOp", "cosh": "CoshOp", "asinh": "AsinhOp", "acosh": "AcoshOp", "atanh": "AtanhOp",
    "softsign": "SoftSignOp", "softplus": "SoftPlusOp", "elu": "EluOp", "selu": "SeluOp",
    "leaky_relu": "LeakyReluOp", "hard_sigmoid": "HardSigmoidOp", "thresholded_relu": "ThresholdedReluOp",
    "reciprocal": "ReciprocalOp", "round": "RoundOp", "log1p": "Log1pOp", "expm1": "Expm1Op",
}


def _pad_infer(specs, attrs):
    pads, rank = attrs["pads"], len(specs[0].shape)
    if len(pads) != 2 * rank:
        raise ValueError(f"pad: pads needs {2 * rank} entries (begins then ends) for a rank-{rank} tensor, "
                         f"got {list(pads)}")
    shape = tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(specs[0].shape))
    if any(d < 0 for d in shape):
        raise ValueError(f"pad: pads {list(pads)} leave a negative size from shape {specs[0].shape}")
    return [TensorSpec(shape, specs[0].dtype)]


def _pad_kernel(op: Op, env):
    pads, mode, value = op.attrs["pads"], op.attrs["mode"], op.attrs["value"]
    rank = len(op.inputs[0].shape)
    crop = tuple(slice(max(-pads[i], 0), d - max(-pads[i + rank], 0)) for i, d in enumerate(op.inputs[0].shape))
    widths = [(max(pads[i], 0), max(pads[i + rank], 0)) for i in range(rank)]
    if mode == "constant":
        return lambda a: np.pad(a[crop], widths, mode="constant", constant_values=value)
    numpy_mode = {"reflect": "reflect", "edge": "edge"}[mode]
    return lambda a: np.pad(a[crop], widths, mode=numpy_mode)


def _gather_elements_infer(specs, attrs):
    return [TensorSpec(specs[1].shape, specs[0].dtype)]


def _gather_elements_kernel(op: Op, env):
    axis = op.attrs["axis"]

    def gather(data, indices):
        indices = np.where(indices < 0, indices + data.shape[axis], indices)
        return np.take_along_axis(data, indices, axis)
    return gather


def _gather_nd_infer(specs, attrs):
    data, indices, batch = specs[0].shape, specs[1].shape, attrs["batch_dims"]
    return [TensorSpec(tuple(indices[:-1]) + tuple(data[batch + indices[-1]:]), specs[0].dtype)]


def _gather_nd_kernel(op: Op, env):
    def gather(data, indices):
        indices = np.where(indices < 0, indices + np.array(data.shape[:indices.shape[-1]]), indices)
        flat = indices.reshape(-1, indices.shape[-1])
        picked = np.stack([data[tuple(i)] for i in flat]) if len(flat) else np.zeros((0,), data.dtype)
        return picked.reshape(indices.shape[:-1] + data.shape[indices.shape[-1]:])
    return gather


def _lrn_kernel(op: Op, env):
    size, alpha, beta, bias = op.attrs["size"], op.attrs["alpha"], op.attrs["beta"], op.attrs["bias"]
    dtype = op.outputs[0].dtype.as_numpy()

    def lrn(x):
        wide = x.astype(np.float32) if dtype == np.float16 else x
        square = wide * wide
        padded = np.pad(square, [(0, 0), ((size - 1) // 2, size // 2)] + [(0, 0)] * (x.ndim - 2))
        window = sum(padded[:, i:i + x.shape[1]] for i in range(size))
        return (wide / (bias + alpha / size * window) ** beta).astype(dtype)
    return lrn


def _bucketize_infer(specs, attrs):
    x, boundaries = specs
    if len(boundaries.shape) != 1:
        raise ValueError(f"bucketize: boundaries must be 1-D (sorted, increasing), got shape {boundaries.shape}")
    return [TensorSpec(x.shape, dtypes.int32)]


def _bucketize_kernel(op: Op, env):
    """The index of each element's bucket among the sorted ``boundaries``: the count of boundaries below it
    (``right``: at or below it)."""
    side: Literal["left", "right"] = "right" if op.attrs["right"] else "left"
    return lambda x, boundaries: np.searchsorted(boundaries, x, side=side).astype(np.int32)


def _sequence_slice_infer(specs, attrs):
    source, destination, *counts = specs
    if source.shape[1:] != destination.shape[1:] or source.dtype != destination.dtype:
        raise ValueError(f"sequence_slice: source {source.shape} {source.dtype.name} and destination "
                         f"{destination.shape} {destination.dtype.name} must match but for their first axis")
    if len({spec.shape for spec in counts}) != 1 or len(counts[0].shape) != 1:
        raise ValueError("sequence_slice: the counts and both offsets must be 1-D tensors of one length")
    return [destination]


def _sequence_slice_kernel(op: Op, env):
    """A copy of the destination with, for each i, ``count[i]`` rows of the source from ``source_offset[i]``
    written from ``destination_offset[i]``; with ``zero_unused`` the rows nothing was written to are 0."""
    zero_unused = op.attrs["zero_unused"]

    def sequence_slice(source, destination, counts, source_offsets, destination_offsets):
        out = np.zeros_like(destination) if zero_unused else destination.copy()
        for count, start, to in zip(counts.astype(np.int64), source_offsets.astype(np.int64),
                                    destination_offsets.astype(np.int64)):
            out[to:to + count] = source[start:start + count]
        return out
    return sequence_slice


def _register() -> None:
    for name, fn in UNARY.items():
        register(OpDef(name, like_input(name, "float"), _in_float32(fn), grad=grad_rule(name),
                       popart_class=UNARY_POPART_CLASSES[name]))
    binary_entries("minimum", np.minimum, grad=grad_rule("minimum"), popart_class="MinOp")
    binary_entries("atan2", np.arctan2, allowed="float", grad=grad_rule("atan2"), popart_class="Atan2Op")
    register(OpDef("bucketize", _bucketize_infer, _bucketize_kernel, popart_class="BucketizeOp"))
    register(OpDef("sequence_slice", _sequence_slice_infer, _sequence_slice_kernel, popart_class="SequenceSliceOp"))
    register(OpDef("pad", _pad_infer, _pad_kernel, grad=grad_rule("pad"), popart_class="BasePadOutplaceOp"))
    for name, infer, kernel, popart_class in (
            ("gather_elements", _gather_elements_infer, _gather_elements_kernel, "GatherElementsOp"),
            ("gather_nd", _gather_nd_infer, _gather_nd_kernel, "GatherNdOp"),
            ("lrn", lambda specs, attrs: [specs[0]], _lrn_kernel, "LRNOp")):
        register(OpDef(name, infer, kernel, grad=grad_rule(name), popart_class=popart_class))


_register()
