"""random_uniform_fill and random_normal_fill: ONNX's RandomUniform and RandomNormal as PopART runs
them, new values each time the op runs (each step, each loop iteration). Each op draws from a
generator of its own, seeded by its seed and its replica's index, so a program repeats its values
from one session to the next."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from workbench.ir import Tensor, TensorSpec, dtypes

from .registry import OpDef, create_op, register

__all__: list[str] = []


def _infer(specs, attrs) -> list[TensorSpec]:
    if not attrs["dtype"].is_floating_point:
        raise ValueError(f"random values must be of a float type, got {attrs['dtype']}")
    return [TensorSpec(attrs["shape"], attrs["dtype"])]


def _generator(op, env) -> np.random.Generator:
    return np.random.default_rng([op.attrs["seed"], env.replica])


def _uniform_kernel(op, env):
    rng, (low, high), shape = _generator(op, env), op.attrs["range"], op.attrs["shape"]
    dtype = op.outputs[0].dtype.as_numpy()
    return lambda: rng.uniform(low, high, shape).astype(dtype)


def _normal_kernel(op, env):
    rng, (mean, scale), shape = _generator(op, env), op.attrs["range"], op.attrs["shape"]
    dtype = op.outputs[0].dtype.as_numpy()
    return lambda: rng.normal(mean, scale, shape).astype(dtype)


register(OpDef("random_uniform_fill", _infer, _uniform_kernel, effect=True,
               popart_class="RandomUniformOp"))
register(OpDef("random_normal_fill", _infer, _normal_kernel, effect=True,
               popart_class="RandomNormalOp"))


def _fill(op_type: str, shape: Tuple[int, ...], dtype: dtypes.dtype, first: float, second: float,
          seed: int) -> Tensor:
    return create_op(op_type, [], {"shape": tuple(int(d) for d in shape), "dtype": dtype,
                                    "range": (float(first), float(second)), "seed": int(seed)}).outputs[0]


def random_uniform_fill(shape: Tuple[int, ...], dtype: dtypes.dtype, low: float, high: float, seed: int) -> Tensor:
    """Values uniform in [low, high), new each time the op runs."""
    return _fill("random_uniform_fill", shape, dtype, low, high, seed)


def random_normal_fill(shape: Tuple[int, ...], dtype: dtypes.dtype, mean: float, scale: float, seed: int) -> Tensor:
    """Values normal with ``mean`` and standard deviation ``scale``, new each time the op runs."""
    return _fill("random_normal_fill", shape, dtype, mean, scale, seed)
