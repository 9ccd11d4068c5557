"""Host buffers of a run: checking the inputs given and shaping the outputs returned.

A stream's buffer has shape ``[num_host_transfers, replication_factor, *stream.shape]``, with each of
the two leading dimensions left out when it is 1, exactly as popxl lays them out. Like popxl, a run also
takes more transfers than it needs (it reads the first ones) and, for a stream of one element, any
dimensions of size 1 after the leading ones (a ``(10, 1)`` array for a scalar stream over 10 transfers).
"""
from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any, Iterable

import numpy as np

from workbench.ir import dtypes
from workbench.ir.host_data import host_array
from workbench.ir.streams import Stream


def host_shape(stream: Stream, transfers: int, replicas: int) -> tuple[int, ...]:
    return buffer_shape(stream.shape, transfers, replicas)


def buffer_shape(shape: Iterable[int], transfers: int, replicas: int) -> tuple[int, ...]:
    """The host buffer shape of a stream of ``shape``: the two leading dimensions, each left out when 1."""
    return (transfers,) * (transfers > 1) + (replicas,) * (replicas > 1) + tuple(shape)


def run_view(stream: Stream, array: np.ndarray, transfers: int, replicas: int, kind: str) -> np.ndarray:
    """``array`` as the ``[transfers, replicas, *stream.shape]`` array a run reads or writes (a view of it),
    or popxl's error naming the dimension that is wrong: the transfer dimension must hold at least
    ``transfers`` entries, the replica dimension exactly ``replicas``, and the rest must be the stream's
    shape, or all 1 for a stream of one element. (popxl takes all-1 dimensions for any stream, reading
    past the array where the stream has more elements; that is refused here.)"""
    shape, leading = array.shape, 0
    if transfers > 1:
        given = shape[0] if shape else "a scalar"
        if not shape or shape[0] < transfers:
            raise ValueError(f"Dimension 0 ({given}) for the array provided for {kind} stream {stream.name} is not "
                             f"large enough.\nIt should be at least of size num_host_transfers = {transfers}")
        leading = 1
    if replicas > 1:
        if len(shape) <= leading or shape[leading] != replicas:
            given = shape[leading] if len(shape) > leading else "missing"
            raise ValueError(f"Dimension {leading} ({given}) for the array provided for {kind} stream "
                             f"{stream.name} is the wrong size.\nIt should be of size replication_factor = {replicas}")
        leading += 1
    data = shape[leading:]
    one_element = all(d == 1 for d in data) and int(np.prod(stream.shape)) == 1
    if data != tuple(stream.shape) and not one_element:
        raise ValueError(f"Shape mismatch for {kind} stream {stream.name}:\nStream shape = {tuple(stream.shape)}, "
                         f"therefore expected full global batch shape "
                         f"{buffer_shape(stream.shape, transfers, replicas)}. Got array shape = {shape}")
    if transfers > 1 and shape[0] > transfers:
        array = array[:transfers]
    return array.reshape(transfers, replicas, *stream.shape)


def _names(streams: Iterable[Stream]) -> str:
    return ", ".join(sorted(repr(s.name) for s in streams)) or "none"


def check_mapping(given: Any, what: str, kind: str) -> None:
    """``session.run`` takes a dict from streams to arrays, as popxl does."""
    if type(given) is not dict and not isinstance(given, Mapping):
        raise TypeError(f"session {what} must be a dict from popxl.{kind} to NumPy arrays, got "
                        f"{type(given).__name__}")


def check_stream_keys(given: Iterable[Any], expected: Set, what: str) -> None:
    if given == expected:  # a dict's keys compare with a set as a set does
        return
    given = list(given)
    unknown = [k for k in given if k not in expected]
    missing = expected - set(given)
    ir = next(iter(expected)).ir if expected else None
    for key in unknown:
        twin = next((s for s in missing if isinstance(key, Stream) and s.name == key.name), None)
        if twin is not None:
            raise ValueError(f"session {what}: stream {key.name!r} belongs to {key.ir!r}, not to the session's "
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


def _check_streams(given: Any, layouts: dict, what: str, kind: str) -> None:
    """``given`` maps exactly the streams of ``layouts`` to arrays."""
    check_mapping(given, what, kind)
    check_stream_keys(given.keys(), layouts.keys(), what)


def _describe(key: Any, ir: Any) -> str:
    if isinstance(key, Stream) and ir is not None and key.ir is not ir:
        return f"{key.name!r} (a stream of {key.ir!r}, not of the session's {ir!r})"
    return repr(getattr(key, "name", key))


class HostBuffers:
    """The host buffers of one Ir's streams, laid out once: checks the inputs a run is given and the
    output arrays it writes into, and makes new output arrays.

    ``replicas`` is how many replicas the host feeds (an instance's own, in a job of several)."""

    def __init__(self, h2d: Iterable[Stream], d2h: Iterable[Stream], transfers: int, replicas: int):
        self._transfers, self._replicas = transfers, replicas
        self._inputs = {s: self._layout(s) for s in h2d}
        self._outputs = {s: self._layout(s) for s in d2h}

    def _layout(self, stream: Stream) -> tuple:
        """(the host shape, the dtype, the ``[transfers, replicas, *shape]`` shape of a run)."""
        return (host_shape(stream, self._transfers, self._replicas), stream.dtype.as_numpy(),
                (self._transfers, self._replicas, *stream.shape))

    def prepare_inputs(self, inputs: Mapping[Any, Any], downcast: bool) -> dict:
        """Check every input and return each as a ``[transfers, replicas, *shape]`` array."""
        layouts = self._inputs
        _check_streams(inputs, layouts, "inputs", "HostToDeviceStream")
        prepared = {}
        for stream, value in inputs.items():
            shape, dtype, run_shape = layouts[stream]
            if type(value) is not np.ndarray or value.dtype != dtype or value.shape != shape:
                value = run_view(stream, self._converted(stream, value, downcast), self._transfers,
                                 self._replicas, "input")
            prepared[stream] = value.reshape(run_shape)
        return prepared

    def check_shapes(self, given: Mapping[Any, Any], inputs: bool) -> None:
        """Check that ``given`` maps exactly the input (or output) streams to arrays of the host shape,
        without converting anything: popxl's ``Session._validate_run_inputs`` and ``_validate_run_outputs``."""
        layouts, what = (self._inputs, "inputs") if inputs else (self._outputs, "outputs")
        _check_streams(given, layouts, what, "HostToDeviceStream" if inputs else "DeviceToHostStream")
        for stream, value in given.items():
            run_view(stream, np.asarray(value), self._transfers, self._replicas, what[:-1])

    def _converted(self, stream: Stream, value: Any, downcast: bool) -> np.ndarray:
        """``value`` as an array of the stream's dtype, or a clear error."""
        _, want, _ = self._inputs[stream]
        array = host_array(value)
        if array.dtype != want:
            narrowed = dtypes.DOWNCAST.get(array.dtype)
            if downcast and narrowed == want:
                array = array.astype(want)
            else:
                raise TypeError(f"input for stream {stream.name!r} has dtype {array.dtype}, expected "
                                f"{want}" + (" (or a 64-bit array with downcast_inputs=True)"
                                             if want in dtypes.DOWNCAST.values() else ""))
        return array

    def create_outputs(self) -> dict:
        """Zeroed output arrays, one per device-to-host stream."""
        return {stream: np.zeros(shape, dtype) for stream, (shape, dtype, _) in self._outputs.items()}

    def output_views(self, outputs: Mapping[Any, np.ndarray]) -> dict:
        """Check the output arrays and return ``[transfers, replicas, *shape]`` views to write into."""
        layouts = self._outputs
        _check_streams(outputs, layouts, "outputs", "DeviceToHostStream")
        views = {}
        for stream, array in outputs.items():
            shape, dtype, _ = layouts[stream]
            if not isinstance(array, np.ndarray):
                raise TypeError(f"output for stream {stream.name!r} must be a NumPy array of shape {shape}, "
                                f"got {type(array).__name__}")
            if array.dtype != dtype:
                raise TypeError(f"output array for stream {stream.name!r} has dtype {array.dtype}, "
                                f"expected {dtype}")
            if not array.flags.writeable:
                raise ValueError(f"output array for stream {stream.name!r} is read-only; expected a writable "
                                 "array (session.create_host_outputs() makes them)")
            view = run_view(stream, array, self._transfers, self._replicas, "output")  # a copy where no view exists
            if view.size and not np.may_share_memory(view, array):
                raise ValueError(f"output array for stream {stream.name!r} must be writable in place "
                                 "(a contiguous array)")
            views[stream] = view
        return views
