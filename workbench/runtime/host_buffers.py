"""Host buffers of a run: checking the inputs given and shaping the outputs returned.

A stream's buffer has shape ``[num_host_transfers, replication_factor, *stream.shape]``, with each of
the two leading dimensions left out when it is 1, exactly as popxl lays them out.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterable

import numpy as np

from workbench.ir import dtypes
from workbench.ir.host_data import host_array
from workbench.ir.streams import _Stream


def host_shape(stream: _Stream, transfers: int, replicas: int) -> tuple[int, ...]:
    return (transfers,) * (transfers > 1) + (replicas,) * (replicas > 1) + tuple(stream.shape)


def _names(streams: Iterable[_Stream]) -> str:
    return ", ".join(sorted(repr(s.name) for s in streams)) or "none"


def check_mapping(given: Any, what: str, kind: str) -> None:
    """``session.run`` takes a dict from streams to arrays, as popxl does."""
    if type(given) is not dict and not isinstance(given, Mapping):
        raise TypeError(f"session {what} must be a dict from popxl.{kind} to NumPy arrays, got "
                        f"{type(given).__name__}")


def check_stream_keys(given: Iterable[Any], expected: set, what: str) -> None:
    if given == expected:  # a dict's keys compare with a set as a set does
        return
    given = list(given)
    unknown = [k for k in given if k not in expected]
    missing = expected - set(given)
    ir = next(iter(expected))._ir if expected else None
    for key in unknown:
        twin = next((s for s in missing if isinstance(key, _Stream) and s.name == key.name), None)
        if twin is not None:
            raise ValueError(f"session {what}: stream {key.name!r} belongs to {key._ir!r}, not to the session's "
                             f"{ir!r}; expected the session Ir's own stream {key.name!r} (the one "
                             "popxl.h2d_stream or popxl.d2h_stream returned while that Ir was built)")
    if unknown or missing:
        parts = []
        if missing:
            parts.append(f"missing {what} for stream(s) {_names(missing)}")
        if unknown:
            parts.append("unexpected key(s) " + ", ".join(_describe(k, ir) for k in unknown))
        raise ValueError(f"session {what}: {'; '.join(parts)}. Expected exactly the streams "
                         f"{_names(expected)}")


def _describe(key: Any, ir: Any) -> str:
    if isinstance(key, _Stream) and ir is not None and key._ir is not ir:
        return f"{key.name!r} (a stream of {key._ir!r}, not of the session's {ir!r})"
    return repr(getattr(key, "name", key))


def prepare_inputs(inputs: Mapping[Any, Any], expected: set, transfers: int, replicas: int,
                   downcast: bool) -> dict:
    """Check every input and return each as a ``[transfers, replicas, *shape]`` array."""
    check_mapping(inputs, "inputs", "HostToDeviceStream")
    check_stream_keys(inputs.keys(), expected, "inputs")
    prepared = {}
    for stream, value in inputs.items():
        array = host_array(value)
        want = stream.dtype.as_numpy()
        if array.dtype != want:
            narrowed = dtypes.DOWNCAST.get(array.dtype)
            if downcast and narrowed == want:
                array = array.astype(want)
            else:
                raise TypeError(f"input for stream {stream.name!r} has dtype {array.dtype}, expected "
                                f"{want}" + (" (or a 64-bit array with downcast_inputs=True)"
                                             if want in dtypes.DOWNCAST.values() else ""))
        shape = host_shape(stream, transfers, replicas)
        if array.shape != shape:
            if array.size == 1 and int(np.prod(shape)) == 1:
                array = array.reshape(shape)
            else:
                raise ValueError(f"input for stream {stream.name!r} has shape {array.shape}, expected "
                                 f"{shape} ([num_host_transfers={transfers}, replication_factor="
                                 f"{replicas}, *{tuple(stream.shape)}] without the dimensions that are 1)")
        prepared[stream] = array.reshape((transfers, replicas, *stream.shape))
    return prepared


def create_outputs(streams: Iterable[_Stream], transfers: int, replicas: int) -> dict:
    return {s: np.zeros(host_shape(s, transfers, replicas), s.dtype.as_numpy()) for s in streams}


def output_views(outputs: Mapping[Any, np.ndarray], expected: set, transfers: int,
                 replicas: int) -> dict:
    """Check the output arrays and return ``[transfers, replicas, *shape]`` views to write into."""
    check_mapping(outputs, "outputs", "DeviceToHostStream")
    check_stream_keys(outputs.keys(), expected, "outputs")
    views = {}
    for stream, array in outputs.items():
        shape = host_shape(stream, transfers, replicas)
        if not isinstance(array, np.ndarray):
            raise TypeError(f"output for stream {stream.name!r} must be a NumPy array of shape {shape}, "
                            f"got {type(array).__name__}")
        if array.shape != shape:
            raise ValueError(f"output array for stream {stream.name!r} has shape {array.shape}, expected "
                             f"{shape}")
        if array.dtype != stream.dtype.as_numpy():
            raise TypeError(f"output array for stream {stream.name!r} has dtype {array.dtype}, "
                            f"expected {stream.dtype.as_numpy()}")
        if not array.flags.writeable:
            raise ValueError(f"output array for stream {stream.name!r} is read-only; expected a writable "
                             "array (session.create_host_outputs() makes them)")
        view = array.view()
        try:
            view.shape = (transfers, replicas, *stream.shape)
        except AttributeError:
            raise ValueError(f"output array for stream {stream.name!r} must be writable in place "
                             "(a contiguous array)") from None
        views[stream] = view
    return views
