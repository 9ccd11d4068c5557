"""Run one Builder model here and in onnxruntime, on the same inputs."""
from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

import popart


def run_here(proto: bytes, outputs: list, inputs: dict, *, batches: int = 1, options=None, device=None) -> dict:
    flow = popart.DataFlow(batches, {o: popart.AnchorReturnType("ALL") for o in outputs})
    session = popart.InferenceSession(proto, flow, device or popart.DeviceManager().createIpuModelDevice({}),
                                      userOptions=options)
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO(inputs, anchors))
    return anchors


def run_onnxruntime(proto: bytes, outputs: list, inputs: dict) -> dict:
    try:
        session = onnxruntime.InferenceSession(proto, providers=["CPUExecutionProvider"])
        values = session.run(outputs, inputs)
    except Exception as error:  # an op or a dtype the oracle has no kernel for
        if "NOT_IMPLEMENTED" in str(error) or "Could not find an implementation" in str(error):
            pytest.skip(f"onnxruntime has no kernel: {str(error)[:120]}")
        raise
    return dict(zip(outputs, values))


def tolerance(dtype) -> dict:
    return {"rtol": 1e-2, "atol": 1e-2} if np.dtype(dtype) == np.float16 else {"rtol": 1e-5, "atol": 1e-5}
