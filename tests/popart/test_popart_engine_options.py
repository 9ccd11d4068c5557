"""Poplar's engine options (``SessionOptions.engineOptions``): a name outside Poplar's families of options is
refused when the device is prepared, as Poplar refuses it; Poplar's own names are taken."""
import numpy as np
import pytest

import popart


def inference(engine_options: dict):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "x")
    y = builder.aiOnnx.relu([x])
    options = popart.SessionOptions()
    options.engineOptions = engine_options
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]), userOptions=options,
                                      deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
    return session, x, y


def test_an_unknown_engine_option_is_refused_by_prepare_device_as_poplar_refuses_it():
    session, _, _ = inference({"debug.instrument": "true", "retainDebugInfo": "true"})
    with pytest.raises(popart.poplar_exception) as error:
        session.prepareDevice()
    assert error.value.args[0].endswith("Unrecognised option 'retainDebugInfo'")
    assert "autoReport., debug., opt." in error.value.args[0]


def test_poplar_engine_options_are_taken():
    session, x, y = inference({"debug.retainDebugInformation": "true", "autoReport.all": "false",
                               "opt.enableInlining": "false", "target.deterministicWorkers": "true"})
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.array([-1.0, 2.0], np.float32)}, anchors))
    np.testing.assert_array_equal(anchors[y], [0.0, 2.0])
