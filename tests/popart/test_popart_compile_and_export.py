"""``compileAndExport``: a device that compiles offline saves the executable (into ``executable.popef``
when given a folder, making missing parent folders); an IPU model cannot save one."""
import os

import numpy as np
import onnx
import pytest

import popart


def session(device):
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    out = builder.aiOnnx.add([a, a])
    return popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [out]), device), a, out


def test_an_ipu_model_cannot_save_an_executable(tmp_path):
    model, _, _ = session(popart.DeviceManager().createIpuModelDevice({}))
    with pytest.raises(popart.popart_exception, match="Executables for device type ipu-model cannot be saved"):
        model.compileAndExport(str(tmp_path))


def test_an_offline_ipu_saves_into_a_folder_or_a_new_file(tmp_path):
    offline, _, _ = session(popart.DeviceManager().createOfflineIPUDevice({}))
    offline.compileAndExport(str(tmp_path))
    assert os.listdir(tmp_path) == ["executable.popef"]
    target = tmp_path / "made" / "model.popart"
    offline.compileAndExport(str(target))
    # the saved program runs again from the file
    _, a, out = session(popart.DeviceManager().createIpuModelDevice({}))
    saved = onnx.load(str(target))
    again = popart.InferenceSession(saved.SerializeToString(), popart.DataFlow(1, [out]),
                                    popart.DeviceManager().createIpuModelDevice({}))
    again.prepareDevice()
    anchors = again.initAnchorArrays()
    again.run(popart.PyStepIO({a: np.array([1.0, 2.0], np.float32)}, anchors))
    np.testing.assert_allclose(anchors[out], [2.0, 4.0])
