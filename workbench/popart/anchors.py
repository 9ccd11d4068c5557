"""Host arrays of a session run, laid out as PopART lays them out.

Inputs are ``[batchesPerStep, replicationFactor, *shape]`` with each leading 1 left out (any array of
that many elements is taken). Anchors: ALL ``[batchesPerStep, replication, *shape]``, EVERYN
``[batchesPerStep // N, replication, *shape]``, FINAL and SUM ``[replication, *shape]``, each leading
1 left out. The program stores ALL and EVERYN anchors every batch (the host keeps every N-th for
EVERYN), and FINAL and SUM anchors once, after the loop.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .dataflow import AnchorReturnType, AnchorReturnTypeId
from .errors import popart_exception


def expected_shape(batches: int, replicas: int, shape: tuple) -> list[int]:
    return [d for d in (batches, replicas) if d != 1] + list(shape)


def returned_batches(art: AnchorReturnType, batches: int) -> int:
    if art.id() in (AnchorReturnTypeId.Final, AnchorReturnTypeId.Sum):
        return 1
    if art.id() is AnchorReturnTypeId.EveryN:
        if batches % art.rp():
            raise popart_exception("Invalid anchor period, is not divisble by batchesPerStep")
        return batches // art.rp()
    return batches


def create(session: Any) -> dict[str, np.ndarray]:
    """Zeroed anchor arrays of the session's anchors (``initAnchorArrays``)."""
    arrays = {}
    flow = session.dataFlow
    for anchor in flow.anchors():
        info = session.getInfo(anchor)
        batches = returned_batches(flow.art(anchor), flow.batchesPerStep())
        shape = [d for d in (batches, session.accumulationFactor, session.replicationFactor) if d != 1] + info.shape()
        arrays[anchor] = np.zeros(shape, info.data_type_lcase())
    return arrays


def input_array(tensor_id: str, data: Any, stream: Any, batches: int, replicas: int) -> np.ndarray:
    """One input as ``[batches, replicas, *shape]`` (without the 1s) in the stream's dtype."""
    array = np.asarray(data)
    want = stream.dtype.as_numpy()
    shape = expected_shape(batches, replicas, stream.shape)
    if array.dtype == want and list(array.shape) == shape:
        return array
    if (array.dtype, want) in _NARROWED:
        array = _narrowed(tensor_id, array, want)
    if array.dtype != want:
        raise popart_exception(f"Input '{tensor_id}' has dtype {array.dtype}, but the model expects {want} "
                               f"of shape {shape}")
    if array.size != int(np.prod(shape, dtype=np.int64)):
        raise popart_exception(f"Input '{tensor_id}' has shape {list(array.shape)} ({array.size} elements), "
                               f"expected {shape} ([batchesPerStep={batches}, replicationFactor={replicas}, "
                               f"*{list(stream.shape)}] without the dimensions that are 1)")
    return array.reshape(shape)


# 64-bit integer host data for the 32-bit inputs PopART turns 64-bit ones into (GraphTransformer's
# convertINT64ToINT32, or enableSupportedDataTypeCasting): converted when every value fits.
_NARROWED = {(np.dtype(np.int64), np.dtype(np.int32)), (np.dtype(np.uint64), np.dtype(np.uint32))}


def _narrowed(tensor_id: str, array: np.ndarray, want: np.dtype) -> np.ndarray:
    limits = np.iinfo(want)
    if array.size and (array.min() < limits.min or array.max() > limits.max):
        raise popart_exception(f"Input '{tensor_id}' has {array.dtype} values outside the range of {want} "
                               f"[{limits.min}, {limits.max}], the type the model takes it as")
    return array.astype(want)


def deliver(tensor_id: str, stored: np.ndarray, art: AnchorReturnType, stepio: Any, batches: int,
            replicas: int) -> None:
    """Write one anchor's stored batches into the step IO as its return type asks."""
    full = stored.reshape((batches, replicas) + stored.shape[(batches > 1) + (replicas > 1):])
    kind = art.id()
    if kind in (AnchorReturnTypeId.Final, AnchorReturnTypeId.Sum):
        picked = full[:1]  # stored once, after the loop
    elif kind is AnchorReturnTypeId.EveryN:
        picked = full[art.rp() - 1::art.rp()]
    else:
        picked = full
    if hasattr(stepio, "write_output"):
        stepio.write_output(tensor_id, picked)
        return
    if not stepio.has_output(tensor_id):
        raise popart_exception(f"No anchor array was given for anchor '{tensor_id}'")
    target = stepio.output(tensor_id)
    if not isinstance(target, np.ndarray) or target.size != picked.size:
        raise popart_exception(f"The anchor array of '{tensor_id}' has shape {list(np.shape(target))}, expected "
                               f"{expected_shape(picked.shape[0], replicas, picked.shape[2:])}")
    target[...] = picked.reshape(target.shape)
