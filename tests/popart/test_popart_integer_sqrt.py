"""Sqrt of an INT32 or UINT32 tensor builds and runs, giving each element's root truncated to an
integer, as the IPU's integer square root does."""
import numpy as np
import pytest

import popart


@pytest.mark.parametrize("type_name, np_type", [("INT32", np.int32), ("UINT32", np.uint32)])
def test_integer_sqrt_truncates_the_root(type_name, np_type):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo(type_name, [6]))
    out = builder.aiOnnx.sqrt([x])
    session = popart.InferenceSession(
        fnModel=builder.getModelProto(), dataFlow=popart.DataFlow(1, {out: popart.AnchorReturnType("All")}),
        deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    values = np.array([0, 1, 4, 8, 99, 1000000], np_type)
    session.run(popart.PyStepIO({x: values}, anchors))
    assert anchors[out].dtype == np_type
    np.testing.assert_array_equal(anchors[out], np.floor(np.sqrt(values)).astype(np_type))
