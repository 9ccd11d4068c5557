"""The PopART guide's code listings as our own small programs (torch aside: a model file written by the
Builder stands in for the exported one), each checked against NumPy; the Horovod example on 2 ranks."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import popart

ROOT = Path(__file__).resolve().parents[2]


def exported_classifier(path: Path, batch=4, features=3, classes=5):
    """A softmax classifier saved to ``path`` with one input and the output "output", no labels (as an
    exporter writes it); returns its weight."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [batch, features]), "input")
    weight = np.random.default_rng(0).normal(0, 0.5, (features, classes)).astype(np.float32)
    w = builder.addInitializedInputTensor(weight, "weight")
    probs = builder.aiOnnx.softmax([builder.aiOnnx.matmul([x, w])])
    builder.addOutputTensor(probs)
    model = onnx.load_from_string(builder.getModelProto())
    for value in model.graph.output:
        value.name = "output"
    for node in model.graph.node:
        node.output[:] = ["output" if name == probs else name for name in node.output]
    onnx.save(model, str(path))
    return weight


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_importing_a_model_file_for_inference(tmp_path):
    weight = exported_classifier(tmp_path / "model.onnx")
    data_feed = popart.DataFlow(3, {"output": popart.AnchorReturnType("ALL")})
    session = popart.InferenceSession(str(tmp_path / "model.onnx"), data_feed, popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    data = np.random.default_rng(1).normal(size=(3, 4, 3)).astype(np.float32)
    session.run(popart.PyStepIO({"input": data}, anchors))
    np.testing.assert_allclose(anchors["output"], softmax(data @ weight), rtol=1e-5)


def test_training_with_the_legacy_loss_form_and_labels_known_from_input_shape_info(tmp_path):
    weight = exported_classifier(tmp_path / "model.onnx")
    input_shape_info = popart.InputShapeInfo()
    input_shape_info.add("labels", popart.TensorInfo("INT32", [4]))
    data_feed = popart.DataFlow(1, {"output": popart.AnchorReturnType("ALL")})
    session = popart.TrainingSession(str(tmp_path / "model.onnx"), dataFeed=data_feed,
                                     losses=[popart.NllLoss("output", "labels", "loss")],
                                     optimizer=popart.ConstSGD(0.001),
                                     deviceInfo=popart.DeviceManager().createCpuDevice(),
                                     inputShapeInfo=input_shape_info)
    session.prepareDevice()
    session.weightsFromHost()
    data = np.random.default_rng(2).normal(size=(4, 3)).astype(np.float32)
    labels = np.array([0, 1, 4, 2], np.int32)
    session.run(popart.PyStepIO({"input": data, "labels": labels}, session.initAnchorArrays()))
    session.weightsToHost()
    trained = {"weight": np.zeros_like(weight)}
    session.readWeights(popart.PyWeightsIO(trained))
    # NllLoss sums over the batch: d/dW = x^T (softmax(xW) - onehot(labels)).
    gradient = data.T @ (softmax(data @ weight) - np.eye(5, dtype=np.float32)[labels])
    np.testing.assert_allclose(trained["weight"], weight - 0.001 * gradient, rtol=1e-5, atol=1e-7)


def test_legacy_loss_labels_unknown_to_model_and_input_shape_info_are_named(tmp_path):
    exported_classifier(tmp_path / "model.onnx")
    with pytest.raises(popart.popart_exception, match=r"NllLoss: input 'labels' is not a tensor of the model; .* "
                                                      r"inputShapeInfo.add\('labels'"):
        popart.TrainingSession(str(tmp_path / "model.onnx"), dataFeed=popart.DataFlow(1, ["output"]),
                               losses=[popart.NllLoss("output", "labels", "loss")], optimizer=popart.ConstSGD(0.001),
                               deviceInfo=popart.DeviceManager().createCpuDevice())


def test_building_graphs_the_guide_s_ways():
    builder = popart.Builder()
    builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "input")
    builder.addInputTensor(popart.TensorInfo("INT32", [2]), "indices")
    with builder.virtualGraph(0):  # with manual virtual graphs every op is placed
        relu = builder.aiOnnx.relu(["input"], "debug-name")
        gathered = builder.aiOnnx.gather(["input", "indices"], axis=1, debugPrefix="My-Gather")
    w1 = builder.addInitializedInputTensor(np.random.rand(64, 4, 3, 3).astype(np.float16))
    assert builder.getTensorDtypeString(w1) == "float16" and builder.getTensorShape(gathered) == [2, 2]
    x = builder.addInputTensor(popart.TensorInfo("FLOAT16", [1, 4, 8, 8]))
    we = builder.addInitializedInputTensor(np.zeros([32, 4, 3, 3], np.float16))
    bi = builder.addInitializedInputTensor(np.zeros([32], np.float16))
    o = builder.aiOnnx.conv([x, we, bi], dilations=[1, 1], pads=[1, 1, 1, 1], strides=[1, 1])
    builder.virtualGraph(o, 1)
    assert builder.getVirtualGraph(o) == 1 and builder.getTensorShape(o) == [1, 32, 8, 8]
    inputs = [builder.addInputTensor(popart.TensorInfo("FLOAT", [1])) for _ in range(4)]
    with builder.virtualGraph(0):
        o1 = builder.aiOnnx.add(inputs[:2])
        o2 = builder.aiOnnx.add(inputs[2:])
    with builder.virtualGraph(1):
        total = builder.aiOnnx.add([o1, o2])
    assert [builder.getVirtualGraph(t) for t in (o1, o2, total)] == [0, 0, 1]
    builder.addOutputTensor(total)
    options = popart.SessionOptions()
    options.virtualGraphMode = popart.VirtualGraphMode.Manual
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [total, relu]),
                                      popart.DeviceManager().acquireAvailableDevice(2), userOptions=options)
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    feed = {name: np.array([k + 1.0], np.float32) for k, name in enumerate(inputs)}
    feed.update({"input": -np.ones((2, 3), np.float32), "indices": np.array([0, 2], np.int32),
                 x: np.zeros((1, 4, 8, 8), np.float16)})
    session.run(popart.PyStepIO(feed, anchors))
    np.testing.assert_array_equal(anchors[total], [10.0])
    np.testing.assert_array_equal(anchors[relu], np.zeros((2, 3)))


def test_executing_saving_and_profiling_as_the_guide_does(tmp_path):
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]), "a")
    b = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]), "b")
    w = builder.addInitializedInputTensor(np.array([2.0], np.float32), "w")
    o = builder.aiOnnx.mul([builder.aiOnnx.add([a, b]), w])
    loss = builder.aiGraphcore.l1loss([o], 1.0)
    builder.addOutputTensor(o)
    (tmp_path / "onnx.pb").write_bytes(builder.getModelProto())

    df = popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")})
    device = popart.DeviceManager().createCpuDevice()
    s = popart.InferenceSession(str(tmp_path / "onnx.pb"), deviceInfo=device, dataFeed=df)
    s.prepareDevice()
    anchors = s.initAnchorArrays()
    data_a, data_b = np.random.rand(1).astype(np.float32), np.random.rand(1).astype(np.float32)
    s.run(popart.PyStepIO({"a": data_a, "b": data_b}, anchors))
    np.testing.assert_allclose(anchors[o], (data_a + data_b) * 2, rtol=1e-6)
    with pytest.raises(popart.poplar_exception, match="Profiling is disabled for current device type"):
        s.getSummaryReport()  # a CPU device has no profile
    s = popart.InferenceSession(str(tmp_path / "onnx.pb"), deviceInfo=popart.DeviceManager().createIpuModelDevice({}),
                                dataFeed=df)
    s.prepareDevice()
    assert "Execution profiling not enabled" in s.getSummaryReport()  # the guide's words, without instrumentation
    assert s.getExecutionReport() == '{"profilerMode":"NONE"}'

    # Training, with the learning rate changed between steps, then saved and loaded again.
    opts = popart.SessionOptions()
    opts.engineOptions = {"debug.instrument": "true"}
    opts.reportOptions = {"showExecutionSteps": "true"}
    learning_rate = [0.1, 0.05]
    training = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [loss]), loss,
                                      popart.SGD({"defaultLearningRate": (learning_rate[0], False)}),
                                      popart.DeviceManager().createIpuModelDevice({}), userOptions=opts)
    training.prepareDevice()
    training.weightsFromHost()
    expected = 2.0
    for step in range(2):
        step_lr = learning_rate[step]
        training.updateOptimizerFromHost(popart.SGD({"defaultLearningRate": (step_lr, False)}))
        training.run(popart.PyStepIO({"a": np.ones(1, np.float32), "b": np.ones(1, np.float32)},
                                     training.initAnchorArrays()))
        expected -= step_lr * 2.0  # d|(a + b) w| / dw = a + b = 2
    training.modelToHost(str(tmp_path / "trained.onnx"))
    saved = {init.name: onnx.numpy_helper.to_array(init)
             for init in onnx.load(str(tmp_path / "trained.onnx")).graph.initializer}
    np.testing.assert_allclose(saved["w"], [expected], rtol=1e-6)
    assert "cycles" in training.getSummaryReport() and '"ops"' in training.getGraphReport()
    fresh = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [loss]), loss, popart.ConstSGD(0.1),
                                   popart.DeviceManager().createIpuModelDevice({}))
    fresh.resetHostWeights(str(tmp_path / "trained.onnx"))
    weights = {"w": np.zeros(1, np.float32)}
    fresh.readWeights(popart.PyWeightsIO(weights))
    np.testing.assert_allclose(weights["w"], [expected], rtol=1e-6)


def test_sync_patterns_when_acquiring_devices():
    for pattern in (popart.SyncPattern.Full, popart.SyncPattern.SinglePipeline, popart.SyncPattern.PingPong):
        device = popart.DeviceManager().acquireAvailableDevice(2, 1216, pattern)
        assert device.numIpus == 2 and device.tilesPerIPU == 1216
        device.detach()
    assert popart.DeviceManager().acquireDeviceById(5).id == 5


def test_the_horovod_example_on_two_ranks():
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("POPDIST_", "PMI_", "OMPI_"))}
    done = subprocess.run([str(Path(sys.executable).with_name("mpiexec")), "-n", "2", sys.executable,
                           str(Path(__file__).with_name("guide_horovod_training.py"))], capture_output=True, text=True,
                          timeout=300, env={**environment, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    found = dict(re.findall(r"rank (\d): loss [\d.]+ weights ([0-9a-f]{16})", done.stdout))
    assert set(found) == {"0", "1"} and found["0"] == found["1"]  # every rank holds the same trained weights
