"""Lowering rules of ONNX's reductions, ArgMax/ArgMin and TopK."""
from __future__ import annotations

from workbench import ops

from .table import LoweringError, NodeContext, lowers

_REDUCERS = {"ReduceSum": ops.sum, "ReduceMean": ops.mean, "ReduceMax": ops.max, "ReduceMin": ops.min,
             "ReduceProd": ops.prod, "ReduceSumSquare": ops.sumsquare, "ReduceL1": ops.l1, "ReduceL2": ops.l2,
             "ReduceLogSum": ops.logsum, "ReduceLogSumExp": ops.logsumexp}


def checked_axes(axes, rank: int) -> tuple[int, ...]:
    """``axes`` counted from 0, each in ``[-rank, rank - 1]`` (PopART refuses others, in these words)."""
    for axis in axes:
        if not -rank <= int(axis) < rank:
            raise LoweringError(f"Axis {int(axis)} is out of acceptable range [{-rank}, {rank - 1}]")
    return tuple(int(axis) % rank for axis in axes)


def _reduction(op_type: str, fn):
    @lowers(op_type, 1, 11)
    def rule(ctx: NodeContext):
        x = ctx.input(0)
        axes = ctx.attrs.get("axes")
        axis = checked_axes(axes, x.rank) if axes else tuple(range(x.rank))
        return [fn(x, axis=axis, keepdims=bool(ctx.attrs.get("keepdims", 1)))]


for _op_type, _fn in _REDUCERS.items():
    _reduction(_op_type, _fn)


def _arg(op_type: str, fn):
    @lowers(op_type, 1, 11)
    def rule(ctx: NodeContext):
        x = ctx.input(0)
        y = fn(x, int(ctx.attrs.get("axis", 0)) % x.rank, bool(ctx.attrs.get("keepdims", 1)))
        dtype = ctx.output_dtype()
        return [y if y.dtype is dtype else ops.cast(y, dtype)]


_arg("ArgMax", ops.argmax)
_arg("ArgMin", ops.argmin)


@lowers("TopK", 1, 10, 11)
def _topk(ctx: NodeContext):
    x = ctx.input(0)
    k = int(ctx.attrs["k"]) if ctx.since < 10 else int(ctx.value(1).reshape(-1)[0])
    values, indices = ops.topk(x, k, int(ctx.attrs.get("axis", -1)) % x.rank,
                               largest=bool(ctx.attrs.get("largest", 1)), sorted=bool(ctx.attrs.get("sorted", 1)))
    dtype = ctx.output_dtype(1)
    return [values, indices if indices.dtype is dtype else ops.cast(indices, dtype)]
