"""random_uniform_fill and random_normal_fill: ONNX's RandomUniform and RandomNormal as PopART runs
them, new values each time the op runs (each step, each loop iteration). Each op draws from a
generator of its own, seeded by its seed, its replica's index and its program's session seed
(``set_session_seed``; 0 until set), so a program repeats its values from one session to the next;
it starts its sequence again whenever the session seed is set."""
from __future__ import annotations

import weakref
from typing import Tuple

import numpy as np

from workbench.ir import Ir, Tensor, TensorSpec, dtypes

from .registry import OpDef, create_op, register

__all__ = ["set_session_seed"]

# Per program: its session seed and how many times it was set (a new count restarts the generators).
_SESSION_SEEDS: "weakref.WeakKeyDictionary[Ir, tuple[int, int]]" = weakref.WeakKeyDictionary()


def set_session_seed(ir: Ir, seed: int) -> None:
    """Seed the random ops of ``ir``, restarting their sequences."""
    _, times = _SESSION_SEEDS.get(ir, (0, 0))
    _SESSION_SEEDS[ir] = (int(seed), times + 1)


def _infer(specs, attrs) -> list[TensorSpec]:
    if not attrs["dtype"].is_floating_point:
        raise ValueError(f"random values must be of a float type, got {attrs['dtype']}")
    return [TensorSpec(attrs["shape"], attrs["dtype"])]


def _drawer(op, env, draw):
    """A kernel calling ``draw(rng)``, the generator made anew whenever the session seed is set."""
    state: dict = {}

    def kernel():
        session = _SESSION_SEEDS.get(op.graph.ir, (0, 0))
        if "rng" not in state or state["session"] != session:
            words = [op.attrs["seed"], env.replica, session[0] & 0xFFFFFFFFFFFFFFFF]
            state["rng"], state["session"] = np.random.default_rng(words), session
        return draw(state["rng"])
    return kernel


def _uniform_kernel(op, env):
    (low, high), shape = op.attrs["range"], op.attrs["shape"]
    dtype = op.outputs[0].dtype.as_numpy()
    return _drawer(op, env, lambda rng: rng.uniform(low, high, shape).astype(dtype))


def _normal_kernel(op, env):
    (mean, scale), shape = op.attrs["range"], op.attrs["shape"]
    dtype = op.outputs[0].dtype.as_numpy()
    return _drawer(op, env, lambda rng: rng.normal(mean, scale, shape).astype(dtype))


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
