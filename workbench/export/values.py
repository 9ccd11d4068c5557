"""Plain values for export: IR objects and NumPy values turned into JSON-native data."""
from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np

from workbench.ir import Graph, Op, RemoteBuffer, ReplicaGrouping, Tensor, TensorSpec, dtypes
from workbench.ir.streams import _Stream


def plain(value: Any) -> Any:
    """``value`` as None, bool, int, float, str, list or dict (string keys), recursively.

    IR objects become their ids (tensors, ops, graphs, streams, remote buffers); dtypes their names;
    tuples and arrays lists; non-finite floats the strings "NaN", "Infinity" and "-Infinity".
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _finite(float(value))
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (Tensor, Op, Graph)):
        return value.id
    if isinstance(value, _Stream):
        return value.name
    if isinstance(value, dtypes.dtype):
        return value.name
    if isinstance(value, TensorSpec):
        return {"shape": list(value.shape), "dtype": value.dtype.name, "meta_shape": list(value.meta_shape)}
    if isinstance(value, RemoteBuffer):
        return value.remote_buffer_id
    if isinstance(value, ReplicaGrouping):
        return grouping(value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, dict):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    return str(value)


def grouping(replica_grouping: ReplicaGrouping) -> dict:
    """A replica grouping as its assignment, sizes and (when constant) stride."""
    return {"num_replicas": replica_grouping.num_replicas, "num_groups": replica_grouping.num_groups,
            "group_size": replica_grouping.group_size,
            "stride": replica_grouping.stride if replica_grouping.is_const else None,
            "assignment": list(replica_grouping.assignment)}


def _finite(number: float) -> Any:
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    return number
