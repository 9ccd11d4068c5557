"""The weights side of a session: moving them between host and device, reading and writing the host
copy, saving the model with its current weights (``modelToHost``, external data files included) and
replacing the host copy from another model."""
from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np
import onnx

from workbench.onnx.external_data import ExternalRef
from workbench.onnx.lowering import LoweredModel
from workbench.onnx.model import GraphBuilder, load_model
from workbench.onnx.tensor_storage import replace_initializers, to_array

from workbench.runtime.session import Session as RuntimeSession

from . import external_weights, step_log
from .errors import popart_exception
from .stepio import PyWeightsIO


class SessionWeights:
    """The weights of a session (mixed into ``_Session``, whose runtime, program and host copy it uses)."""

    # What ``_Session`` provides.
    _builder: GraphBuilder
    _model: onnx.ModelProto
    _lowered: LoweredModel
    _runtime: Optional[RuntimeSession]
    _host_weights: dict[str, np.ndarray]
    _external: dict[str, ExternalRef]
    _weights_sent: bool
    _require_attached: Callable[[str], RuntimeSession]
    _constant_weights: Callable[[], bool]

    def weightsFromHost(self) -> None:
        runtime = self._require_attached("weightsFromHost")
        self._weights_sent = True
        runtime.write_variables_data({var: self._host_weights[name]
                                            for name, var in self._lowered.weights.items()})
        step_log.weights("FromHost", list(self._lowered.weights))

    def weightsToHost(self) -> None:
        runtime = self._require_attached("weightsToHost")
        values = runtime.get_tensors_data(self._lowered.weights.values())
        # One update: an interrupt leaves the host copy wholly old or wholly new.
        self._host_weights.update({name: values[var] for name, var in self._lowered.weights.items()})
        step_log.weights("ToHost", list(self._lowered.weights))

    def readWeights(self, weightsIo: PyWeightsIO) -> None:
        """Fill ``weightsIo``'s arrays with the host copy of the weights, or the optimiser state of
        those names (``Accl___w``...)."""
        wanted = weightsIo.weights
        state = self._saved_state() if any(t not in self._host_weights for t in wanted) else {}
        for tensor_id, array in wanted.items():
            found = self._host_weights.get(tensor_id, state.get(tensor_id))
            if found is None:
                raise popart_exception(f"No weight '{tensor_id}' in the session's model")
            array[...] = np.asarray(found).reshape(np.shape(array))

    def writeWeights(self, weightsIo: PyWeightsIO) -> None:
        """Set the host copy of weights from ``weightsIo`` (``weightsFromHost`` sends them)."""
        self._check_writable("writeWeights")
        written = {}
        for tensor_id, array in weightsIo.weights.items():
            if tensor_id not in self._host_weights:
                raise popart_exception(f"No weight '{tensor_id}' in the session's model")
            host = self._host_weights[tensor_id]
            if np.size(array) != host.size:
                raise popart_exception(f"writeWeights: '{tensor_id}' has {host.size} elements "
                                       f"{list(host.shape)}, the array given has {np.size(array)}")
            written[tensor_id] = np.asarray(array, host.dtype).reshape(host.shape).copy()
        # One update once every array is checked: a bad one, or an interrupt, changes none of them.
        self._host_weights.update(written)

    def _check_writable(self, what: str) -> None:
        if self._constant_weights() and self._builder.initializers:
            raise popart_exception(f"Cannot call {what} when constantWeights is set. Set `constantWeights` to False in "
                                   "the `SessionOption`s when initialising the session to enable this behaviour.")

    def modelToHost(self, fn: str) -> None:
        """Write the model, with the weights' current values, to the ONNX file ``fn``; weights stored in
        external data files are rewritten there (their optimiser state added beside them)."""
        if self._runtime is None:
            raise popart_exception("Devicex::prepare() must be called before Devicex::weightsToHost(const "
                                   "std::map<TensorId, MutableVoidData> &) is called.")
        if self._runtime is not None and self._runtime.is_attached and self._lowered.weights:
            self.weightsToHost()
        state = self._saved_state()
        values = {**self._host_weights, **state}
        written = external_weights.write_external(values, self._external, set(state))
        model = onnx.ModelProto()
        model.CopyFrom(self._model)
        replace_initializers(model, {name: value for name, value in values.items() if name not in written})
        external_weights.refer(model, written, values)
        onnx.save(model, fn)
        step_log.model_to_host(fn)

    def updateExternallySavedTensorLocations(self, fromLocation: str, toLocation: str) -> None:
        """Copy the external data file ``fromLocation`` to ``toLocation``; later ``modelToHost`` calls
        write the tensors stored there to the new file."""
        external_weights.relocate(self._external, str(fromLocation), str(toLocation))

    def _saved_state(self) -> dict:
        """Tensors ``modelToHost`` saves beside the weights (a training session's optimiser state)."""
        return {}

    def resetHostWeights(self, modelProtoOrFilename: Union[bytes, str],
                         ignoreWeightsInModelWithoutCorrespondingHostWeight: bool = False) -> None:
        """Replace the host weights by the initializers of another model (``weightsFromHost`` sends them)."""
        self._check_writable("resetHostWeights")
        try:
            model = load_model(modelProtoOrFilename)
            replaced = {}
            for init in model.graph.initializer:
                if init.name not in self._host_weights:
                    if ignoreWeightsInModelWithoutCorrespondingHostWeight:
                        continue
                    raise popart_exception(f"resetWeights, no tensor '{init.name}' in tensors")
                replaced[init.name] = to_array(init).copy()
        except (ValueError, FileNotFoundError, TypeError) as error:
            raise popart_exception(str(error)) from None
        self._host_weights.update(replaced)  # all of them or, on an error or an interrupt, none
