"""PopART's weight writes are all or nothing: ``writeWeights``, ``weightsFromHost`` and
``resetHostWeights`` interrupted at any moment (Ctrl-C), or refused for a bad weight, leave the host
copy and the device each holding one whole set of weights, and the device never one the host copy
did not hold."""
import numpy as np
import pytest
from support.interrupts import LineInterrupt, interrupted, interrupts_raise  # noqa: F401 - a fixture

import popart

WEIGHTS, TRIES = 16, 60
pytestmark = pytest.mark.usefixtures("interrupts_raise")


def weights_session():
    """``y_i = x * w_i`` for ``WEIGHTS`` weights of two elements, on two replicas."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    ws = [builder.addInitializedInputTensor(np.zeros(2, np.float32), f"w{i}") for i in range(WEIGHTS)]
    ys = [builder.aiOnnx.mul([x, w]) for w in ws]
    options = popart.SessionOptions()
    options.enableReplicatedGraphs, options.replicatedGraphCount = True, 2
    options.constantWeights = False
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, ys),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}),
                                      userOptions=options)
    session.prepareDevice()
    return session, x, ws, ys


def values_for(number: int, ws: list) -> dict:
    return {w: np.array([number * 100.0 + i, -(number * 100.0 + i)], np.float32) for i, w in enumerate(ws)}


def whole_set(values: dict, ws: list) -> int:
    """The write ``values`` came from, checked to be one whole write."""
    number = int(round(float(values[ws[0]][0]) / 100.0))
    for w, expected in values_for(number, ws).items():
        np.testing.assert_array_equal(np.reshape(values[w], expected.shape), expected,
                                      err_msg=f"{w} is not from write {number}: the weights mix writes")
    return number


def host_copy(session, ws) -> dict:
    read = {w: np.zeros(2, np.float32) for w in ws}
    session.readWeights(popart.PyWeightsIO(read))
    return read


def computed(session, x, ws, ys) -> dict:
    """The weights the device computes with (its two replicas agreeing)."""
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.ones((2, 2), np.float32)}, anchors))
    for y in ys:
        np.testing.assert_array_equal(anchors[y][0], anchors[y][1], err_msg="the replicas differ")
    return {w: anchors[y][0] for w, y in zip(ws, ys)}


def write_and_send(session, values: dict) -> None:
    session.writeWeights(popart.PyWeightsIO(values))
    session.weightsFromHost()


def test_interrupted_write_weights_and_weights_from_host_never_mix_or_hide_weights():
    session, x, ws, ys = weights_session()
    rng = np.random.default_rng(3)
    counter = LineInterrupt(None)
    first = values_for(1, ws)
    interrupted(lambda: write_and_send(session, first), counter)
    held_host, held_device, outcomes = 1, 1, set()
    for number in range(2, TRIES + 2):
        values = values_for(number, ws)
        at = int(rng.integers(1, counter.count + 1))
        assert interrupted(lambda: write_and_send(session, values), LineInterrupt(at, ("signal", "flag")[number % 2]))
        host = whole_set(host_copy(session, ws), ws)
        session.weightsToHost()
        fetched = whole_set(host_copy(session, ws), ws)  # what the session says the device holds
        device = whole_set(computed(session, x, ws, ys), ws)
        assert fetched == device, f"weightsToHost gave write {fetched}, the device computes with write {device}"
        assert host in (held_host, number) and device in (held_device, number), (host, device)
        assert device == host or device == held_device, "the device holds weights the host copy never held"
        outcomes.add((host == number, device == number))
        held_host = held_device = device
    # Interrupts came before the write, between writing and sending, and after sending.
    assert outcomes == {(False, False), (True, False), (True, True)}, outcomes


def test_a_bad_weight_or_an_unknown_initializer_changes_no_host_weight(tmp_path):
    session, x, ws, ys = weights_session()
    good = values_for(5, ws)
    with pytest.raises(popart.popart_exception, match="w1.*has 2 elements"):
        session.writeWeights(popart.PyWeightsIO({ws[0]: good[ws[0]], ws[1]: np.zeros(3, np.float32)}))
    assert not host_copy(session, ws)[ws[0]].any(), "writeWeights changed a weight before refusing another"

    builder = popart.Builder()
    builder.addInitializedInputTensor(np.ones(2, np.float32), ws[0])
    builder.addInitializedInputTensor(np.ones(2, np.float32), "unknown")
    path = str(tmp_path / "other.onnx")
    with open(path, "wb") as file:
        file.write(builder.getModelProto())
    with pytest.raises(popart.popart_exception, match="no tensor 'unknown'"):
        session.resetHostWeights(path)
    assert not host_copy(session, ws)[ws[0]].any(), "resetHostWeights changed a weight before refusing another"
