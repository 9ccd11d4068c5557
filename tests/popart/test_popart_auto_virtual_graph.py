"""``VirtualGraphMode.Auto`` splits a model's weight bytes over the IPUs at points where the model can be
cut, and says so when it cannot find enough such points."""
import json

import numpy as np
import pytest

import popart


def chain(widths):
    """x @ w1 @ w2 ...; w_i is widths[i-1] x widths[i] (float32), so its bytes grow with the widths."""
    rng = np.random.default_rng(0)
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, widths[0]]), "x")
    weights, out = [], x
    for index, (rows, cols) in enumerate(zip(widths, widths[1:])):
        value = rng.standard_normal((rows, cols)).astype(np.float32)
        weights.append(value)
        out = builder.aiOnnx.matmul([out, builder.addInitializedInputTensor(value, f"W{index}")])
    return builder.getModelProto(), x, out, weights


def auto_session(proto, out, ipus, ratios=()):
    options = popart.SessionOptions()
    options.virtualGraphMode = popart.VirtualGraphMode.Auto
    if ratios:
        options.virtualGraphSplitRatios = list(ratios)
    return popart.InferenceSession(proto, popart.DataFlow(1, [out]),
                                   popart.DeviceManager().createIpuModelDevice({"numIPUs": ipus}), userOptions=options)


def ipu_of_weights(session):
    ops = json.loads(session._serializeIr(popart.IrSerializationFormat.JSON))["maingraph"]
    return {i["name"]: op["attributes"]["__ipu_number"] for op in ops for i in op["inputs"] if i["name"].startswith("W")}


def test_the_weight_bytes_are_split_evenly_at_the_nearest_cut():
    # weights of 8x8, 8x8 and 8x16 floats: 256, 256 and 512 bytes; half of 1024 is after the second
    proto, x, out, weights = chain([8, 8, 8, 16])
    session = auto_session(proto, out, 2)
    assert ipu_of_weights(session) == {"W0": 0, "W1": 0, "W2": 1}
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    data = np.ones((1, 8), np.float32)
    session.run(popart.PyStepIO({x: data}, anchors))
    np.testing.assert_allclose(anchors[out], data @ weights[0] @ weights[1] @ weights[2], rtol=1e-5)


def test_split_ratios_move_the_cuts():
    proto, _, out, _ = chain([8, 8, 8, 8, 8])  # four weights of equal bytes
    assert ipu_of_weights(auto_session(proto, out, 2)) == {"W0": 0, "W1": 0, "W2": 1, "W3": 1}
    assert ipu_of_weights(auto_session(proto, out, 2, [0.75, 0.25])) == {"W0": 0, "W1": 0, "W2": 0, "W3": 1}


def test_a_model_with_fewer_cuts_than_ipus_is_refused():
    proto, _, out, _ = chain([8, 8, 8])
    with pytest.raises(popart.popart_exception) as error:
        auto_session(proto, out, 4)
    assert error.value.args[0].startswith("[AutoVirtualGraph] Couldn't find enough splits for 4 IPUs")
