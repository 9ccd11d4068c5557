"""With manual virtual graphs a model's ops are all placed on IPUs or none is: a mix is refused when
the session is made, naming the counts per IPU, as PopART's IR check does."""
import numpy as np
import pytest

import popart


def session(place_last: bool):
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]))
    b = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]))
    with builder.virtualGraph(0):
        first = builder.aiOnnx.add([a, b])
    with builder.virtualGraph(1):
        second = builder.aiOnnx.mul([a, b])
    if place_last:
        with builder.virtualGraph(1):
            out = builder.aiOnnx.add([first, second])
    else:
        out = builder.aiOnnx.add([first, second])
    options = popart.SessionOptions()
    options.virtualGraphMode = popart.VirtualGraphMode.Manual
    made = popart.InferenceSession(fnModel=builder.getModelProto(), userOptions=options,
                                   dataFlow=popart.DataFlow(1, {out: popart.AnchorReturnType("All")}),
                                   deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}))
    return made, a, b, out


def test_a_mix_of_placed_and_unplaced_ops_is_refused():
    with pytest.raises(popart.popart_exception, match="^Either all Ops must have their virtual graph ids set") as error:
        session(place_last=False)
    assert "  0 : 1\n  1 : 1\n" in str(error.value)


def test_every_op_placed_runs():
    placed, a, b, out = session(place_last=True)
    placed.prepareDevice()
    anchors = placed.initAnchorArrays()
    placed.run(popart.PyStepIO({a: np.array([2.0], np.float32), b: np.array([3.0], np.float32)}, anchors))
    np.testing.assert_allclose(anchors[out], [2.0 + 3.0 + 2.0 * 3.0])
