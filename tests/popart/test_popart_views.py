"""The workbench's views work on PopART programs: the report command, the analyses and the stepper."""
import numpy as np

import popart
from workbench import cli
from workbench.analysis.schedule import schedule

SCRIPT = '''
import numpy as np
import popart
builder = popart.Builder()
x = builder.addInputTensor(popart.TensorInfo("FLOAT", [4, 8]))
w = builder.addInitializedInputTensor(np.ones((8, 3), np.float32))
y = builder.aiOnnx.relu([builder.aiOnnx.matmul([x, w], "project")])
opts = popart.SessionOptions()
opts.enableReplicatedGraphs = True
opts.replicatedGraphCount = 2
session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(2, [y]),
                                  popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}), userOptions=opts)
session.prepareDevice()
anchors = session.initAnchorArrays()
session.run(popart.PyStepIO({x: np.ones((2, 2, 4, 8), np.float32)}, anchors))
'''


def test_report_command_runs_a_popart_script(tmp_path, capsys):
    script = tmp_path / "inference.py"
    script.write_text(SCRIPT)
    out = tmp_path / "report.html"
    assert cli.main(["report", str(script), "-o", str(out)]) == 0
    html = out.read_text()
    assert "project" in html and "MatMul:0" in html
    assert "1 Ir built, 1 session, 1 run" in capsys.readouterr().err


def test_schedule_and_stepper_see_the_onnx_names():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.relu([builder.aiOnnx.neg([x], "flip")], "clamp")
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    names = [op.name for op in schedule(session.ir.main_graph)]
    assert any(name.startswith("flip/") for name in names) and any(name.startswith("clamp/") for name in names)
    runtime = session.workbench_session
    stream = next(iter(runtime.expected_inputs()))
    stepper = runtime.stepper({stream: np.array([1.0, -2.0], np.float32)})
    stepper.continue_()
    assert stepper.finished


def test_workbench_show_takes_a_popart_session_before_and_after_its_device_is_prepared():
    import workbench

    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.relu([x], "clamp")
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 1}))
    before = workbench.show(session, live=False)
    assert before.ir is session.ir and before.session is None and "stepper" not in before.tabs
    session.prepareDevice()
    after = workbench.show(session, live=False)
    assert after.session is session.workbench_session and "stepper" in after.tabs
    assert any(node.item.name.startswith("clamp/") for node in after["graph"].picture.nodes.values()
               if node.kind == "op")


def test_workbench_report_takes_a_popart_session(tmp_path):
    import workbench

    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.relu([x], "clamp")
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 1}))
    session.prepareDevice()
    page = workbench.report(session, tmp_path / "popart.html").read_text()
    assert "Session on ipu_model, 0 runs" in page and "clamp" in page
