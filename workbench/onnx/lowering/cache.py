"""Lowering rules of CacheStore and CacheLoad (ai.graphcore, version 1): PopART's store of a tensor to a
remote buffer in Streaming Memory, and its load back, both naming the buffer by the ``bufferid`` attribute
and the entry by an optional integer offset input (entry 0 without one).

The nodes of one model that name the same ``bufferid`` share one remote buffer of the workbench, made
by the first of them; it has as many entries as the largest constant offset among them needs (one
without offsets, as PopART gives a buffer named by id); an offset computed at run time must fall
inside those entries. CacheLoad's first input gives the shape and type of the tensor loaded; its
output is the loaded tensor.
"""
from __future__ import annotations

from typing import Union

from workbench import ops
from workbench.ir import RemoteBuffer, Tensor, remote_buffer

from ..shapes import GRAPHCORE
from .table import LoweringError, NodeContext, lowers

_BUFFERS = "cache_remote_buffers"  # the model_state key: bufferid -> RemoteBuffer


def _buffer(ctx: NodeContext, tensor: Tensor) -> RemoteBuffer:
    """The remote buffer the node's ``bufferid`` names, made for ``tensor``'s shape and type at first use."""
    if "bufferid" not in ctx.attrs:
        raise LoweringError(f"{ctx.label}: the attribute 'bufferid' is missing; {ctx.op_type} names its remote "
                            "buffer by it (an int, e.g. bufferid=0)")
    buffer_id = int(ctx.attrs["bufferid"])
    buffers: dict[int, RemoteBuffer] = ctx.model_state.setdefault(_BUFFERS, {})
    buffer = buffers.get(buffer_id)
    if buffer is None:
        buffer = buffers[buffer_id] = remote_buffer(tuple(tensor.shape), tensor.dtype, 1)
    elif tuple(buffer.tensor_shape) != tuple(tensor.shape) or buffer.tensor_dtype is not tensor.dtype:
        raise LoweringError(f"{ctx.label}: remote buffer {buffer_id} holds {buffer.tensor_dtype.name}"
                            f"{list(buffer.tensor_shape)} (as an earlier CacheLoad or CacheStore of it made it), "
                            f"but input '{ctx.node.input[0]}' is {tensor.dtype.name}{list(tensor.shape)}")
    return buffer


def _offset(ctx: NodeContext, buffer: RemoteBuffer) -> Union[int, Tensor]:
    """The entry: input 1 (a constant, for which the buffer grows, or a run-time integer), else 0."""
    if not ctx.has(1):
        return 0
    known = ctx.known_value(1)
    if known is None:
        return ctx.input(1)
    if known.size != 1 or known.dtype.kind not in "iu":
        raise LoweringError(f"{ctx.label}: the offset '{ctx.node.input[1]}' must be one integer, got "
                            f"{known.dtype}{list(known.shape)}")
    entry = int(known.reshape(-1)[0])
    if entry < 0:
        raise LoweringError(f"{ctx.label}: the offset '{ctx.node.input[1]}' is {entry}; entries count from 0")
    if entry >= buffer.entries:
        buffer.entries = entry + 1
    return entry


@lowers("CacheStore", 1, domain=GRAPHCORE)
def _cache_store(ctx: NodeContext):
    value = ctx.input(0)
    buffer = _buffer(ctx, value)
    ops.remote_store(buffer, _offset(ctx, buffer), value)
    return []


@lowers("CacheLoad", 1, domain=GRAPHCORE)
def _cache_load(ctx: NodeContext):
    buffer = _buffer(ctx, ctx.input(0))
    return [ops.remote_load(buffer, _offset(ctx, buffer))]
