"""With synthetic data the host's input arrays are never read (any type or shape passes), and the
uniform draws of an integer input span its type's range (a boolean's: both values)."""
import numpy as np
import pytest

import popart
from workbench.popart.session import synthetic_inputs


def test_the_hosts_arrays_are_not_checked_with_synthetic_data():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("INT8", [4]))
    y = builder.aiOnnx.cast([x], "FLOAT")
    options = popart.SessionOptions()
    options.syntheticDataMode = popart.SyntheticDataMode.Zeros
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createCpuDevice(), userOptions=options)
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.ones(4)}, anchors))  # float64 data for an INT8 input: never read
    assert anchors[y].shape == (4,)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32])
def test_uniform_integer_draws_span_the_types_range(dtype):
    drawn = synthetic_inputs({"x": np.zeros(20000, dtype)}, popart.SyntheticDataMode.RandomUniform)["x"]
    limits = np.iinfo(dtype)
    assert drawn.dtype == dtype
    middle, span = (float(limits.min) + float(limits.max)) / 2, float(limits.max) - float(limits.min)
    assert abs(drawn.mean() - middle) < 0.02 * span
    assert abs(drawn.std() - span / np.sqrt(12)) < 0.02 * span


def test_uniform_boolean_draws_are_half_true():
    drawn = synthetic_inputs({"x": np.zeros(20000, np.bool_)}, popart.SyntheticDataMode.RandomUniform)["x"]
    assert drawn.dtype == np.bool_ and abs(drawn.mean() - 0.5) < 0.02
