"""``InferenceSession.fromIr(ir, deviceInfo)``: a session over a popxl Ir seen through ``ir._pb_ir``,
its anchors those the Ir's ``setDataFlow`` named (device-to-host stream ids), its inputs fed by
host-to-device stream id. Each run runs the main graph once per batch of the step."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from workbench.runtime.session import Session as RuntimeSession

from .dataflow import DataFlow
from .devices import DeviceInfo
from .errors import popart_exception


class IrSession:
    """The PopART session calls a popxl Ir needs: prepareDevice, weightsFromHost/ToHost,
    initAnchorArrays and run."""

    def __init__(self, ir, deviceInfo: DeviceInfo):
        self._ir = ir._ir
        data_flow = getattr(self._ir, "_popart_data_flow", None)
        self._data_flow: DataFlow = data_flow if data_flow is not None else DataFlow(1, {})
        self._device_info = deviceInfo
        self._runtime: Optional[RuntimeSession] = None
        self._inputs = {s.tensor_id: s for s in self._ir.get_all_h2d_streams()}
        self._outputs = {s.tensor_id: s for s in self._ir.get_all_d2h_streams()}
        missing = [a for a in self._data_flow.anchors() if a not in self._outputs]
        if missing:
            raise popart_exception(f"Anchor tensor `{missing[0]}' not in Ir Tensors: the Ir's device-to-host "
                                   f"streams are {sorted(self._outputs)}")

    def prepareDevice(self, loadEngine: bool = True) -> None:
        if self._runtime is None:
            try:
                device: Any = self._device_info.workbench_device()  # the runtime takes a Device or its name
                self._runtime = RuntimeSession(self._ir, device)
            except ValueError as error:
                raise popart_exception(str(error)) from None
            self._runtime.progress = False
        if loadEngine:
            self.loadEngineAndConnectStreams()

    def loadEngineAndConnectStreams(self) -> None:
        runtime = self._require_prepared("loadEngineAndConnectStreams")
        if not runtime.is_attached:
            runtime.__enter__()

    def detach(self) -> None:
        if self._runtime is not None and self._runtime.is_attached:
            self._runtime.__exit__(None, None, None)

    def weightsFromHost(self) -> None:
        self._require_prepared("weightsFromHost").weights_from_host()

    def weightsToHost(self) -> None:
        self._require_prepared("weightsToHost").weights_to_host()

    def initAnchorArrays(self) -> dict[str, np.ndarray]:
        batches = self._data_flow.batchesPerStep()
        arrays = {}
        for anchor in self._data_flow.anchors():
            stream = self._outputs[anchor]
            shape = (batches, *stream.shape) if batches > 1 else tuple(stream.shape)
            arrays[anchor] = np.zeros(shape, stream.dtype.as_numpy())
        return arrays

    def run(self, stepio, debugName: str = "") -> None:
        runtime = self._require_prepared("run")
        batches = self._data_flow.batchesPerStep()
        for batch in range(batches):
            feeds = {}
            for tensor_id, stream in self._inputs.items():
                if tensor_id not in stepio.inputs:
                    raise popart_exception(f"No input data for the stream '{tensor_id}' in the stepio")
                data = np.asarray(stepio.inputs[tensor_id])
                feeds[stream] = data[batch] if batches > 1 else data
            results = runtime.run(feeds)
            for anchor in self._data_flow.anchors():
                target = stepio.outputs[anchor]
                if batches > 1:
                    target[batch] = results[self._outputs[anchor]]
                else:
                    target[...] = results[self._outputs[anchor]]

    def _require_prepared(self, what: str) -> RuntimeSession:
        if self._runtime is None:
            raise popart_exception(f"{what}: call prepareDevice() first")
        if what != "loadEngineAndConnectStreams" and not self._runtime.is_attached:
            self.loadEngineAndConnectStreams()
        return self._runtime
