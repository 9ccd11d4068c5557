"""Collectives across replicas (within a replica group) and across the IPUs of one replica.

A collective is an ordinary op whose replica group is an attribute. Its kernel hands the replica's
value to ``env.exchange(op, members)``, receives the values of every member of its group in replica
order, and reduces them with the same NumPy call for every member, so all members agree exactly.
"""
from __future__ import annotations

from typing import List, Literal, Optional

import numpy as np

from workbench.ir import Op, ReplicaGrouping, Tensor, TensorSpec, get_current_graph, ipu

from . import grad_blocks as blocks
from .comm_group import CommGroup, CommGroupType
from .registry import OpDef, create_op, register
from .rules import normalize_axis

__all__ = ["replicated_all_reduce", "replicated_all_reduce_", "replicated_all_gather",
           "replicated_reduce_scatter", "replica_sharded_slice", "replicated_slice", "all_reduce",
           "all_reduce_identical_inputs", "all_reduce_identical_grad_inputs", "CommGroup", "CommGroupType"]

CollectiveOps = Literal["add", "mean", "mul", "min", "max", "and", "or", "square_add", "local"]

_REDUCERS = {
    "add": lambda stacked: np.sum(stacked, axis=0),
    "mean": lambda stacked: np.mean(stacked, axis=0),
    "mul": lambda stacked: np.prod(stacked, axis=0),
    "min": lambda stacked: np.min(stacked, axis=0),
    "max": lambda stacked: np.max(stacked, axis=0),
    "and": lambda stacked: np.all(stacked, axis=0),
    "or": lambda stacked: np.any(stacked, axis=0),
    "square_add": lambda stacked: np.sum(stacked * stacked, axis=0),
}


def _group(op_type: str, group: Optional[ReplicaGrouping]) -> ReplicaGrouping:
    ir = get_current_graph().ir
    group = ir.replica_grouping() if group is None else group
    if not isinstance(group, ReplicaGrouping):
        raise TypeError(f"{op_type}: group must be a ReplicaGrouping (ir.replica_grouping(...)), got {group!r}")
    if group._ir is not ir:
        raise ValueError(f"{op_type}: the replica grouping belongs to another Ir")
    if not group.is_const:
        raise ValueError(f"{op_type}: {group!r} has no constant stride; such groupings serve variable "
                         "settings only and cannot be used for collectives")
    return group


def _check_op(op_type: str, op: str) -> str:
    if op not in _REDUCERS and op != "local":
        raise ValueError(f"{op_type}: op must be one of {sorted([*_REDUCERS, 'local'])}, got {op!r}")
    return op


def _reducer(op, position: int = 0):
    """Combine the members' values; 'local' keeps the value of the member at ``position``."""
    name, dtype = op.attrs["op"], op.outputs[0].dtype.as_numpy()
    if name == "local":
        return lambda values: np.array(values[position], dtype=dtype)
    reduce = _REDUCERS[name]
    if name in ("add", "mean") and dtype in (np.float32, np.float64):
        return lambda values: _sum_in_order(values, name == "mean") if len(values) < 8 or values[0].size > 1 \
            else reduce(np.stack(values)).astype(dtype, copy=False)
    return lambda values: reduce(np.stack(values)).astype(dtype, copy=False)


def _sum_in_order(values: list, mean: bool) -> np.ndarray:
    """``np.sum`` (``np.mean``) over the stacked values without stacking them, with the same numbers:
    NumPy adds the rows of a stack in order, element by element, but for single elements, which it
    sums pairwise from 8 on (so those, only, are stacked)."""
    if len(values) == 1:
        return np.array(values[0])
    total = np.add(values[0], values[1], out=np.empty_like(values[0]))
    for value in values[2:]:
        np.add(total, value, out=total)
    if mean:
        np.true_divide(total, len(values), out=total)
    return total


def _members(op, env) -> list[int]:
    grouping = op.attrs["group"]
    return grouping.members(grouping.assignment[env.replica])


def _shard(flat: np.ndarray, count: int, index: int) -> np.ndarray:
    """Shard ``index`` of ``count`` equal parts of a flat array, zero-padded at the end."""
    size = -(-flat.size // count)
    padded = np.zeros(size * count, flat.dtype)
    padded[: flat.size] = flat
    return padded[index * size: (index + 1) * size]


# ----- all-reduce -----
def _same_spec(specs, attrs):
    return [TensorSpec(specs[0].shape, specs[0].dtype)]


def _all_reduce_kernel(op, env):
    members = _members(op, env)
    reduce = _reducer(op, members.index(env.replica))
    if op.attrs["op"] == "local":
        exchange = env.exchange(op, members)
        return lambda value: reduce(exchange(value))
    return env.combine(op, members, reduce)  # every member reduces the same values: once for all


def _all_reduce_in_place_kernel(op, env):
    reduced = _all_reduce_kernel(op, env)

    def run(value):
        value[...] = reduced(value)
        return value
    return run


def _differentiable(op, allowed=("add", "mean")) -> str:
    if op.attrs["op"] not in allowed:
        raise NotImplementedError(f"{op.type}: no gradient for op {op.attrs['op']!r}; the differentiable "
                                  f"ops are {' and '.join(repr(a) for a in allowed)}")
    return op.attrs["op"]


def _all_reduce_grad(op, grads, fwd):
    """Each replica's loss depends on every replica's input, so the gradient is the all-reduce
    of the replicas' gradients ('add', or 'mean' for a mean). popxl's own op has no gradient; this
    is the rule of its differentiable variant in popxl-addons."""
    if grads[0] is None:
        return [None]
    return [replicated_all_reduce(grads[0], _differentiable(op), op.attrs["group"])]


def _same_on_every_replica(op: Op) -> bool:
    """An all-reduce over all replicas gives each the same value (a 'local' one gives each its own)."""
    return op.attrs["op"] != "local" and op.attrs["group"].num_groups == 1


register(OpDef("replicated_all_reduce", _same_spec, _all_reduce_kernel, grad=_all_reduce_grad,
               meets_replicas=True, uniform_result=_same_on_every_replica,
               popart_class="collectives.ReplicatedAllReduceOp"))
register(OpDef("replicated_all_reduce_", _same_spec, _all_reduce_in_place_kernel, modifies=(0,),
               aliases=((0, 0),), meets_replicas=True, uniform_result=_same_on_every_replica,
               popart_class="collectives.ReplicatedAllReduceInplaceOp"))


def replicated_all_reduce(t: Tensor, op: CollectiveOps = "add", group: Optional[ReplicaGrouping] = None) -> Tensor:
    """Reduce ``t`` over the replicas of each group; every member gets the result."""
    return create_op("replicated_all_reduce", [t], {"op": _check_op("replicated_all_reduce", op),
                                                    "group": _group("replicated_all_reduce", group)},
                     output_names=[t.name + "_all_reduce"]).outputs[0]


def replicated_all_reduce_(t: Tensor, op: CollectiveOps = "add", group: Optional[ReplicaGrouping] = None) -> Tensor:
    """Reduce ``t`` over the replicas of each group, in place."""
    return create_op("replicated_all_reduce_", [t], {"op": _check_op("replicated_all_reduce_", op),
                                                     "group": _group("replicated_all_reduce_", group)},
                     output_names=[t.name + "_all_reduce"]).outputs[0]


# ----- all-gather -----
def _gather_infer(specs, attrs):
    spec, size, mode, axis = specs[0], attrs["group"].group_size, attrs["output_shape"], attrs["axis"]
    if mode == "new_axis":
        return [TensorSpec((size, *spec.shape), spec.dtype)]
    if mode == "meta_shape":
        return [TensorSpec(spec.meta_shape, spec.dtype)]
    if not spec.shape:
        raise ValueError("replicated_all_gather: a scalar cannot be concatenated; use output_shape='new_axis'")
    shape = list(spec.shape)
    shape[axis] *= size
    return [TensorSpec(tuple(shape), spec.dtype)]


def _gather_kernel(op, env):
    exchange, mode, axis = env.exchange(op, _members(op, env)), op.attrs["output_shape"], op.attrs["axis"]
    if mode == "new_axis":
        return lambda value: np.stack(exchange(value))
    if mode == "meta_shape":
        shape = op.outputs[0].shape
        count = int(np.prod(shape, dtype=np.int64))
        return lambda value: np.concatenate(exchange(value))[:count].reshape(shape)
    return lambda value: np.concatenate(exchange(value), axis=axis)


def _all_gather_grad(op, grads, fwd):
    """As popxl: each member takes its own part of its own gradient, which presumes the gathered
    tensor's gradient is the same on every member: ``replicated_slice``, or for a replica shard
    gathered to its meta shape a reduce-scatter with the local reduction (no sum over members)."""
    grad, t, group = grads[0], op.inputs[0], op.attrs["group"]
    if grad is None:
        return [None]
    mode = op.attrs["output_shape"]
    if mode == "meta_shape":
        return [replicated_reduce_scatter(blocks.reshape(grad, (grad.nelms,)), "local", group)]
    part = replicated_slice(grad, 0 if mode == "new_axis" else op.attrs["axis"], group)
    return [blocks.reshape(part, t.shape)]


register(OpDef("replicated_all_gather", _gather_infer, _gather_kernel, grad=_all_gather_grad,
               meets_replicas=True, popart_class="collectives.ReplicatedAllGatherOp"))


def replicated_all_gather(t: Tensor, axis: int = 0, group: Optional[ReplicaGrouping] = None,
                          output_shape: Literal["new_axis", "concat", "meta_shape", "auto"] = "auto") -> Tensor:
    """Every member receives the ``t`` of all members of its group: stacked on a new axis,
    concatenated along ``axis``, or (for replica shards) reassembled to the ``meta_shape``."""
    if output_shape not in ("new_axis", "concat", "meta_shape", "auto"):
        raise ValueError(f"replicated_all_gather: output_shape must be 'new_axis', 'concat', 'meta_shape' "
                         f"or 'auto', got {output_shape!r}")
    if output_shape == "auto":
        output_shape = "meta_shape" if t.meta_shape else "concat"
    if output_shape == "meta_shape" and not t.meta_shape:
        raise ValueError(f"replicated_all_gather: {t.id!r} has no meta_shape to gather into")
    axis = normalize_axis("replicated_all_gather", axis, max(t.rank, 1))
    return create_op("replicated_all_gather", [t], {"axis": axis, "output_shape": output_shape,
                                                    "group": _group("replicated_all_gather", group)},
                     output_names=[t.name + "_all_gathered"]).outputs[0]


# ----- sharding -----
def _shard_infer(specs, attrs):
    spec, size = specs[0], attrs["group"].group_size
    meta = spec.shape if attrs.get("keep_meta_shape") else ()
    return [TensorSpec((-(-spec.nelms // size),), spec.dtype, meta)]


def _reduce_scatter_kernel(op, env):
    members = _members(op, env)
    index = members.index(env.replica)
    exchange, reduce = env.exchange(op, members), _reducer(op, index)
    return lambda value: _shard(reduce(exchange(value)).reshape(-1), len(members), index)


def _sharded_slice_kernel(op, env):
    members = _members(op, env)
    index = members.index(env.replica)
    return lambda value: _shard(value.reshape(-1), len(members), index)


def _unshard(grad: Tensor, like: Tensor, group: ReplicaGrouping) -> Tensor:
    """Every member's flat shard of the gradient gathered, unpadded and shaped like ``like``."""
    whole = replicated_all_gather(blocks.reshape(grad, (grad.nelms,)), 0, group, "concat")
    return blocks.reshape(blocks.keep_first(whole, 0, like.nelms), like.shape)


def _reduce_scatter_grad(op, grads, fwd):
    """Each shard's gradient returns to every member: an all-gather ('add'; divided by the group
    size for 'mean')."""
    if grads[0] is None:
        return [None]
    reduction, group = _differentiable(op), op.attrs["group"]
    grad = _unshard(grads[0], op.inputs[0], group)
    return [grad * (1 / group.group_size) if reduction == "mean" else grad]


def _sharded_slice_grad(op, grads, fwd):
    """The shards' gradients gathered: the gradient of the whole tensor, which every member holds."""
    return [None if grads[0] is None else _unshard(grads[0], op.inputs[0], op.attrs["group"])]


register(OpDef("replicated_reduce_scatter", _shard_infer, _reduce_scatter_kernel, grad=_reduce_scatter_grad,
               meets_replicas=True, popart_class="collectives.ReplicatedReduceScatterOp"))
register(OpDef("replica_sharded_slice", _shard_infer, _sharded_slice_kernel, grad=_sharded_slice_grad,
               popart_class="collectives.ReplicatedReduceScatterOp"))


def replicated_reduce_scatter(t: Tensor, op: CollectiveOps = "add", group: Optional[ReplicaGrouping] = None,
                              configure_output_for_replicated_tensor_sharding: bool = False) -> Tensor:
    """Reduce ``t`` over each group; each member keeps its 1/group_size flat shard (zero-padded)."""
    return create_op("replicated_reduce_scatter", [t], {
        "op": _check_op("replicated_reduce_scatter", op), "group": _group("replicated_reduce_scatter", group),
        "keep_meta_shape": bool(configure_output_for_replicated_tensor_sharding)},
        output_names=[t.name + "_reduce_scattered"]).outputs[0]


def replica_sharded_slice(t: Tensor, group: Optional[ReplicaGrouping] = None) -> Tensor:
    """Each member keeps its flat shard of ``t`` (no reduction); the shard remembers ``t``'s shape."""
    return create_op("replica_sharded_slice", [t], {"group": _group("replica_sharded_slice", group),
                                                    "keep_meta_shape": True},
                     output_names=[t.name + "_sharded_slice"]).outputs[0]


def _slice_infer(specs, attrs):
    spec, size, axis = specs[0], attrs["group"].group_size, attrs["axis"]
    if spec.shape[axis] % size:
        raise ValueError(f"replicated_slice: dimension {axis} of size {spec.shape[axis]} does not split "
                         f"evenly over groups of {size} replicas")
    shape = list(spec.shape)
    shape[axis] //= size
    if shape[axis] == 1:  # as popxl: a part of length 1 loses the axis
        del shape[axis]
    return [TensorSpec(tuple(shape), spec.dtype)]


def _slice_kernel(op, env):
    members, axis, shape = _members(op, env), op.attrs["axis"], op.outputs[0].shape
    index = members.index(env.replica)
    return lambda value: np.split(value, len(members), axis=axis)[index].copy().reshape(shape)


def _replicated_slice_grad(op, grads, fwd):
    """The parts' gradients gathered: the gradient of the whole tensor, which every member holds."""
    grad, axis = grads[0], op.attrs["axis"]
    if grad is None:
        return [None]
    if grad.rank < op.inputs[0].rank:  # the part's axis was dropped
        grad = blocks.reshape(grad, (*grad.shape[:axis], 1, *grad.shape[axis:]))
    return [replicated_all_gather(grad, axis, op.attrs["group"], "concat")]


register(OpDef("replicated_slice", _slice_infer, _slice_kernel, grad=_replicated_slice_grad,
               popart_class="collectives.ReplicatedReduceScatterOp"))


def replicated_slice(t: Tensor, axis: int = 0, group: Optional[ReplicaGrouping] = None) -> Tensor:
    """Split ``t`` evenly along ``axis`` over the members of each group; each keeps its part."""
    if not t.shape:
        raise ValueError(f"replicated_slice: {t.id!r} is a scalar; there is nothing to slice")
    axis = normalize_axis("replicated_slice", axis, t.rank)
    return create_op("replicated_slice", [t], {"axis": axis, "group": _group("replicated_slice", group)}).outputs[0]


# ----- across the IPUs of one replica -----
def _ipus_infer(specs, attrs):
    for spec in specs[1:]:
        if spec.shape != specs[0].shape or spec.dtype is not specs[0].dtype:
            raise ValueError(f"all_reduce: all tensors must match {specs[0]}, got {spec}")
    return [TensorSpec(s.shape, s.dtype) for s in specs]


def _ipus_kernel(op, env):
    if op.attrs["variant"] == "all_reduce_identical_inputs" or op.attrs["op"] == "local":
        return lambda *values: tuple(v.copy() for v in values)
    reduce, count = _reducer(op), len(op.inputs)
    return lambda *values: tuple(reduce(values).copy() for _ in range(count))


_GRAD_VARIANT = {"all_reduce": "all_reduce", "all_reduce_identical_inputs": "all_reduce_identical_grad_inputs",
                 "all_reduce_identical_grad_inputs": "all_reduce_identical_inputs"}


def _ipus_grad(op, grads, fwd):
    """As PopART: an all-reduce 'add' of the gradients, where the identical-inputs and
    identical-gradients variants swap roles (the gradient of the first reduces, that of the
    second copies). IPUs no gradient reaches contribute zeros."""
    _differentiable(op, ("add",))
    ipus = op.attrs["ipus"]
    parts = []
    for grad, t, place in zip(grads, op.outputs, ipus):
        with ipu(place):
            parts.append(blocks.optional_zeros(grad, t))
    return _all_reduce_over_ipus(_GRAD_VARIANT[op.attrs["variant"]], parts, list(ipus), "add")


register(OpDef("all_reduce", _ipus_infer, _ipus_kernel, grad=_ipus_grad, crosses_ipus=True,
               ipus=lambda op: tuple(dict.fromkeys(op.attrs["ipus"])), popart_class="collectives.AllReduceOp"))


def _all_reduce_over_ipus(variant: str, ts: List[Tensor], ipus: Optional[List[int]], op: str) -> List[Tensor]:
    ts = list(ts)
    if not ts:
        raise ValueError(f"{variant}: needs at least one tensor")
    ipus = [t.ipu for t in ts] if ipus is None else list(ipus)
    if len(ipus) != len(ts):
        raise ValueError(f"{variant}: {len(ts)} tensors but {len(ipus)} ipus")
    reduce_op = _check_op(variant, op)
    return list(create_op("all_reduce", ts, {"op": reduce_op, "variant": variant, "ipus": tuple(ipus)},
                          output_ipus=ipus).outputs)


def all_reduce(ts: List[Tensor], ipus: Optional[List[int]] = None, op: CollectiveOps = "add") -> List[Tensor]:
    """Reduce tensors that live on different IPUs of one replica; one result per IPU."""
    return _all_reduce_over_ipus("all_reduce", ts, ipus, op)


def all_reduce_identical_inputs(ts: List[Tensor], ipus: Optional[List[int]] = None,
                                op: CollectiveOps = "add") -> List[Tensor]:
    """Like ``all_reduce`` for inputs known to be identical: the forward pass is an identity on each
    IPU; the gradient is the all-reduce."""
    return _all_reduce_over_ipus("all_reduce_identical_inputs", ts, ipus, op)


def all_reduce_identical_grad_inputs(ts: List[Tensor], ipus: Optional[List[int]] = None,
                                     op: CollectiveOps = "add") -> List[Tensor]:
    """Like ``all_reduce`` when the gradients flowing back are identical: the forward pass reduces,
    the gradient is copied."""
    return _all_reduce_over_ipus("all_reduce_identical_grad_inputs", ts, ipus, op)
