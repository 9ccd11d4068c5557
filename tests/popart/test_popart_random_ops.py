"""ONNX's RandomUniform, RandomNormal (and -Like) draw anew each time they run, repeat from one
session to the next, and follow their attributes; a Dropout in a training session drops with a mask
of its own each run, the gradient going through the same mask."""
import numpy as np

import popart


def run(builder, outputs, inputs=None, batches=1):
    session = popart.InferenceSession(
        fnModel=builder.getModelProto(),
        dataFlow=popart.DataFlow(batches, {o: popart.AnchorReturnType("All") for o in outputs}),
        deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO(inputs or {}, anchors))
    return anchors


def uniform_model(**attributes):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]))
    r = builder.aiOnnx.randomuniform(shape=[1000], **attributes)
    return builder, x, builder.aiOnnx.add([r, x])


def test_uniform_values_lie_in_their_range_and_change_every_step():
    builder, x, out = uniform_model(low=2.0, high=3.0)
    values = run(builder, [out], {x: np.zeros([3, 1], np.float32)}, batches=3)[out]
    assert values.shape == (3, 1000) and values.dtype == np.float32
    assert values.min() >= 2.0 and values.max() < 3.0
    assert abs(values.mean() - 2.5) < 0.05
    assert not np.array_equal(values[0], values[1]) and not np.array_equal(values[1], values[2])


def test_a_session_repeats_the_values_of_the_last():
    builder, x, out = uniform_model()
    once = run(builder, [out], {x: np.zeros(1, np.float32)})[out]
    again = run(builder, [out], {x: np.zeros(1, np.float32)})[out]
    np.testing.assert_array_equal(once, again)


def test_normal_values_have_their_mean_and_scale():
    builder = popart.Builder()
    out = builder.aiOnnx.randomnormal(shape=[20000], mean=1.0, scale=2.0)
    values = run(builder, [out])[out]
    assert abs(values.mean() - 1.0) < 0.05 and abs(values.std() - 2.0) < 0.05


def test_the_like_forms_take_the_shape_and_type_of_their_input():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT16", [3, 4]))
    u = builder.aiOnnx.randomuniformlike([x])
    n = builder.aiOnnx.randomnormallike([x])
    anchors = run(builder, [u, n], {x: np.zeros([3, 4], np.float16)})
    assert anchors[u].shape == (3, 4) and anchors[u].dtype == np.float16
    assert anchors[n].shape == (3, 4) and anchors[n].dtype == np.float16


def test_a_dropout_in_a_training_session_masks_anew_each_step_and_its_gradient_alike():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [200]))
    dropped = builder.aiOnnx.dropout([x], 1, 0.25)[0]
    loss = builder.aiGraphcore.identityloss([dropped], reduction=popart.ReductionType.Sum)
    grad = popart.reservedGradientPrefix() + x
    session = popart.TrainingSession(
        fnModel=builder.getModelProto(), loss=loss, optimizer=popart.ConstSGD(0.1),
        dataFlow=popart.DataFlow(2, {dropped: popart.AnchorReturnType("All"), grad: popart.AnchorReturnType("All")}),
        deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.ones([2, 200], np.float32)}, anchors))
    kept = anchors[dropped] != 0
    assert set(np.unique(anchors[dropped])) <= {0.0, np.float32(1 / 0.75)}
    assert not np.array_equal(kept[0], kept[1])
    assert 0.6 < kept.mean() < 0.9
    np.testing.assert_array_equal(anchors[grad] != 0, kept)


def test_two_calls_of_one_subgraph_draw_apart():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [50]))
    body = builder.createSubgraphBuilder()
    inner = body.addInputTensor(popart.TensorInfo("FLOAT", [50]))
    body.addOutputTensor(body.aiOnnx.add([inner, body.aiOnnx.randomuniform(shape=[50])]))
    first = builder.aiGraphcore.call([x], 1, body)[0]
    second = builder.aiGraphcore.call([x], 1, body)[0]
    anchors = run(builder, [first, second], {x: np.zeros(50, np.float32)})
    assert not np.array_equal(anchors[first], anchors[second])
