"""Moving tensors between IPUs of a replica and between compute and IO tiles."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

import numpy as np

from workbench.ir import Op, Tensor, TensorSpec, get_current_context

from .registry import OpDef, create_op, register

__all__ = ["ipu_copy", "io_tile_copy"]


def _copied_spec(specs, attrs) -> list[TensorSpec]:
    """A copy moves its input unchanged, meta shape included."""
    return [specs[0]]


def _copy_kernel(op, env):
    return np.array


def _ipu_copy_grad(op, grads, fwd):
    """The gradient is copied back to the IPU the value came from."""
    return [None if grads[0] is None else ipu_copy(grads[0], op.attrs["source"])]


@contextmanager
def _tiles(tile_set: str) -> Iterator[None]:
    context = get_current_context()
    previous, context.io_tile_set = context.io_tile_set, tile_set == "io"
    try:
        yield
    finally:
        context.io_tile_set = previous


def _io_tile_copy_grad(op, grads, fwd):
    """The gradient is copied back to the tiles the value came from."""
    if grads[0] is None:
        return [None]
    with _tiles(op.inputs[0].tile_set):
        return [io_tile_copy(grads[0])]


register(OpDef("ipu_copy", _copied_spec, _copy_kernel, grad=_ipu_copy_grad, crosses_ipus=True, moves_to_ipu=True,
               ipus=lambda op: tuple(dict.fromkeys((op.attrs["source"], op.attrs["destination"]))),
               popart_class="IpuCopyOp"))
register(OpDef("io_tile_copy", _copied_spec, _copy_kernel, grad=_io_tile_copy_grad, popart_class="IoTileCopyOp"))


def ipu_copy(t: Tensor, destination: int, source: Optional[int] = None) -> Tensor:
    """Copy ``t`` to IPU ``destination`` (over the IPU links); ``source`` defaults to where ``t`` lives."""
    if not isinstance(destination, int) or isinstance(destination, bool) or destination < 0:
        raise ValueError(f"ipu_copy: destination must be a non-negative int, got {destination!r}")
    if source is not None and source != t.ipu:
        raise ValueError(f"ipu_copy: {t.id!r} lives on IPU {t.ipu}, not on the given source IPU {source}")
    return create_op("ipu_copy", [t], {"source": t.ipu, "destination": destination}, ipu=t.ipu,
                     output_ipus=[destination], output_names=[f"{t.name}_ipu{destination}"]).outputs[0]


def io_tile_copy(t: Tensor) -> Tensor:
    """Copy ``t`` between the compute tiles and the IO tiles of its IPU: to the IO tiles inside
    ``popxl.io_tiles()``, back to the compute tiles outside it."""
    destination = "io" if get_current_context().io_tile_set else "compute"
    return create_op("io_tile_copy", [t], {"destination": destination}, ipu=t.ipu).outputs[0]


def copy_destination(op: Op) -> Optional[tuple[int, str]]:
    """The IPU and tile set a copy op (``ipu_copy``, ``io_tile_copy``) sends its output to; None for other ops."""
    if op.type == "ipu_copy":
        return op.attrs["destination"], op.tile_set
    if op.type == "io_tile_copy":
        return op.ipu, op.attrs["destination"]
    return None
