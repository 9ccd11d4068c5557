"""PopART's log lines (modules, levels, format), the tile map of POPART_TENSOR_TILE_MAP and
getTensorTileMap, and the CBOR form of the profiling reports."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import cbor2
import numpy as np
import pytest

import popart
from workbench.analysis.tile_mapping import TensorToMap, tile_mapping

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[popart:(\w+)\] \[(\w+)\] (.*)$")

PROGRAM = """
import numpy as np, popart
builder = popart.Builder()
a = builder.addInputTensor(popart.TensorInfo("FLOAT", [512]))
b = builder.addInputTensor(popart.TensorInfo("FLOAT", [512]))
w = builder.addInitializedInputTensor(np.ones(512, np.float32))
o = builder.aiOnnx.add([builder.aiOnnx.add([a, b]), w])
opts = popart.SessionOptions()
opts.constantWeights = False
opts.logDir = {log_dir!r}
{before}
device = popart.DeviceManager().createIpuModelDevice({{"tilesPerIPU": 1216}})
session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [o]), device, userOptions=opts)
session.prepareDevice()
session.weightsFromHost()
anchors = session.initAnchorArrays()
session.run(popart.PyStepIO({{a: np.ones(512, np.float32), b: np.ones(512, np.float32)}}, anchors))
print("result", float(anchors[o][0]))
"""


def run_program(tmp_path, before="", **environment):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("POPART_")}
    done = subprocess.run([sys.executable, "-c", PROGRAM.format(log_dir=str(tmp_path), before=before)],
                          capture_output=True, text=True, timeout=120,
                          env={**clean, "PYTHONPATH": str(ROOT), **environment})
    assert done.returncode == 0 and "result 3.0" in done.stdout, done.stderr
    return [LINE.match(line).groups() for line in done.stderr.splitlines() if line.strip()]


def test_trace_logs_every_step_in_popart_s_format(tmp_path):
    lines = run_program(tmp_path, POPART_LOG_LEVEL="TRACE")
    for expected in [("session", "trace", "Session::configureFromOnnx"),
                     ("ir", "info", "Preparing the Ir of 'inference'"),
                     ("pattern", "debug", "Patterns in force"), ("ir", "trace", "Lowering node 'Add'"),
                     ("session", "trace", "Session::prepareDevice()"),
                     ("devicex", "info", "Graph compiled: the program for Device Type"),
                     ("devicex", "info", "Engine loaded on Device Type"),
                     ("devicex", "debug", "Creating host-to-device FIFO input"),
                     ("devicex", "debug", "Creating device-to-host FIFO Add"),
                     ("session", "trace", "Session::weightsFromHost"),
                     ("devicex", "debug", "Copying 1 weights to the device"),
                     ("session", "trace", "Session::run"), ("devicex", "debug", "Ran 1 batches on 1 replica(s)")]:
        module, level, start = expected
        assert any(line[:2] == (module, level) and line[2].startswith(start) for line in lines), (expected, lines)


def test_levels_by_module_from_the_environment_and_the_api(tmp_path):
    config = tmp_path / "conf.py"
    config.write_text('{"devicex": "INFO"}')
    lines = run_program(tmp_path, POPART_LOG_LEVEL="OFF", POPART_LOG_CONFIG=str(config))
    assert lines and {(module, level) for module, level, _ in lines} == {("devicex", "info")}
    assert run_program(tmp_path) == []  # WARN by default, as PopART: this program warns of nothing
    # The guide's calls: every module at DEBUG, then the session module off.
    lines = run_program(tmp_path, before='popart.getLogger().setLevel("DEBUG")\n'
                                         'popart.getLogger("session").setLevel("OFF")')
    modules = {module for module, _, _ in lines}
    assert "session" not in modules and {"ir", "devicex", "pattern"} <= modules
    assert {level for _, level, _ in lines} <= {"debug", "info"}


def test_unknown_logging_module_is_named():
    with pytest.raises(popart.popart_exception, match="Invalid logging module 'sesion'"):
        popart.getLogger("sesion")


def test_tensor_tile_map_file_of_every_tensor(tmp_path):
    run_program(tmp_path, POPART_TENSOR_TILE_MAP="ttm.js")
    mapping = json.loads((tmp_path / "ttm.js").read_text())
    assert set(mapping) == {"input", "input/1", "init_input", "Add:0", "Add:0/1"}
    for per_tile in mapping.values():
        assert len(per_tile) == 1216
        held = sorted(tuple(span) for spans in per_tile for span in spans)
        assert held[0][0] == 0 and held[-1][1] == 512  # every element, once
        assert all(end == begin for (_, end), (begin, _) in zip(held, held[1:]))
    tiles = [{tile for tile, spans in enumerate(mapping[name]) if spans} for name in ("input", "input/1")]
    assert tiles[0].isdisjoint(tiles[1])  # the inputs of an add sit on different tiles


def test_get_tensor_tile_map_of_a_one_element_tensor():
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [1]))
    o = builder.aiOnnx.add([a, a])
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [o]),
                                      popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": 128}))
    with pytest.raises(popart.popart_exception, match=r"Must call prepareDevice\(\) before getTensorTileMap"):
        session.getTensorTileMap()
    session.prepareDevice()
    mapping = session.getTensorTileMap()
    assert len(mapping[o]) == 128
    assert [spans for spans in mapping[o] if spans] == [[(0, 1)]]


def test_tile_allocator_spreads_by_grain_and_wraps_round():
    mapping = tile_mapping([TensorToMap("big", 1000, 4, 0), TensorToMap("half", 3, 2, 0),
                            TensorToMap("other_ipu", 10, 4, 1)], tiles_per_ipu=8)
    big = mapping.intervals["big"]
    assert [spans for spans in big] == [[(i * 126, min(1000, (i + 1) * 126))] for i in range(8)]
    assert [tile for tile, spans in enumerate(mapping.intervals["half"]) if spans] == [0]  # wrapped to tile 0
    assert mapping.intervals["other_ipu"][0] == [(0, 10)]  # each IPU allocates from its tile 0
    assert mapping.bytes_per_tile(0, {"big": 4, "half": 2, "other_ipu": 4})[0] == 126 * 4 + 3 * 2


def test_profiling_reports_in_cbor():
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    o = builder.aiOnnx.relu([a])
    opts = popart.SessionOptions()
    opts.engineOptions = {"debug.instrument": "true"}
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [o]),
                                      popart.DeviceManager().createIpuModelDevice({}), userOptions=opts)
    session.prepareDevice()
    session.run(popart.PyStepIO({a: np.ones(2, np.float32)}, session.initAnchorArrays()))
    graph, execution = session.getGraphReport(useCbor=True), session.getExecutionReport(useCbor=True)
    assert isinstance(graph, bytes) and cbor2.loads(graph) == json.loads(session.getGraphReport())
    assert cbor2.loads(execution)["profilerMode"] == "SIMULATED" and cbor2.loads(execution)["cycles"] > 0


def test_the_builder_logs_each_node_and_off_silences_it(capsys):
    def lines_of(level):
        popart.getLogger().setLevel(level)
        builder = popart.Builder()
        x = builder.addInputTensor(popart.TensorInfo("FLOAT", [1, 2, 3]))
        builder.aiOnnx.abs([x])
        return capsys.readouterr().err

    try:
        said = lines_of("DEBUG")
        assert LINE.match(said.splitlines()[0]).groups() == (
            "builder", "debug", "Adding ai.onnx.Abs to builder opset:10, numInputs:1 numOutputs:1")
        assert lines_of("OFF") == ""
    finally:
        popart.getLogger().setLevel("OFF")


@pytest.mark.parametrize("load_engine", [True, False])
def test_compiling_and_loading_the_engine_are_logged_when_they_happen(capsys, load_engine):
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    o = builder.aiOnnx.relu([a])
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [o]),
                                      popart.DeviceManager().createIpuModelDevice({}))
    with pytest.raises(popart.popart_exception, match="there is no compiled engine; call prepareDevice"):
        session.loadEngineAndConnectStreams()
    popart.getLogger().setLevel("INFO")
    try:
        session.prepareDevice(load_engine)
        prepared = capsys.readouterr().err
        session.run(popart.PyStepIO({a: np.ones(2, np.float32)}, session.initAnchorArrays()))
        ran = capsys.readouterr().err
    finally:
        popart.getLogger().setLevel("OFF")
    assert "Graph compiled" in prepared and "Graph compiled" not in ran
    assert ("Engine loaded" in prepared, "Engine loaded" in ran) == (load_engine, not load_engine)


def test_cycle_counts_need_the_counter_option_a_run_and_a_known_counter():
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    with builder.virtualGraph(1):
        o = builder.aiOnnx.exp([a])
    opts = popart.SessionOptions()
    opts.virtualGraphMode = popart.VirtualGraphMode.Manual

    def session(options):
        made = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [o]),
                                       popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}), userOptions=options)
        made.prepareDevice()
        return made

    plain = session(opts)
    with pytest.raises(popart.popart_exception, match="SessionOption 'instrumentWithHardwareCycleCounter' must be"):
        plain.getCycleCount()
    opts.instrumentWithHardwareCycleCounter = True
    counted = session(opts)
    with pytest.raises(popart.popart_exception, match="Must call run before getCycleCount"):
        counted.getCycleCount()
    counted.run(popart.PyStepIO({a: np.ones(2, np.float32)}, counted.initAnchorArrays()))
    assert counted.getCycleCount() > 0
    with pytest.raises(popart.popart_exception, match="Make sure you have set SessionOption::hardwareInstrumentations"):
        counted.getCycleCount("inner_ipu_1")
    opts.hardwareInstrumentations = {popart.Instrumentation.Outer, popart.Instrumentation.Inner}
    inner = session(opts)
    inner.run(popart.PyStepIO({a: np.ones(2, np.float32)}, inner.initAnchorArrays()))
    assert 0 < inner.getCycleCount("inner_ipu_1") <= inner.getCycleCount()


def test_optimizer_transfers_and_saved_models_are_logged(capsys, tmp_path):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.ones(2, np.float32))
    loss = builder.aiGraphcore.l1loss([builder.aiOnnx.mul([x, w])], 1.0)
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, [loss]), loss,
                                     popart.SGD({"defaultLearningRate": (0.1, False)}),
                                     popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    popart.getLogger().setLevel("TRACE")
    try:
        session.updateOptimizerFromHost(popart.SGD({"defaultLearningRate": (0.05, False)}))
        session.modelToHost(str(tmp_path / "model.onnx"))
        lines = [LINE.match(line).groups() for line in capsys.readouterr().err.splitlines()]
    finally:
        popart.getLogger().setLevel("OFF")
    assert ("session", "trace", "Session::optimizerFromHost") in lines
    assert any(module == "devicex" and text.startswith("Writing 2 optimizer values to the device: ")
               and "negScaledLearningRate0___default=-0.05" in text for module, _, text in lines)
    assert ("session", "info", f"Writing the model with its current weights to {tmp_path / 'model.onnx'}") in lines
