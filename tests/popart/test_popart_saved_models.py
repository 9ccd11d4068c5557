"""Saved models as PopART writes them: initializers in the TensorProto's typed fields, and the
optimiser state beside the weights so that a reloaded model resumes training exactly."""
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import popart
from popart_training_oracle import data, mlp


@pytest.mark.parametrize("dtype, field", [(np.float32, "float_data"), (np.int32, "int32_data"),
                                          (np.int64, "int64_data"), (np.float16, "int32_data"),  # two halves an entry
                                          (np.uint8, "int32_data"), (np.bool_, "int32_data")])
def test_builder_initializers_are_stored_in_typed_fields(dtype, field):
    builder = popart.Builder()
    value = (np.arange(6).reshape(2, 3) % 2 if dtype is np.bool_ else np.arange(6).reshape(2, 3) - 1).astype(dtype)
    builder.addInitializedInputTensor(value, "w")
    init = onnx.load_from_string(builder.getModelProto()).graph.initializer[0]
    assert not init.HasField("raw_data") and len(getattr(init, field)) == (3 if dtype is np.float16 else 6)
    if dtype is np.float16:  # as PopART scripts read them
        np.testing.assert_array_equal(np.asarray(init.int32_data, np.int32).view(np.float16).reshape(2, 3), value)
    else:
        np.testing.assert_array_equal(numpy_helper.to_array(init), value)


def test_float16_weights_saved_packed_load_back():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT16", [3]))
    w = builder.addInitializedInputTensor(np.array([0.5, -1.5, 2.25], np.float16), "w")
    y = builder.aiOnnx.mul([x, w])
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.ones(3, np.float16)}, anchors))
    np.testing.assert_array_equal(anchors[y], [0.5, -1.5, 2.25])


def momentum_session(proto, accumulation=2):
    loss = (onnx.load_from_string(proto) if isinstance(proto, bytes) else onnx.load(proto)).graph.output[0].name
    options = popart.SessionOptions()
    options.enableGradientAccumulation = True
    options.accumulationFactor = accumulation
    training = popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, {}), loss=loss,
                                      optimizer=popart.SGD({"defaultLearningRate": (0.1, False),
                                                            "defaultMomentum": (0.9, True)}),
                                      userOptions=options,
                                      deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 1}))
    training.prepareDevice()
    training.weightsFromHost()
    return training


def model_with_loss():
    model = mlp()
    builder = popart.Builder(model.proto)
    loss = builder.aiGraphcore.nllloss([model.probs, model.label], popart.ReductionType.Sum)
    builder.addOutputTensor(loss)
    return model, builder.getModelProto()


def step(training, model, xs, labels):
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, training.initAnchorArrays()))


def saved(path) -> dict:
    return {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}


def test_model_to_host_saves_the_velocities_and_a_reloaded_model_resumes_exactly(tmp_path):
    model, proto = model_with_loss()
    xs, labels = data(model, 4)
    straight = momentum_session(proto)
    step(straight, model, xs[:2], labels[:2])
    step(straight, model, xs[2:], labels[2:])
    straight.modelToHost(str(tmp_path / "straight.onnx"))

    first = momentum_session(proto)
    step(first, model, xs[:2], labels[:2])
    first.modelToHost(str(tmp_path / "half.onnx"))
    half = saved(tmp_path / "half.onnx")
    assert {"Accl___w1", "Accl___b1", "Accl___w2", "Accl___b2"} <= set(half)
    assert not any(name.startswith("Accum___") for name in half)  # momentum accumulates into Accl___
    assert np.abs(half["Accl___w1"]).sum() > 0
    stored = [i for i in onnx.load(tmp_path / "half.onnx").graph.initializer if i.name == "Accl___w1"][0]
    assert len(stored.float_data) == half["Accl___w1"].size

    resumed = momentum_session(str(tmp_path / "half.onnx"))
    step(resumed, model, xs[2:], labels[2:])
    resumed.modelToHost(str(tmp_path / "resumed.onnx"))
    expected = saved(tmp_path / "straight.onnx")
    for name, value in saved(tmp_path / "resumed.onnx").items():
        np.testing.assert_array_equal(value, expected[name])


def test_adam_saves_its_moments_step_and_accumulators(tmp_path):
    model, proto = model_with_loss()
    options = popart.SessionOptions()
    options.enableGradientAccumulation = True
    options.accumulationFactor = 2
    loss = onnx.load_from_string(proto).graph.output[0].name
    training = popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, {}), loss=loss,
                                      optimizer=popart.Adam({"defaultLearningRate": (0.01, False)}),
                                      userOptions=options,
                                      deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 1}))
    training.prepareDevice()
    training.weightsFromHost()
    xs, labels = data(model, 2)
    step(training, model, xs, labels)
    training.modelToHost(str(tmp_path / "adam.onnx"))
    names = set(saved(tmp_path / "adam.onnx"))
    for prefix in (popart.reservedAccl1Prefix(), popart.reservedAccl2Prefix(), popart.reservedAccumPrefix(),
                   popart.reservedStepPrefix()):
        assert prefix + "w1" in names


def test_sessions_check_accumulation_weights_and_preparation():
    model, proto = model_with_loss()
    loss = onnx.load_from_string(proto).graph.output[0].name
    options = popart.SessionOptions()
    options.accumulationFactor = 4
    with pytest.raises(popart.popart_exception,
                       match="^enableGradientAccumulation is false, but accumulationFactor > 1"):
        popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, {}), loss=loss,
                               optimizer=popart.ConstSGD(0.1), userOptions=options,
                               deviceInfo=popart.DeviceManager().createCpuDevice())
    options.enableGradientAccumulation = True
    with pytest.raises(popart.popart_exception, match="^Gradient Accumulation only available when training"):
        popart.InferenceSession(fnModel=proto, dataFlow=popart.DataFlow(1, [model.probs]), userOptions=options,
                                deviceInfo=popart.DeviceManager().createCpuDevice())
    training = popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, {}), loss=loss,
                                      optimizer=popart.ConstSGD(0.1),
                                      deviceInfo=popart.DeviceManager().createCpuDevice())
    with pytest.raises(popart.popart_exception, match="^Devicex::prepare\\(\\) must be called before"):
        training.modelToHost("never.onnx")
    training.prepareDevice()
    xs, labels = data(model, 1)
    with pytest.raises(popart.popart_exception, match="^Must call weightsFromHost before run"):
        step(training, model, xs[0], labels[0])


def test_a_model_without_weights_trains_nothing_but_runs():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.add([x, builder.aiOnnx.constant(np.array([1.0, 2.0], np.float32))])
    loss = builder.aiGraphcore.identityloss([y])
    training = popart.TrainingSession(fnModel=builder.getModelProto(), dataFlow=popart.DataFlow(1, [y]), loss=loss,
                                      optimizer=popart.ConstSGD(0.1),
                                      deviceInfo=popart.DeviceManager().createCpuDevice())
    training.prepareDevice()
    anchors = training.initAnchorArrays()
    training.run(popart.PyStepIO({x: np.array([3.0, 4.0], np.float32)}, anchors))
    np.testing.assert_array_equal(anchors[y], [4.0, 6.0])


def test_adam_step_counter_of_a_float16_weight_is_saved_as_float32(tmp_path):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT16", [2]))
    w = builder.addInitializedInputTensor(np.array([1.0, 2.0], np.float16), "w")
    loss = builder.aiGraphcore.identityloss([builder.aiOnnx.mul([x, w])], popart.ReductionType.Sum)
    training = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, {}), loss,
                                      popart.Adam({"defaultLearningRate": (0.01, False)}),
                                      popart.DeviceManager().createCpuDevice())
    training.prepareDevice()
    training.weightsFromHost()
    for _ in range(3):
        training.run(popart.PyStepIO({x: np.ones(2, np.float16)}, {}))
    training.modelToHost(str(tmp_path / "adam16.onnx"))
    step = [i for i in onnx.load(tmp_path / "adam16.onnx").graph.initializer if i.name == "Step___w"][0]
    assert step.data_type == onnx.TensorProto.FLOAT and list(step.float_data) == [3.0]
    moment = [i for i in onnx.load(tmp_path / "adam16.onnx").graph.initializer if i.name == "Accl1___w"][0]
    assert moment.data_type == onnx.TensorProto.FLOAT16 and len(moment.int32_data) == 1  # two halves packed
