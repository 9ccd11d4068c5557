"""Weights stored in separate files (ONNX external data), as PopART's saveInitializersExternally,
modelToHost and updateExternallySavedTensorLocations handle them."""
import os

import numpy as np
import onnx
import pytest

import popart


def _two_weights():
    builder = popart.Builder()
    a = np.array([1.5, -2.0, 3.25], np.float32)
    b = np.array([4, 5, 6], np.float16)
    wa = builder.addInitializedInputTensor(a)
    wb = builder.addInitializedInputTensor(b)
    y = builder.aiOnnx.add([wa, builder.aiOnnx.cast([wb], "FLOAT")])
    builder.addOutputTensor(y)
    return builder, (wa, a), (wb, b), y


def _run_inference(model, anchor):
    session = popart.InferenceSession(model, popart.DataFlow(1, {anchor: popart.AnchorReturnType("All")}),
                                      popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({}, anchors))
    return anchors[anchor]


@pytest.mark.parametrize("through", ["builder", "transformer"])
def test_initializers_are_written_back_to_back_and_the_model_refers_to_them(tmp_path, through):
    builder, (wa, a), (wb, b), y = _two_weights()
    path = str(tmp_path / "weights.bin")
    if through == "builder":
        builder.saveInitializersExternally([wa, wb], path)
        proto = builder.getModelProto()
    else:
        transformer = popart.GraphTransformer(builder.getModelProto())
        transformer.saveInitializersExternally([wa, wb], path)
        proto = transformer.getModelProto()
    assert os.path.getsize(path) == a.nbytes + b.nbytes
    np.testing.assert_array_equal(np.fromfile(path, np.float32, count=3), a)
    np.testing.assert_array_equal(np.fromfile(path, np.float16, count=3, offset=a.nbytes), b)
    inits = {i.name: i for i in onnx.load_from_string(proto).graph.initializer}
    assert inits[wb].data_location == onnx.TensorProto.EXTERNAL
    assert {e.key: e.value for e in inits[wb].external_data} == {"location": path, "length": "6", "offset": "12"}
    np.testing.assert_array_equal(_run_inference(proto, y), a + b.astype(np.float32))


def test_bad_requests_are_refused_before_anything_is_written(tmp_path):
    builder, (wa, _), _, y = _two_weights()
    path = tmp_path / "weights.bin"
    with pytest.raises(popart.popart_exception, match=f"Tensor '{y}' is not an initializer"):
        builder.saveInitializersExternally([wa, y], str(path))
    assert not path.exists()
    with pytest.raises(popart.popart_exception, match="but its parent directory does not exist"):
        builder.saveInitializersExternally([wa], str(tmp_path / "missing" / "weights.bin"))
    builder.saveInitializersExternally([wa], str(path))
    with pytest.raises(popart.popart_exception, match=f"Tensor '{wa}' already has an external data_location"):
        builder.saveInitializersExternally([wa], str(tmp_path / "other.bin"))
    assert not (tmp_path / "other.bin").exists()


def _training(model, optimizer, loss):
    session = popart.TrainingSession(fnModel=model, dataFlow=popart.DataFlow(1, {}), loss=loss, optimizer=optimizer,
                                     deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    session.weightsFromHost()
    return session


def _weights_and_state(session, names):
    arrays = {name: np.zeros(shape, np.float32) for name, shape in names.items()}
    session.readWeights(popart.PyWeightsIO(arrays))
    return arrays


def test_model_to_host_rewrites_external_weights_and_adds_the_optimizer_state_beside_them(tmp_path):
    rng = np.random.default_rng(3)
    d1, d2 = rng.random((3, 3), np.float32), rng.random(3, np.float32)
    builder = popart.Builder()
    w1, w2 = builder.addInitializedInputTensor(d1), builder.addInitializedInputTensor(d2)
    loss = builder.aiGraphcore.identityloss([builder.aiOnnx.matmul([w1, w2])])
    path = str(tmp_path / "weights.bin")
    builder.saveInitializersExternally([w1, w2], path)
    adam = popart.Adam({"defaultLearningRate": (0.2, True), "defaultBeta1": (0.5, True)})
    session = _training(builder.getModelProto(), adam, loss)
    session.run(popart.PyStepIO({}, session.initAnchorArrays()))
    session.modelToHost(str(tmp_path / "model.onnx"))
    shapes = {w1: (3, 3), w2: (3,)}
    names = {**shapes, **{p + w: s for p in ("Accl1___", "Accl2___") for w, s in shapes.items()},
             "Step___" + w1: (), "Step___" + w2: ()}
    host = _weights_and_state(session, names)
    # Weights in place, then the state by kind and weight, as PopART appends it.
    order = [w1, w2, "Accl1___" + w1, "Accl1___" + w2, "Accl2___" + w1, "Accl2___" + w2, "Step___" + w1,
             "Step___" + w2]
    np.testing.assert_array_equal(np.fromfile(path, np.float32), np.concatenate([host[n].ravel() for n in order]))
    assert not np.allclose(host[w1], d1) and host["Step___" + w1] == 1
    size = os.path.getsize(path)
    session.run(popart.PyStepIO({}, session.initAnchorArrays()))
    session.modelToHost(str(tmp_path / "model.onnx"))
    assert os.path.getsize(path) == size  # a second save rewrites the state where the first put it
    resumed = _training(str(tmp_path / "model.onnx"), adam, loss)
    for training in (session, resumed):
        training.run(popart.PyStepIO({}, training.initAnchorArrays()))
    mine, theirs = _weights_and_state(resumed, names), _weights_and_state(session, names)
    for name in names:
        np.testing.assert_array_equal(mine[name], theirs[name])


def test_locations_are_found_from_the_working_directory_and_moved_on_request(tmp_path, monkeypatch):
    builder = popart.Builder()
    w = builder.addInitializedInputTensor(np.array([1.0, -1.0], np.float32))
    loss = builder.aiGraphcore.identityloss([builder.aiOnnx.mul([w, w])])
    monkeypatch.chdir(tmp_path)
    builder.saveInitializersExternally([w], "weights.bin")
    session = _training(builder.getModelProto(), popart.ConstSGD(0.25), loss)
    session.run(popart.PyStepIO({}, session.initAnchorArrays()))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(popart.popart_exception, match="Unrecognised file name 'weights.bin' for externally stored "
                                                      f"tensor '{w}'"):
        session.modelToHost("model.onnx")
    assert os.listdir(".") == []
    monkeypatch.chdir(tmp_path)
    with pytest.raises(popart.popart_exception, match="but file 'nothing.bin' does not exist"):
        session.updateExternallySavedTensorLocations("nothing.bin", "moved.bin")
    session.updateExternallySavedTensorLocations("weights.bin", "moved.bin")
    with pytest.raises(popart.popart_exception, match="No ONNX model initializers have external location set to "
                                                      "'weights.bin'"):
        session.updateExternallySavedTensorLocations("weights.bin", "again.bin")
    before = np.fromfile("weights.bin", np.float32)
    session.modelToHost("model.onnx")
    np.testing.assert_array_equal(np.fromfile("weights.bin", np.float32), before)  # the old file is left alone
    np.testing.assert_allclose(np.fromfile("moved.bin", np.float32), [0.75, -0.75])  # mean(w²): w - 0.25 * w
    saved = {e.key: e.value for e in onnx.load("model.onnx", load_external_data=False).graph.initializer[0].external_data}
    assert saved["location"] == "moved.bin"
