"""With POPLIBS_LOG_LEVEL=DEBUG, compiling writes Poplibs' planning lines: each convolution (its
gradients too) and matrix product with its per-tile memory budget and options, each gather with
its memory proportion; the Builder's settings reach them."""
import re

import numpy as np
import pytest

import popart

TILE_BYTES = 624 * 1024


def train_once(builder, loss):
    session = popart.TrainingSession(
        fnModel=builder.getModelProto(), dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("All")}),
        loss=loss, optimizer=popart.ConstSGD(0.01),
        deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 1}))
    session.prepareDevice()


def conv_model(proportion=None, dithering=None):
    builder = popart.Builder()
    x = builder.addInitializedInputTensor(np.ones([1, 2, 4, 4], np.float32))
    w = builder.addInitializedInputTensor(np.ones([3, 2, 3, 3], np.float32))
    conv = builder.aiOnnx.conv([x, w], pads=[1, 1, 1, 1])
    if proportion is not None:
        builder.setAvailableMemoryProportion(conv, proportion)
    if dithering is not None:
        builder.setEnableConvDithering(conv, dithering)
    return builder, builder.aiGraphcore.identityloss([builder.aiOnnx.relu([conv])])


def test_nothing_is_logged_without_the_log_level(capfd, monkeypatch):
    monkeypatch.delenv("POPLIBS_LOG_LEVEL", raising=False)
    train_once(*conv_model(0.3))
    assert "Planning convolution" not in capfd.readouterr().err


@pytest.mark.parametrize("dithering", [0, 1])
def test_every_convolution_of_training_is_planned_with_the_nodes_settings(capfd, monkeypatch, dithering):
    monkeypatch.setenv("POPLIBS_LOG_LEVEL", "DEBUG")
    train_once(*conv_model(0.3, dithering))
    err = capfd.readouterr().err
    # the forward convolution, the input gradient and the weight gradient
    assert len(re.findall(f"per-tile memory limit of {int(0.3 * TILE_BYTES)} bytes", err)) == 3
    assert len(re.findall(f" +enableConvDithering +{dithering}\n", err)) == 3
    assert not re.findall(f" +enableConvDithering +{1 - dithering}\n", err)


def test_a_matmul_without_settings_gets_the_default_budget(capfd, monkeypatch):
    monkeypatch.setenv("POPLIBS_LOG_LEVEL", "DEBUG")
    builder = popart.Builder()
    a = builder.addInitializedInputTensor(np.ones([2, 4], np.float32))
    b = builder.addInitializedInputTensor(np.ones([4, 8], np.float32))
    train_once(builder, builder.aiGraphcore.identityloss([builder.aiOnnx.matmul([a, b])]))
    assert f"per-tile memory limit of {int(0.6 * TILE_BYTES)} bytes" in capfd.readouterr().err


def test_a_gather_logs_its_memory_proportion(capfd, monkeypatch):
    monkeypatch.setenv("POPLIBS_LOG_LEVEL", "DEBUG")
    builder = popart.Builder()
    table = builder.addInitializedInputTensor(np.ones([4, 3], np.float32))
    index = builder.addInitializedInputTensor(np.array([1, 0], np.int32))
    gathered = builder.aiOnnx.gather([table, index])
    builder.setAvailableMemoryProportion(gathered, 0.2)
    train_once(builder, builder.aiGraphcore.identityloss([gathered]))
    assert "availableMemoryProportion=0.2" in capfd.readouterr().err
