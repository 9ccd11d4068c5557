"""An IPU model of a few tiles has that many tiles' memory: a small model trains on 4 tiles (its code
is on 4 tiles, not on a whole IPU's), and weights larger than 4 tiles' memory still do not fit."""
import numpy as np
import pytest

import popart
from workbench.analysis.code_size import CODE_BYTES, FULL_IPU_TILES, op_code_bytes

TILE_BYTES = 624 * 1024


def conv_training_session(tiles: int) -> tuple[popart.TrainingSession, str]:
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 2, 4, 4]))
    w0 = np.full((2, 2, 3, 3), 0.1, np.float32)
    h = builder.aiOnnx.conv([x, builder.addInitializedInputTensor(w0)], pads=[1, 1, 1, 1])
    h = builder.aiOnnx.conv([h, builder.addInitializedInputTensor(w0.copy())], pads=[1, 1, 1, 1])
    loss = builder.aiGraphcore.l1loss([h], 0.1)
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": tiles})
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, {loss: popart.AnchorReturnType("All")}),
                                     loss, popart.ConstSGD(0.1), device)
    return session, x


def test_a_two_conv_training_step_fits_an_ipu_model_of_four_tiles():
    session, x = conv_training_session(4)
    session.prepareDevice()  # raised OutOfMemoryException: every conv's code was a whole IPU's
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.ones((1, 2, 4, 4), np.float32)}, anchors))
    loss = next(iter(anchors.values()))
    # conv of ones with 0.1 weights, twice: the L1 loss is positive and finite
    assert np.isfinite(loss).all() and float(loss) > 0


def test_code_scales_with_the_tiles_of_the_ipu():
    conv = CODE_BYTES["conv"]

    class Conv:
        type = "conv"
        attrs: dict = {}
        meta: dict = {}

    assert op_code_bytes(Conv(), FULL_IPU_TILES) == conv  # type: ignore[arg-type]
    assert op_code_bytes(Conv(), 4) == -(-conv * 4 // FULL_IPU_TILES)  # type: ignore[arg-type]


@pytest.mark.parametrize("tiles,fits", [(4, False), (64, True)])
def test_weights_larger_than_the_tiles_memory_do_not_fit(tiles, fits):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 1024]))
    # 1024 x 1024 float32 = 4 MiB of weights: more than 4 tiles hold (2.4 MiB), less than 64 do
    w = builder.addInitializedInputTensor(np.zeros((1024, 1024), np.float32))
    y = builder.aiOnnx.matmul([x, w])
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1, "tilesPerIPU": tiles})
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]), device)
    if fits:
        session.prepareDevice()
        return
    with pytest.raises(popart.OutOfMemoryException, match="Cannot fit all variable data"):
        session.prepareDevice()
    assert 4 * 1024 * 1024 > tiles * TILE_BYTES
