"""The all-reduce of tensor-parallel layers, as popxl-addons' ``replicated_all_reduce_TP`` and strided
all-reduce custom ops make it: an all-reduce whose forward (``identical_inputs``) or gradient
(``identical_grad_inputs``) is an identity, because the replicas' values are known to be the same there.

The gradient of one such op is another with the two flags swapped. As in PopART, an op marked
``identical_inputs`` becomes an identity only when PopART's OpToIdentity pattern runs over its graph
(``replace_by_identity``, called by ``applyPreAliasPatterns``); a Session refuses one that has not.
"""
from __future__ import annotations

from typing import Optional

from workbench.ir import Graph, ReplicaGrouping, Tensor
from workbench.ir.errors import popart_exception

from .collectives import _all_reduce_kernel, _group, _same_on_every_replica, _same_spec
from .registry import OpDef, create_op, register

OP_TYPE = "replicated_all_reduce_identical"


def _kernel(op, env):
    if op.attrs["identity"]:
        return lambda value: value.copy()
    if op.attrs["identical_inputs"]:
        raise popart_exception(
            f"Op {op.name!r} (an all-reduce with identical inputs) can only run as an identity, which PopART's "
            "OpToIdentity pattern makes it: run the pre-alias patterns over every graph after autodiff "
            "(popxl_addons.patterns.apply_pre_alias_patterns(ir), or ir._pb_ir.applyPreAliasPatterns(graph) "
            "with OpToIdentity enabled) before making the Session")
    return _all_reduce_kernel(op, env)


def _grad(op, grads, fwd):
    if grads[0] is None:
        return [None]
    return [identical_all_reduce(grads[0], op.attrs["op"], op.attrs["group"],
                                 identical_inputs=op.attrs["identical_grad_inputs"],
                                 identical_grad_inputs=op.attrs["identical_inputs"])]


def _uniform(op) -> bool:
    return not op.attrs["identity"] and _same_on_every_replica(op)


register(OpDef(OP_TYPE, _same_spec, _kernel, grad=_grad, meets_replicas=True, uniform_result=_uniform,
               popart_class="collectives.ReplicatedAllReduceOp"))


def identical_all_reduce(t: Tensor, op: str = "add", group: Optional[ReplicaGrouping] = None, *,
                         identical_inputs: bool = False, identical_grad_inputs: bool = False) -> Tensor:
    """All-reduce ``t`` over ``group``; with ``identical_inputs`` an identity (once the OpToIdentity
    pattern has run) whose gradient is the all-reduce, with ``identical_grad_inputs`` an all-reduce
    whose gradient is an identity."""
    if op not in ("add", "mean"):
        raise ValueError(f"{OP_TYPE}: op must be 'add' or 'mean' (an identity forward or gradient stands for "
                         f"one of them), got {op!r}")
    attrs = {"op": op, "group": _group(OP_TYPE, group), "identical_inputs": bool(identical_inputs),
             "identical_grad_inputs": bool(identical_grad_inputs), "identity": False}
    return create_op(OP_TYPE, [t], attrs, output_names=[t.name + "_all_reduce"]).outputs[0]


def replace_by_identity(graph: Graph) -> int:
    """PopART's OpToIdentity pattern over ``graph``: each all-reduce with identical inputs becomes an
    identity. Returns how many ops it changed."""
    changed = [op for op in graph.ops
               if op.type == OP_TYPE and op.attrs["identical_inputs"] and not op.attrs["identity"]]
    for op in changed:
        op.attrs["identity"] = True
    return len(changed)
