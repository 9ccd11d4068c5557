"""Host data of a run: ``PyStepIO`` (arrays), ``PyStepIOCallback`` (functions called per batch) and
``PyWeightsIO`` (arrays for reading and writing weights)."""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from .errors import popart_exception


def _contiguous(tensor_id: str, array: Any, kind: str) -> None:
    if isinstance(array, np.ndarray) and not array.flags.c_contiguous:
        raise popart_exception(f"PyStepIO is unable to use the numpy {kind} array for tensor '{tensor_id}' as it is "
                               "not c-contiguous (a data conversion here could have a significant impact on "
                               "performance and hence is not allowed)")


class PyStepIO:
    """Input arrays and anchor arrays of one run, by tensor id (each C-contiguous, as PopART needs
    them; a session checks them all before it runs)."""

    def __init__(self, inputs: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray]):
        for tensor_id, array in inputs.items():
            _contiguous(tensor_id, array, "input")
        for tensor_id, array in outputs.items():
            _contiguous(tensor_id, array, "output")
        self.inputs = dict(inputs)
        self.outputs = outputs
        self.runtime_asserts = True

    def enableRuntimeAsserts(self, enabled: bool) -> None:
        """With False, the element counts of the arrays are not compared with the model's before a
        run (an array of the wrong size is still refused)."""
        self.runtime_asserts = bool(enabled)

    def input(self, tensor_id: str, batch: int, batches: int) -> np.ndarray:
        return np.asarray(self.inputs[tensor_id])

    def has_input(self, tensor_id: str) -> bool:
        return tensor_id in self.inputs

    def output(self, tensor_id: str) -> np.ndarray:
        return self.outputs[tensor_id]

    def has_output(self, tensor_id: str) -> bool:
        return tensor_id in self.outputs

    def output_complete(self, tensor_id: str) -> None:
        """Nothing to do: the anchor array is written in place."""


class PyStepIOCallback:
    """Functions the session calls: ``input_callback(id, prefetch)`` returns one batch of an input,
    ``input_complete_callback(id)`` follows it; ``output_callback(id)`` returns the array to write one
    batch of an anchor into, ``output_complete_callback(id)`` follows it."""

    def __init__(self, input_callback: Callable, input_complete_callback: Callable, output_callback: Callable,
                 output_complete_callback: Callable):
        self._input = input_callback
        self._input_complete = input_complete_callback
        self._output = output_callback
        self._output_complete = output_complete_callback

    def has_input(self, tensor_id: str) -> bool:
        return True

    def input(self, tensor_id: str, batch: int, batches: int) -> np.ndarray:
        """All of a run's batches of ``tensor_id``, one callback per batch, stacked."""
        parts = []
        for _ in range(batches):
            array = self._input(tensor_id, False)
            _contiguous(tensor_id, array, "input")
            parts.append(np.array(array))
            self._input_complete(tensor_id)
        return np.stack(parts) if batches > 1 else parts[0]

    def has_output(self, tensor_id: str) -> bool:
        return True

    def write_output(self, tensor_id: str, batches: np.ndarray) -> None:
        for value in batches:
            target = self._output(tensor_id)
            _contiguous(tensor_id, target, "output")
            target[...] = value.reshape(np.shape(target))
            self._output_complete(tensor_id)


class PyWeightsIO:
    """Arrays for weights, by tensor id: ``readWeights`` fills them, ``writeWeights`` reads them."""

    def __init__(self, weights: Mapping[str, np.ndarray]):
        for tensor_id, array in weights.items():
            if isinstance(array, np.ndarray) and not array.flags.c_contiguous:
                raise popart_exception(f"PyWeightsIO is unable to use the provided numpy output array for tensor "
                                       f"'{tensor_id}' as it is not c-contiguous. Please use a function like "
                                       "`numpy.ascontiguousarray()` to make contiguous before passing to PyWeightsIO")
        self.weights = weights

    def contains(self, tensor_id: str) -> bool:
        return tensor_id in self.weights
