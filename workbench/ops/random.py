"""Random numbers from a seed tensor: split_random_seed, random_uniform/normal, dropout, shaped_dropout.

A seed tensor is two uint32 (a uint64 seed, most significant half first). Each kernel seeds a NumPy
``Generator`` with the seed's value when it runs, so the numbers depend only on that value: the same
seed gives the same numbers, another seed (another replica's, another step's) other numbers. They
are statistically, not bit-wise, like the IPU's: its hardware generator draws other streams.
"""
from __future__ import annotations

from typing import Iterable, Tuple

import numpy as np

from workbench.ir import Tensor, TensorSpec, constant, dtypes

from .arguments import expect_tensors
from .registry import OpDef, apply, create_op, register
from .rules import check_dtype

__all__ = ["split_random_seed", "random_uniform", "random_normal", "dropout", "shaped_dropout"]

_SEED = TensorSpec((2,), dtypes.uint32)


def _check_seed(op_type: str, spec: TensorSpec) -> None:
    if spec.shape != _SEED.shape or spec.dtype is not dtypes.uint32:
        raise ValueError(f"{op_type}: the seed tensor must have shape (2,) and dtype uint32, got {spec}")


def _generator(seed: np.ndarray) -> np.random.Generator:
    return np.random.default_rng([int(seed[0]), int(seed[1])])


# ----- seeds -----
def _modify_infer(specs, attrs):
    _check_seed("split_random_seed", specs[0])
    if specs[1].dtype is not dtypes.uint32 or specs[1].shape:
        raise ValueError(f"split_random_seed: the seed modifier must be a scalar uint32 tensor, got {specs[1]}")
    return [_SEED]


def _modify_kernel(op, env):
    """The seed of the stream numbered ``modifier`` spawned from ``seed``: equal seeds and modifiers
    give equal seeds, different modifiers independent ones."""
    def modify(seed, modifier):
        sequence = np.random.SeedSequence([int(seed[0]), int(seed[1])], spawn_key=(int(modifier),))
        return sequence.generate_state(2, np.uint32)
    return modify


register(OpDef("modify_random_seed", _modify_infer, _modify_kernel, popart_class="ModifyRandomSeedOp"))


def split_random_seed(seed: Tensor, n: int = 2) -> Tuple[Tensor, ...]:
    """``n`` new seeds derived from ``seed`` (shape (2,), uint32), each starting another stream: one
    ModifyRandomSeed op per seed, with the constant modifier 0, 1, ... as in popxl.

    Chain it to give every random op its own seed: ``seed, s1 = ops.split_random_seed(seed)``.
    """
    expect_tensors("split_random_seed", seed=seed)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"split_random_seed: n must be a positive int, got {n!r}")
    _check_seed("split_random_seed", seed.spec)
    return tuple(create_op("modify_random_seed", [seed, constant(i, dtypes.uint32)], {},
                           output_names=[f"{seed.name}_split{i}"]).outputs[0] for i in range(n))


# ----- distributions -----
def _sample_infer(op_type: str):
    def infer(specs, attrs):
        _check_seed(op_type, specs[0])
        if not attrs["dtype"].is_floating_point or attrs["dtype"] in (dtypes.float8_143, dtypes.float8_152):
            raise TypeError(f"{op_type}: dtype must be float16 or float32, got {attrs['dtype'].name}")
        return [TensorSpec(attrs["shape"], attrs["dtype"])]
    return infer


def _uniform_kernel(op, env):
    shape, low, high = op.attrs["shape"], op.attrs["low"], op.attrs["high"]
    dtype = op.attrs["dtype"].as_numpy()
    return lambda seed: _generator(seed).uniform(low, high, shape).astype(dtype)


def _normal_kernel(op, env):
    shape, mean, std = op.attrs["shape"], op.attrs["mean"], op.attrs["std"]
    dtype = op.attrs["dtype"].as_numpy()
    return lambda seed: _generator(seed).normal(mean, std, shape).astype(dtype)


register(OpDef("random_uniform", _sample_infer("random_uniform"), _uniform_kernel, popart_class="RandomUniformOp"))
register(OpDef("random_normal", _sample_infer("random_normal"), _normal_kernel, popart_class="RandomNormalOp"))


def _shape(op_type: str, shape: Iterable[int]) -> tuple[int, ...]:
    try:
        result = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{op_type}: shape must be a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in result):
        raise ValueError(f"{op_type}: shape must not have negative dimensions, got {result}")
    return result


def random_uniform(seed_tensor: Tensor, shape: Tuple[int, ...], low: float = 0.0, high: float = 1.0,
                   dtype: dtypes.dtype = dtypes.float32) -> Tensor:
    """A tensor of ``shape`` drawn uniformly from [low, high), seeded by ``seed_tensor``."""
    expect_tensors("random_uniform", seed_tensor=seed_tensor)
    return apply("random_uniform", seed_tensor, shape=_shape("random_uniform", shape), low=float(low),
                 high=float(high), dtype=dtype)


def random_normal(seed_tensor: Tensor, shape: Tuple[int, ...], mean: float = 0.0, std: float = 1.0,
                  dtype: dtypes.dtype = dtypes.float32) -> Tensor:
    """A tensor of ``shape`` drawn from a normal distribution, seeded by ``seed_tensor``."""
    expect_tensors("random_normal", seed_tensor=seed_tensor)
    return apply("random_normal", seed_tensor, shape=_shape("random_normal", shape), mean=float(mean),
                 std=float(std), dtype=dtype)


# ----- dropout -----
def _dropout_infer(op_type: str):
    def infer(specs, attrs):
        check_dtype(op_type, specs[0], "number")  # popxl builds it for any number; the IPU runs floats only
        _check_seed(op_type, specs[1])
        mask = attrs["mask_shape"]
        if mask is not None and not _broadcasts_to(mask, specs[0].shape):
            raise ValueError(f"{op_type}: the mask shape {mask} must broadcast to the input shape "
                             f"{specs[0].shape}")
        return [TensorSpec(specs[0].shape, specs[0].dtype)]
    return infer


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _dropout_kernel(op, env):
    """Zero each mask element with probability ``ratio``; scale the kept ones by 1 / (1 - ratio)."""
    check_dtype(op.type, op.inputs[0].spec, "float")
    ratio = op.attrs["ratio"]
    mask_shape = op.attrs["mask_shape"] or op.inputs[0].shape
    dtype = op.inputs[0].dtype.as_numpy()
    scale = dtype.type(1.0 / (1.0 - ratio))

    def dropout(t, seed):
        keep = _generator(seed).random(mask_shape) >= ratio
        return t * (keep * scale).astype(dtype)
    return dropout


def _dropout_grad(op, grads, fwd):
    """PopART's DropoutGradOp: the same dropout (same seed, so the same mask and scale) of the output gradient."""
    if grads[0] is None:
        return [None, None]
    return [create_op(op.type, [grads[0], fwd(op.inputs[1])], dict(op.attrs),
                      output_names=[op.inputs[0].name + "_grad"]).outputs[0], None]


register(OpDef("dropout", _dropout_infer("dropout"), _dropout_kernel, grad=_dropout_grad, popart_class="DropoutOp"))
register(OpDef("shaped_dropout", _dropout_infer("shaped_dropout"), _dropout_kernel, grad=_dropout_grad,
               popart_class="ShapedDropoutOp"))


def _ratio(op_type: str, name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not 0 <= value < 1:
        raise ValueError(f"{op_type}: {name} must be a probability in [0, 1), got {value!r}")
    return float(value)


def dropout(t: Tensor, seed_tensor: Tensor, p: float) -> Tensor:
    """Zero each element of ``t`` with probability ``p`` and scale the others by 1 / (1 - p); the
    mask comes from ``seed_tensor`` (give each step and replica its own seed)."""
    expect_tensors("dropout", t=t, seed_tensor=seed_tensor)
    return apply("dropout", t, seed_tensor, ratio=_ratio("dropout", "p", p), mask_shape=None)


def shaped_dropout(t: Tensor, seed_tensor: Tensor, shape: Iterable[int], ratio: float) -> Tensor:
    """Dropout with a mask of ``shape`` broadcast over ``t``, so that whole rows or channels are kept
    or dropped together; kept values are scaled by 1 / (1 - ratio)."""
    expect_tensors("shaped_dropout", t=t, seed_tensor=seed_tensor)
    return apply("shaped_dropout", t, seed_tensor, ratio=_ratio("shaped_dropout", "ratio", ratio),
                 mask_shape=_shape("shaped_dropout", shape))

