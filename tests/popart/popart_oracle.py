"""Run one Builder model here and in onnxruntime, on the same inputs."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import numpy_helper

import popart
from workbench.onnx.tensor_storage import to_array


def run_here(proto: bytes, outputs: list, inputs: dict, *, batches: int = 1, options=None, device=None) -> dict:
    flow = popart.DataFlow(batches, {o: popart.AnchorReturnType("ALL") for o in outputs})
    session = popart.InferenceSession(proto, flow, device or popart.DeviceManager().createIpuModelDevice({}),
                                      userOptions=options)
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO(inputs, anchors))
    return anchors


def onnx_standard(proto: bytes) -> bytes:
    """The model in the form onnxruntime reads: float16 initializers one per ``int32_data`` entry (ONNX's
    form) instead of two per entry (PopART's, which the Builder writes), and without the attributes
    PopART's builder writes into nodes (``__debug_info_id``, ``__ipu_number``...), which onnxruntime
    takes for values (a Constant's) or copies into fused nodes that then refuse them."""
    model = onnx.load_from_string(proto)
    for init in model.graph.initializer:
        if init.data_type == onnx.TensorProto.FLOAT16:
            init.CopyFrom(numpy_helper.from_array(to_array(init), init.name))
    _drop_popart_attributes(model.graph)
    return model.SerializeToString()


def _drop_popart_attributes(graph: onnx.GraphProto) -> None:
    for node in graph.node:
        kept = [a for a in node.attribute if not a.name.startswith("__")]
        del node.attribute[:]
        node.attribute.extend(kept)
        for attribute in kept:
            for subgraph in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                _drop_popart_attributes(subgraph)


def run_onnxruntime(proto: bytes, outputs: list, inputs: dict) -> dict:
    try:
        session = onnxruntime.InferenceSession(onnx_standard(proto), providers=["CPUExecutionProvider"])
        values = session.run(outputs, inputs)
    except Exception as error:  # an op or a dtype the oracle has no kernel for
        if "NOT_IMPLEMENTED" in str(error) or "Could not find an implementation" in str(error):
            pytest.skip(f"onnxruntime has no kernel: {str(error)[:120]}")
        raise
    return dict(zip(outputs, values))


def tolerance(dtype) -> dict:
    return {"rtol": 1e-2, "atol": 1e-2} if np.dtype(dtype) == np.float16 else {"rtol": 1e-5, "atol": 1e-5}
