"""The Adam family of optimiser steps, as popxl.ops.var_updates has them.

With ``m`` and ``v`` the first- and second-order accumulators, ``w`` the weight, ``t`` the time step
and ``wd`` the weight decay, the updater ops compute the term ``x`` a weight moves along:

* ``adam_updater`` / ``lamb_updater``: ``x = mc / (sqrt(vc) + eps) + wd * w`` where, when a time
  step is given, ``mc = m / (1 - beta1**t)`` and ``vc = v / (1 - beta2**t)`` (bias correction),
  and otherwise ``mc = m``, ``vc = v``;
* ``adamax_updater``: ``x = mc / (v + eps) + wd * w`` with ``mc = m / (1 - beta1**t)``.

The time step is incremented in place first, so a step counter starting at 0 corrects with t = 1.
The ``wd * w`` term is there only when the weight decay is a tensor or a non-zero number.

``adam_var_update`` then moves the weight in place: ``w -= lr * ratio * x``, where ``r1`` and ``r2``
are the squared L2 norms of ``w`` and ``x`` (``ops.lamb_square``) and the LAMB trust ratio is
``ratio = min(sqrt(r1), max_weight_norm) / sqrt(r2)``, or 1 when ``r1``, ``r2`` or the max weight
norm is 0 (no max weight norm means plain Adam: ratio 1).
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np

from workbench.ir import Tensor, TensorSpec

from .arguments import expect_tensors
from .registry import OpDef, create_op, register
from .rules import check_dtype

__all__ = ["adam_updater", "lamb_updater", "adamax_updater", "adam_var_update"]

Factor = Union[float, Tensor]
_PARAMETERS = ("weight_decay", "beta1", "beta2", "epsilon")


def _scalar(op_type: str, name: str, spec: TensorSpec) -> None:
    check_dtype(op_type, spec, "number")
    if int(np.prod(spec.shape)) != 1:
        raise ValueError(f"{op_type}: {name} must be a scalar tensor (one element), got shape {spec.shape}")


def _number(op_type: str, name: str, value) -> Optional[float]:
    if value is None or isinstance(value, Tensor):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{op_type}: {name} must be a number or a scalar Tensor, got {value!r}")
    return float(value)


# ----- updaters -----
def _updater_infer(op_type: str):
    def infer(specs, attrs):
        first, second = specs[0], specs[1]
        for name, spec in (("acc_first_order", first), ("acc_second_order", second)):
            check_dtype(op_type, spec, "number")  # popxl takes integer tensors too
        if second.shape != first.shape:
            raise ValueError(f"{op_type}: the accumulators must have one shape, got {first.shape} and "
                             f"{second.shape}")
        position, out_dtype = 2, first.dtype
        if attrs["has_weight"]:
            weight = specs[position]
            check_dtype(op_type, weight, "number")
            if weight.shape != first.shape:
                raise ValueError(f"{op_type}: the weight must have the accumulators' shape {first.shape}, "
                                 f"got {weight.shape}")
            position, out_dtype = position + 1, weight.dtype
        if attrs["has_time_step"]:
            _scalar(op_type, "time_step", specs[position])
            position += 1
        for name, spec in zip(attrs["tensor_parameters"], specs[position:]):
            _scalar(op_type, name, spec)
        return [TensorSpec(first.shape, out_dtype)]
    return infer


def _updater_kernel(op, env):
    """The inputs are [m, v, w?, t?, tensor hyperparameters...]; numbers are appended to them so
    that every hyperparameter is read by position."""
    attrs = op.attrs
    adamax, corrected = op.type == "adamax_updater", attrs["has_time_step"]
    out_dtype = op.outputs[0].dtype.as_numpy()
    first_parameter = 2 + attrs["has_weight"] + corrected
    tensor_names = attrs["tensor_parameters"]
    constants = tuple(attrs[name] for name in _PARAMETERS if name not in tensor_names)
    where = {name: first_parameter + i for i, name in enumerate(tensor_names)}
    where.update({name: first_parameter + len(tensor_names) + i
                  for i, name in enumerate(n for n in _PARAMETERS if n not in tensor_names)})
    weight_at, step_at = (2 if attrs["has_weight"] else None), (first_parameter - 1 if corrected else None)
    decay = attrs["has_weight"]
    wd_at, b1_at, b2_at, eps_at = (where[name] for name in _PARAMETERS)

    def updater(*args):
        values = args + constants
        m, v = values[0], values[1]
        if corrected:
            step = values[step_at]
            step += 1
            t = float(np.reshape(step, ()))
            m = m / (1.0 - float(np.reshape(values[b1_at], ())) ** t)
            if not adamax:
                v = v / (1.0 - float(np.reshape(values[b2_at], ())) ** t)
        denominator = (v if adamax else np.sqrt(v)) + np.reshape(values[eps_at], ())
        x = m / denominator
        if decay:
            x = x + np.reshape(values[wd_at], ()) * values[weight_at]
        return x.astype(out_dtype, copy=False)
    return updater


for _type in ("adam_updater", "lamb_updater", "adamax_updater"):  # PopART: one class in three modes
    register(OpDef(_type, _updater_infer(_type), _updater_kernel, popart_class="AdamUpdaterOp"))


def _updater(op_type: str, acc_first_order: Tensor, acc_second_order: Tensor, weight: Optional[Tensor],
             time_step: Optional[Tensor], hyper: dict) -> Tensor:
    expect_tensors(op_type, acc_first_order=acc_first_order, acc_second_order=acc_second_order)
    decay = hyper["weight_decay"]
    needs_weight = isinstance(decay, Tensor) or (decay is not None and decay != 0.0)
    if time_step is not None:
        expect_tensors(op_type, time_step=time_step)
    inputs = [acc_first_order, acc_second_order]
    if needs_weight:
        expect_tensors(op_type, weight=weight)
        inputs.append(weight)
    if time_step is not None:
        inputs.append(time_step)
    attrs = {name: _number(op_type, name, hyper.get(name)) for name in _PARAMETERS}
    if not needs_weight:
        attrs["weight_decay"] = 0.0
    tensor_parameters = tuple(n for n in _PARAMETERS if isinstance(hyper.get(n), Tensor)
                              and (n != "weight_decay" or needs_weight))
    inputs += [hyper[n] for n in tensor_parameters]
    attrs.update(has_weight=needs_weight, has_time_step=time_step is not None,
                 tensor_parameters=tensor_parameters)
    modified = (inputs.index(time_step),) if time_step is not None else ()
    return create_op(op_type, inputs, attrs, modified=modified, output_names=["Updater"]).outputs[0]


def _check_weight_decay(op_type: str, weight, weight_decay) -> None:
    """Checked first, as popxl does, so that its message wins when bias correction is missing too."""
    if weight_decay is not None and weight is None:
        raise ValueError(f"Weight decay requires weight to not be None. ({op_type}: pass weight= with "
                         "weight_decay, or leave weight_decay out)")


def _adam_like(op_type: str, acc_first_order, acc_second_order, weight, time_step, weight_decay, beta1,
               beta2, epsilon) -> Tensor:
    _check_weight_decay(op_type, weight, weight_decay)
    if time_step is not None and (beta1 is None or beta2 is None):
        raise ValueError(f"Bias correction requires both beta1 and beta2 to not be None. ({op_type}: "
                         "a time_step turns bias correction on)")
    return _updater(op_type, acc_first_order, acc_second_order, weight, time_step,
                    {"weight_decay": weight_decay, "beta1": beta1, "beta2": beta2, "epsilon": epsilon})


def adam_updater(acc_first_order: Tensor, acc_second_order: Tensor, weight: Optional[Tensor] = None,
                 time_step: Optional[Tensor] = None, weight_decay: Optional[Factor] = None,
                 beta1: Optional[Factor] = None, beta2: Optional[Factor] = None,
                 epsilon: Factor = 1e-07) -> Tensor:
    """The Adam updater term ``mc / (sqrt(vc) + epsilon) + weight_decay * weight``; a
    ``time_step`` (incremented in place) turns on bias correction with ``beta1`` and ``beta2``."""
    return _adam_like("adam_updater", acc_first_order, acc_second_order, weight, time_step, weight_decay,
                      beta1, beta2, epsilon)


def lamb_updater(acc_first_order: Tensor, acc_second_order: Tensor, weight: Optional[Tensor] = None,
                 time_step: Optional[Tensor] = None, weight_decay: Optional[Factor] = None,
                 beta1: Optional[Factor] = None, beta2: Optional[Factor] = None,
                 epsilon: Factor = 1e-07) -> Tensor:
    """The LAMB updater term: the same arithmetic as ``adam_updater``; LAMB's trust ratio is applied
    by ``adam_var_update``."""
    return _adam_like("lamb_updater", acc_first_order, acc_second_order, weight, time_step, weight_decay,
                      beta1, beta2, epsilon)


def adamax_updater(acc_first_order: Tensor, acc_second_order: Tensor, weight: Optional[Tensor] = None,
                   time_step: Tensor = None, weight_decay: Optional[Factor] = None, beta1: Factor = 0.9,
                   epsilon: Factor = 1e-07) -> Tensor:
    """The Adamax updater term ``m / (1 - beta1**t) / (v + epsilon) + weight_decay * weight``, where
    ``v`` holds the running maximum; ``time_step`` is required and incremented in place."""
    _check_weight_decay("adamax_updater", weight, weight_decay)
    if time_step is None:
        raise ValueError("AdaMax requires time_step to not be None. (adamax_updater: pass the step counter "
                         "tensor, which it increments in place)")
    return _updater("adamax_updater", acc_first_order, acc_second_order, weight, time_step,
                    {"weight_decay": weight_decay, "beta1": beta1, "beta2": None, "epsilon": epsilon})


# ----- the weight update -----
def _var_update_infer(specs, attrs):
    weight, updater = specs[0], specs[1]
    check_dtype("adam_var_update", weight, "number")  # popxl takes integer tensors too
    check_dtype("adam_var_update", updater, "number")
    if updater.shape != weight.shape:
        raise ValueError(f"adam_var_update: the updater term must have the weight's shape {weight.shape}, got "
                         f"{updater.shape}")
    names = ("r1", "r2") + attrs["tensor_parameters"]
    for name, spec in zip(names, specs[2:]):
        _scalar("adam_var_update", name, spec)
    return [TensorSpec(weight.shape, weight.dtype)]


def _trust_ratio(r1, r2, max_weight_norm) -> float:
    r1, r2, max_weight_norm = (float(np.reshape(v, ())) for v in (r1, r2, max_weight_norm))
    if r1 == 0 or r2 == 0 or max_weight_norm == 0:
        return 1.0
    return min(np.sqrt(r1), max_weight_norm) / np.sqrt(r2)


def _var_update_kernel(op, env):
    attrs = op.attrs
    constants = tuple(attrs[n] for n in ("learning_rate", "max_weight_norm")
                      if n not in attrs["tensor_parameters"])
    order = attrs["tensor_parameters"] + tuple(n for n in ("learning_rate", "max_weight_norm")
                                               if n not in attrs["tensor_parameters"])
    lr_at, mwn_at = 4 + order.index("learning_rate"), 4 + order.index("max_weight_norm")

    def update(w, x, r1, r2, *parameters):
        values = (w, x, r1, r2) + parameters + constants
        step = float(np.reshape(values[lr_at], ())) * _trust_ratio(r1, r2, values[mwn_at])
        np.subtract(w, step * x, out=w, casting="unsafe")
        return w
    return update


register(OpDef("adam_var_update", _var_update_infer, _var_update_kernel, modifies=(0,), aliases=((0, 0),),
               pure_update=True, popart_class="AdamVarUpdateOp"))


def adam_var_update(t: Tensor, x: Tensor, r1: Tensor, r2: Tensor, learning_rate: Optional[Factor] = None,
                    max_weight_norm: Optional[Factor] = None) -> Tensor:
    """In place: ``t -= learning_rate * ratio * x`` with LAMB's trust ratio
    ``min(sqrt(r1), max_weight_norm) / sqrt(r2)`` (1 when any of them is 0, or without
    ``max_weight_norm``); ``r1``/``r2`` are the squared norms of ``t`` and ``x``. Without a
    ``learning_rate`` the rate is 0, as in popxl, and ``t`` keeps its value."""
    expect_tensors("adam_var_update", t=t, x=x, r1=r1, r2=r2)
    attrs = {"learning_rate": _number("adam_var_update", "learning_rate", learning_rate),
             "max_weight_norm": _number("adam_var_update", "max_weight_norm", max_weight_norm)}
    for name in ("learning_rate", "max_weight_norm"):  # as popxl: a factor left out is the constant 0
        if attrs[name] is None:
            attrs[name] = 0.0
    parameters = {"learning_rate": learning_rate, "max_weight_norm": max_weight_norm}
    tensor_parameters = tuple(n for n, v in parameters.items() if isinstance(v, Tensor))
    attrs["tensor_parameters"] = tensor_parameters
    inputs = [t, x, r1, r2] + [parameters[n] for n in tensor_parameters]
    return create_op("adam_var_update", inputs, attrs, output_names=["adam_var_update_out"]).outputs[0]
