"""What a stepper view runs with: the inputs given to ``show`` as the session's host-to-device streams,
whether given by stream, by stream name or as a PopART ``PyStepIO``; zeros, said in the view, where none
were given, so that a program shown without inputs can still be stepped."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np


@dataclass(frozen=True, slots=True)
class StepperInputs:
    """The inputs keyed by stream (None: the program reads no stream), and the names of the streams given
    zeros because no inputs were given."""

    inputs: Optional[dict]
    zeros_for: tuple[str, ...] = ()


def stepper_inputs(session: Any, inputs: Any) -> StepperInputs:
    """``inputs`` keyed by the session's streams: a mapping from streams or stream names (a PopART tensor id
    names its stream) or a ``PyStepIO``; None gives each stream zeros of its host buffer's shape."""
    streams = sorted(session.ir.get_all_h2d_streams(), key=lambda stream: stream.name)
    if inputs is None:
        if not streams:
            return StepperInputs(None)
        zeros = {stream: np.zeros(session._full_input_shape(stream.shape), stream.dtype.as_numpy())
                 for stream in streams}
        return StepperInputs(zeros, tuple(stream.name for stream in streams))
    step_io = getattr(inputs, "inputs", None)
    given = step_io if isinstance(step_io, Mapping) and hasattr(inputs, "has_input") else inputs
    if not isinstance(given, Mapping):
        raise TypeError(f"the stepper's inputs are a dict from streams (or their names) to arrays, or a PopART "
                        f"PyStepIO; got {type(inputs).__name__}")
    by_name = {stream.name: stream for stream in streams}
    keyed = {}
    for key, value in given.items():
        if isinstance(key, str):
            if key not in by_name:
                known = ", ".join(repr(name) for name in by_name) or "none"
                raise ValueError(f"the stepper's inputs name a stream {key!r} that the program does not read; "
                                 f"its input streams are: {known}")
            key = by_name[key]
        keyed[key] = value
    return StepperInputs(keyed)
