"""Virtual graph ids as PopART reports them: the IR's JSON names each op's IPU when virtual graphs are
on, and compiling an op placed beyond the device's IPUs stops, naming the op and its copied inputs."""
import json

import numpy as np
import pytest

import popart


def two_adds(last_ipu: int):
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    b = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    with builder.virtualGraph(0):
        s = builder.aiOnnx.add([a, b])
    with builder.virtualGraph(last_ipu):
        t = builder.aiOnnx.mul([s, b])
    return builder.getModelProto(), a, b, s, t


def session(last_ipu: int, mode=popart.VirtualGraphMode.Manual, ipus: int = 2):
    proto, a, b, s, t = two_adds(last_ipu)
    options = popart.SessionOptions()
    options.virtualGraphMode = mode
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": ipus})
    return popart.InferenceSession(proto, popart.DataFlow(1, [t]), device, userOptions=options), (a, b, s, t)


def test_the_json_names_the_ipu_of_every_op_with_virtual_graphs_on():
    manual, (_, _, s, t) = session(1)
    ops = json.loads(manual._serializeIr(popart.IrSerializationFormat.JSON))["maingraph"]
    ipu_of = {output["name"]: op["attributes"]["__ipu_number"] for op in ops for output in op["outputs"]}
    assert ipu_of[s] == 0 and ipu_of[t] == 1
    off, _ = session(1, popart.VirtualGraphMode.Off)
    ops = json.loads(off._serializeIr(popart.IrSerializationFormat.JSON))["maingraph"]
    assert all("__ipu_number" not in op["attributes"] for op in ops)


def test_an_op_beyond_the_devices_ipus_stops_the_compile():
    beyond, (_, b, s, t) = session(5, ipus=2)
    with pytest.raises(popart.popart_exception) as error:
        beyond.prepareDevice()
    assert f"inputs=[{s}_c5, {b}_c5], outputs=[{t}]) has been assigned to an invalid virtual graph 5. " \
           "numIPUs = 2." in str(error.value)
    fits, (a, b, _, t) = session(1, ipus=2)
    fits.prepareDevice()
    anchors = fits.initAnchorArrays()
    fits.run(popart.PyStepIO({a: np.ones(2, np.float32), b: np.full(2, 3.0, np.float32)}, anchors))
    np.testing.assert_allclose(anchors[t], [12.0, 12.0])
