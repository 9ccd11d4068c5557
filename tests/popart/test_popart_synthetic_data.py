"""``syntheticDataMode``: the device reads zeros (or normal or uniform draws) instead of the host's
inputs, and nothing comes back to the anchor arrays."""
import numpy as np
import pytest

import popart


def run(mode):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [3]))
    y = builder.aiOnnx.add([x, builder.aiOnnx.constant(np.ones(3, np.float32))])
    w = builder.addInitializedInputTensor(np.zeros(3, np.float32), "w")
    z = builder.aiOnnx.add([y, w])
    options = popart.SessionOptions()
    options.syntheticDataMode = mode
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [z]),
                                      popart.DeviceManager().createIpuModelDevice({}), userOptions=options)
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    anchors[z][...] = -7.0
    session.run(popart.PyStepIO({x: np.full(3, 5.0, np.float32)}, anchors))
    return anchors[z], session


def test_real_data_by_default():
    out, _ = run(popart.SyntheticDataMode.Off)
    np.testing.assert_allclose(out, [6.0, 6.0, 6.0])


@pytest.mark.parametrize("mode", [popart.SyntheticDataMode.Zeros, popart.SyntheticDataMode.RandomNormal,
                                  popart.SyntheticDataMode.RandomUniform])
def test_synthetic_data_leaves_the_host_out(mode):
    out, _ = run(mode)
    np.testing.assert_array_equal(out, [-7.0, -7.0, -7.0])  # the anchor array is not written


def test_the_synthetic_inputs_have_the_shape_and_type_of_the_real_ones():
    from workbench.popart.session import synthetic_inputs

    real = {"a": np.full((2, 3), 5.0, np.float16), "b": np.arange(4, dtype=np.int32)}
    zeros = synthetic_inputs(real, popart.SyntheticDataMode.Zeros)
    assert all(not v.any() and v.dtype == real[k].dtype and v.shape == real[k].shape for k, v in zeros.items())
    uniform = synthetic_inputs(real, popart.SyntheticDataMode.RandomUniform)
    assert uniform["a"].dtype == np.float16 and np.all(np.abs(uniform["a"]) <= 1)
    normal = synthetic_inputs(real, popart.SyntheticDataMode.RandomNormal)
    np.testing.assert_array_equal(normal["a"], synthetic_inputs(real, popart.SyntheticDataMode.RandomNormal)["a"])
    assert not np.array_equal(normal["a"], real["a"])
