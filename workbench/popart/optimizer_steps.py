"""The weight update of each optimiser, as workbench ops, following PopART's update equations.

Atomic hyperparameters: lr (learning rate), wd (weight decay), mm (momentum), dm (dampening), vs
(velocity scaling), ls (loss scaling), af (the accumulation factor when gradients are meaned over
the accumulation, else 1). ``a`` is the (accumulated, replica-reduced) loss-scaled gradient, so the
true gradient is ``g = a / (ls * af)``.

SGD without momentum (PopART's SGD0): ``w = w * (1 - lr*(1-dm)*wd) - a * (lr*(1-dm) / (ls*af))``.
SGD with momentum, velocity ``v`` kept ``vs`` times larger:
``v = v*mm + a*((1-dm)*vs/(ls*af)) + w*((1-dm)*wd*vs)``, then ``w = w - (lr/vs) * v``, or with
Nesterov ``w = w - (lr/vs) * (a*(vs/(ls*af)) + w*(vs*wd) + mm*v)``. As in PopART (SGD1), the velocity
kept between steps is ``v*mm + w*((1-dm)*wd*vs)``, computed after the weight update (it starts at
``w*((1-dm)*wd*vs)``), so a step adds only the gradient term.
Adam family: ``s = a / (ls*af)`` (plus ``wd*w`` with L2 regularisation), ``m = b1*m + (1-b1)*s``,
``v = b2*v + (1-b2)*s^2`` (AdaMax: ``v = max(b2*v, |s|)``), the updater term ``x`` of the workbench's
adam/lamb/adamax updaters (bias-corrected unless NoBias; ``+ wd*w`` in Decay mode), then
``w = w - lr*x`` (Lamb: times the trust ratio ``min(|w|, mwn) / |x|``).
Adaptive family (alpha ``al``, momentum ``m``): ``s`` as for Adam; ``v1 = v1 + s^2`` (AdaGrad) or
``al*v1 + (1-al)*s^2``; CenteredRMSProp ``v2 = al*v2 + (1-al)*s``; ``x = s / (sqrt(v1) + eps)``
(centered: ``sqrt(v1 - v2^2)``; TensorFlow's form: ``eps`` inside the root and ``v1`` starting at 1),
AdaDelta ``x = s * sqrt(v2 + eps) / sqrt(v1 + eps)`` then ``v2 = al*v2 + (1-al)*x^2``; with momentum
``v3 = m*v3 + x`` (TensorFlow's form: ``m*v3 + lr*x``); ``w = w - lr*(x + wd*w)`` (Decay), the learning
rate left out where TensorFlow's form put it in ``v3``.

Each compound scalar above is computed on the host in float64 from the atomic values: a number in
the program when all its atoms are constant, else a scalar variable named
``<scalar>___<default|specific___weight>`` that ``updateOptimizerFromHost`` rewrites.
"""
from __future__ import annotations

from typing import Callable, Union

import numpy as np

from workbench import ops
from workbench.ir import Tensor, constant
from workbench.onnx.lowering import adopt_name

from .optimizers import (SGD, Adam, Adaptive, AdaptiveMode, AdamMode, Optimizer, SGDAccumulatorAndMomentum,
                         WeightDecayMode)
from .reserved import PREFIXES

Scalar = tuple[float, bool]  # (value, constant?)
Factor = Union[float, Tensor]

# PopART's reserved prefixes of optimiser state tensors.
VELOCITY, ACCUMULATOR, FIRST_MOMENT, SECOND_MOMENT, THIRD_MOMENT, STEP = (
    PREFIXES[f"reserved{name}Prefix"] for name in ("Accl", "Accum", "Accl1", "Accl2", "Accl3", "Step"))
# PopART's names of the velocity after the gradient is added, and after it is prepared for the next step.
ACCL_TO_UPDATE, ACCL_FINAL_OUT = PREFIXES["reservedAcclToUpdatePrefix"], PREFIXES["reservedAcclFinalOutPrefix"]


def _const(*values) -> bool:
    return all(v.isConst() for v in values)


def uses_momentum(optimizer: Optimizer, weight: str) -> bool:
    momentum = optimizer.value("momentum", weight)
    return not (momentum.isConst() and momentum.val() == 0.0)


def scalars(optimizer: Optimizer, weight: str, mean_af: int) -> dict[str, Scalar]:
    """The compound scalars of ``weight``'s update, by name."""
    v = {name: optimizer.value(name, weight) for name in type(optimizer)._DEFAULTS}
    ls = v["lossScaling"]
    scale = 1.0 / (ls.val() * mean_af)
    if isinstance(optimizer, SGD):
        lr, wd, mm, dm, vs = (v[n] for n in ("learningRate", "weightDecay", "momentum", "dampening",
                                             "velocityScaling"))
        keep = 1.0 - dm.val()
        if not uses_momentum(optimizer, weight):
            return {"weightDecayScaleFactor0": (1.0 - lr.val() * keep * wd.val(), _const(lr, dm, wd)),
                    "negScaledLearningRate0": (-lr.val() * keep * scale, _const(lr, dm, ls))}
        found = {"scaledMomentum": (mm.val(), _const(mm)),
                 "dampeningScaleFactor": (keep * vs.val() * scale, _const(dm, vs, ls)),
                 "scaledWeightDecay": (keep * wd.val() * vs.val(), _const(dm, wd, vs)),
                 "negScaledLearningRate": (-lr.val() / vs.val(), _const(lr, vs))}
        if v["nesterov"].val():
            found["nesterovGradScaleFactor"] = (vs.val() * scale, _const(vs, ls))
            found["nesterovWeightDecay"] = (vs.val() * wd.val(), _const(vs, wd))
        return found
    if isinstance(optimizer, Adam):
        found = {name: (v[name].val(), _const(v[name]))
                 for name in ("learningRate", "weightDecay", "beta1", "beta2", "eps", "maxWeightNorm")}
        found["gradientScale"] = (scale, _const(ls))
        found["negLearningRate"] = (-v["learningRate"].val(), _const(v["learningRate"]))
        return found
    if isinstance(optimizer, Adaptive):
        found = {name: (v[name].val(), _const(v[name]))
                 for name in ("learningRate", "weightDecay", "alpha", "momentum", "eps")}
        found["gradientScale"] = (scale, _const(ls))
        found["negLearningRate"] = (-v["learningRate"].val(), _const(v["learningRate"]))
        return found
    raise TypeError(f"unsupported optimizer {type(optimizer).__name__}; expected popart.SGD, ConstSGD, Adam or "
                    "Adaptive")


# PopART's names of the SGD0 compound scalars a script anchors (``<prefix>FLOAT``), with the
# workbench's scalar each reads and the sign between them.
ANCHORED_SCALARS = {PREFIXES["reservedDefaultScaledLearningRate0Prefix"]: ("negScaledLearningRate0", -1.0),
                    PREFIXES["reservedDefaultWeightDecayScaleFactor0Prefix"]: ("weightDecayScaleFactor0", 1.0)}


def anchored_scalar(name: str) -> tuple[str, float] | None:
    """The workbench scalar (``<scalar>___default``) and sign behind an anchor of PopART's name."""
    for prefix, (scalar, sign) in ANCHORED_SCALARS.items():
        if name.startswith(prefix):
            return f"{scalar}___default", sign
    return None


def state_names(optimizer: Optimizer, weight: str) -> list[str]:
    """The optimiser state tensors of ``weight`` (zeros at the start), by reserved name."""
    if isinstance(optimizer, SGD):
        if not uses_momentum(optimizer, weight):
            return []
        separate = optimizer.accumulatorAndMomentum is SGDAccumulatorAndMomentum.Separate
        return [(FIRST_MOMENT if separate else VELOCITY) + weight]
    if isinstance(optimizer, Adaptive):
        names = [FIRST_MOMENT + weight]
        if optimizer.mode in (AdaptiveMode.CenteredRMSProp, AdaptiveMode.AdaDelta):
            names.append(SECOND_MOMENT + weight)
        return names + ([THIRD_MOMENT + weight] if uses_momentum(optimizer, weight) else [])
    mode = optimizer.mode
    names = [FIRST_MOMENT + weight, SECOND_MOMENT + weight]
    if mode not in (AdamMode.AdamNoBias, AdamMode.LambNoBias):
        names.append(STEP + weight)
    return names


def state_start(optimizer: Optimizer, state: str, weight: np.ndarray) -> np.ndarray:
    """The value a state tensor of ``weight`` (its starting value) starts from: SGD's velocity
    ``swd * w`` (PopART keeps the next step's weight decay in it), 1 for the first accumulator of
    TensorFlow's RMSProp, else 0."""
    if isinstance(optimizer, SGD) and state.startswith(VELOCITY):
        name = state[len(VELOCITY):]
        wd, dm, vs = (optimizer.value(n, name).val() for n in ("weightDecay", "dampening", "velocityScaling"))
        return weight * np.asarray((1.0 - dm) * wd * vs, weight.dtype)
    tf_first = isinstance(optimizer, Adaptive) and optimizer.rmspropTFVariant and state.startswith(FIRST_MOMENT)
    return np.full(weight.shape, 1.0 if tf_first else 0.0, weight.dtype)


def _nonzero(value: Factor) -> bool:
    return isinstance(value, Tensor) or value != 0.0


def update_input(optimizer: Optimizer, w: Tensor, a: Tensor, scalar: Callable[[str], Factor]) -> Tensor:
    """What the update of weight ``w`` reads of the loss-scaled gradient ``a``, and what gradient clipping
    scales (PopART clips the input of the weight update): ``a`` itself, except for the Adam family, whose
    ``s = a / (ls*af)`` (plus ``wd*w`` with L2 regularisation) is emitted here."""
    if not isinstance(optimizer, Adam):
        return a
    s = _times(a, scalar("gradientScale"))
    wd = scalar("weightDecay")
    if optimizer.weightDecayMode is WeightDecayMode.L2Regularization and _nonzero(wd):
        ops.var_updates.accumulate_(s, w, wd)
    return s


def update(optimizer: Optimizer, w: Tensor, x: Tensor, state: dict[str, Tensor],
           scalar: Callable[[str], Factor]) -> None:
    """Emit the update of weight ``w`` from ``x``, what ``update_input`` gave (see the module docstring);
    ``state`` holds the weight's state tensors by reserved name, ``scalar(name)`` a compound scalar."""
    if isinstance(optimizer, SGD):
        _sgd(optimizer, w, x, state, scalar)
    elif isinstance(optimizer, Adaptive):
        _adaptive(optimizer, w, x, state, scalar)
    else:
        _adam(optimizer, w, x, state, scalar)


def _sgd(optimizer: SGD, w: Tensor, a: Tensor, state: dict[str, Tensor], scalar) -> None:
    velocity = state.get(VELOCITY + w.name)
    separate = state.get(FIRST_MOMENT + w.name)
    if separate is not None:
        _sgd_separate(optimizer, w, a, separate, scalar)
        return
    if velocity is None:
        decay = scalar("weightDecayScaleFactor0")
        if isinstance(decay, Tensor) or decay != 1.0:
            ops.var_updates.accumulator_scale_(w, decay)
        ops.var_updates.accumulate_(w, a, scalar("negScaledLearningRate0"))
        return
    # PopART's order (SGD1): the velocity kept between steps already holds ``mm*v + swd*w`` (it
    # starts at ``swd*w``, see ``state_start``); the step adds the gradient, updates the weight, then
    # prepares the velocity for the next step. Its three values carry PopART's names.
    to_update = ops.var_updates.accumulate_(velocity, a, scalar("dampeningScaleFactor"))
    adopt_name(to_update, ACCL_TO_UPDATE + w.name)
    _weight_step(optimizer, w, a, to_update, scalar)
    final = ops.var_updates.accumulator_scale_(to_update, scalar("scaledMomentum"))
    if _nonzero(scalar("scaledWeightDecay")):
        final = ops.var_updates.accumulate_(final, w, scalar("scaledWeightDecay"))
    adopt_name(final, ACCL_FINAL_OUT + w.name)


def _sgd_separate(optimizer: SGD, w: Tensor, a: Tensor, velocity: Tensor, scalar) -> None:
    """PopART's SGD2 (``SGDAccumulatorAndMomentum.Separate``): the velocity ``Accl1___w`` starts at 0
    and takes the momentum and weight decay terms in the step, before the weight update."""
    ops.var_updates.accumulator_scale_(velocity, scalar("scaledMomentum"))
    ops.var_updates.accumulate_(velocity, a, scalar("dampeningScaleFactor"))
    if _nonzero(scalar("scaledWeightDecay")):
        ops.var_updates.accumulate_(velocity, w, scalar("scaledWeightDecay"))
    _weight_step(optimizer, w, a, velocity, scalar)


def _weight_step(optimizer: SGD, w: Tensor, a: Tensor, velocity: Tensor, scalar) -> None:
    """``w -= (lr/vs) * v``, or with Nesterov ``w -= (lr/vs) * (a*ngsf + w*vs*wd + mm*v)``."""
    if optimizer.value("nesterov", w.name).val():
        step = _times(a, scalar("nesterovGradScaleFactor"))
        if _nonzero(scalar("nesterovWeightDecay")):
            ops.var_updates.accumulate_(step, w, scalar("nesterovWeightDecay"))
        ops.var_updates.accumulate_(step, velocity, scalar("scaledMomentum"))
        ops.var_updates.accumulate_(w, step, scalar("negScaledLearningRate"))
    else:
        ops.var_updates.accumulate_(w, velocity, scalar("negScaledLearningRate"))


def _times(t: Tensor, factor: Factor) -> Tensor:
    if not isinstance(factor, Tensor):
        factor = constant(np.array(factor, t.dtype.as_numpy()), t.dtype)
    elif factor.dtype != t.dtype:  # a changeable scalar is float32; a float16 model's tensors are not
        factor = ops.cast(factor, t.dtype)
    return ops.mul(t, factor)


def _adam(optimizer: Adam, w: Tensor, s: Tensor, state: dict[str, Tensor], scalar) -> None:
    mode, decay = optimizer.mode, optimizer.weightDecayMode
    first, second = state[FIRST_MOMENT + w.name], state[SECOND_MOMENT + w.name]
    step = state.get(STEP + w.name)
    wd = scalar("weightDecay")
    ops.var_updates.accumulate_moving_average_(first, s, scalar("beta1"))
    decoupled = decay is WeightDecayMode.Decay and _nonzero(wd)
    weight_args = {"weight": w, "weight_decay": wd} if decoupled else {}
    if mode is AdamMode.AdaMax:
        ops.var_updates.copy_var_update_(second, ops.maximum(_times(second, scalar("beta2")), ops.abs(s)))
        x = ops.var_updates.adamax_updater(first, second, time_step=step, beta1=scalar("beta1"),
                                           epsilon=scalar("eps"), **weight_args)
    else:
        ops.var_updates.accumulate_moving_average_square_(second, s, scalar("beta2"))
        updater = ops.var_updates.lamb_updater if mode in (AdamMode.Lamb, AdamMode.LambNoBias) \
            else ops.var_updates.adam_updater
        bias = {"time_step": step, "beta1": scalar("beta1"), "beta2": scalar("beta2")} if step is not None else {}
        x = updater(first, second, epsilon=scalar("eps"), **bias, **weight_args)
    if mode in (AdamMode.Lamb, AdamMode.LambNoBias):
        ops.var_updates.adam_var_update(w, x, ops.lamb_square(w), ops.lamb_square(x),
                                        learning_rate=scalar("learningRate"), max_weight_norm=scalar("maxWeightNorm"))
    else:
        ops.var_updates.accumulate_(w, x, scalar("negLearningRate"))


def _as_tensor(value: Factor, like: Tensor) -> Tensor:
    if not isinstance(value, Tensor):
        return constant(np.array(value, like.dtype.as_numpy()), like.dtype)
    return value if value.dtype == like.dtype else ops.cast(value, like.dtype)


def _adaptive(optimizer: Adaptive, w: Tensor, a: Tensor, state: dict[str, Tensor], scalar) -> None:
    mode, tf = optimizer.mode, optimizer.rmspropTFVariant
    first, momentum = state[FIRST_MOMENT + w.name], state.get(THIRD_MOMENT + w.name)
    wd, eps, alpha = scalar("weightDecay"), scalar("eps"), scalar("alpha")
    s = _times(a, scalar("gradientScale"))
    if optimizer.weightDecayMode is WeightDecayMode.L2Regularization and _nonzero(wd):
        ops.var_updates.accumulate_(s, w, wd)
    if mode is AdaptiveMode.AdaGrad:
        ops.var_updates.accumulate_square_(first, s, 1.0)
    else:
        ops.var_updates.accumulate_moving_average_square_(first, s, alpha)
    if mode is AdaptiveMode.AdaDelta:
        second = state[SECOND_MOMENT + w.name]
        x = ops.div(ops.mul(s, ops.sqrt(ops.add(second, _as_tensor(eps, second)))),
                    ops.sqrt(ops.add(first, _as_tensor(eps, first))))
        ops.var_updates.accumulate_moving_average_square_(second, x, alpha)
    else:
        spread = first
        if mode is AdaptiveMode.CenteredRMSProp:
            second = state[SECOND_MOMENT + w.name]
            ops.var_updates.accumulate_moving_average_(second, s, alpha)
            spread = ops.sub(first, ops.mul(second, second))
        if tf:
            x = ops.div(s, ops.sqrt(ops.add(spread, _as_tensor(eps, spread))))
        else:
            x = ops.div(s, ops.add(ops.sqrt(spread), _as_tensor(eps, spread)))
    learning_rate_inside = tf and momentum is not None
    if momentum is not None:
        ops.var_updates.accumulator_scale_(momentum, scalar("momentum"))
        ops.var_updates.accumulate_(momentum, x, scalar("learningRate") if learning_rate_inside else 1.0)
        x = momentum
    if optimizer.weightDecayMode is WeightDecayMode.Decay and _nonzero(wd):
        x = ops.add(x, _times(w, wd))
    ops.var_updates.accumulate_(w, x, -1.0 if learning_rate_inside else scalar("negLearningRate"))
