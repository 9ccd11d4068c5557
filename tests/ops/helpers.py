"""Run a function of tensors on NumPy inputs: the one-op graphs the op tests are made of."""
from __future__ import annotations

from typing import Callable, Sequence, Tuple, Union

import numpy as np

import popxl
import popxl.ops as ops

Outputs = Union[np.ndarray, Tuple[np.ndarray, ...]]


def _store_all(results) -> list:
    """Store each tensor ``fn`` returned in its own output stream."""
    tensors = list(results) if isinstance(results, (tuple, list)) else [results]
    streams = []
    for index, tensor in enumerate(tensors):
        stream = popxl.d2h_stream(tensor.shape, tensor.dtype, name=f"out{index}")
        ops.host_store(stream, tensor)
        streams.append(stream)
    return streams


def _unpacked(results, streams, outputs) -> Outputs:
    values = tuple(outputs[s] for s in streams)
    return values if isinstance(results, (tuple, list)) else values[0]


def run_op(fn: Callable[..., object], *arrays: np.ndarray) -> Outputs:
    """Load each array from a host stream, apply ``fn`` to the tensors, store what it returns (a
    tensor, or a tuple/list of tensors) and run once on the IPU model.

    Returns the output array, or a tuple of arrays when ``fn`` returned several tensors.
    """
    ir = popxl.Ir()
    with ir.main_graph:
        in_streams = [popxl.h2d_stream(np.shape(a), popxl.dtype.as_dtype(np.asarray(a).dtype),
                                       name=f"in{i}") for i, a in enumerate(arrays)]
        results = fn(*(ops.host_load(s) for s in in_streams))
        out_streams = _store_all(results)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({s: np.asarray(a) for s, a in zip(in_streams, arrays)})
    return _unpacked(results, out_streams, outputs)


def run_op_on_variables(fn: Callable[..., object], *arrays: np.ndarray) -> Tuple[Outputs, Sequence[np.ndarray]]:
    """Like ``run_op``, but the inputs are variables; also returns their values after the run, which
    shows what in-place ops wrote."""
    ir = popxl.Ir()
    with ir.main_graph:
        variables = [popxl.variable(np.asarray(a), name=f"v{i}") for i, a in enumerate(arrays)]
        results = fn(*variables)
        out_streams = _store_all(results)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({})
        updated = [session.get_tensor_data(v) for v in variables]
    return _unpacked(results, out_streams, outputs), updated
