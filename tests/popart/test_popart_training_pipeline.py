"""Pipelined training: a model split over two IPUs in two stages trains to the same weights as without
pipelining, and every op of the program knows its stage (forward 0, 1; backward 1, 2)."""
import numpy as np

import popart
from popart_training_oracle import trained_weights


def staged_mlp():
    rng = np.random.default_rng(0)
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [4, 6]), "x")
    label = builder.addInputTensor(popart.TensorInfo("INT32", [4]), "label")
    with builder.virtualGraph(0), builder.pipelineStage(0):
        w1 = builder.addInitializedInputTensor(rng.normal(0, 0.5, (6, 5)).astype(np.float32), "w1")
        h = builder.aiOnnx.relu([builder.aiOnnx.matmul([x, w1])])
    with builder.virtualGraph(1), builder.pipelineStage(1):
        w2 = builder.addInitializedInputTensor(rng.normal(0, 0.5, (5, 3)).astype(np.float32), "w2")
        probs = builder.aiOnnx.softmax([builder.aiOnnx.matmul([h, w2])])
        loss = builder.aiGraphcore.nllloss([probs, label], popart.ReductionType.Sum)
    return builder.getModelProto(), x, label, loss


def train(pipelined: bool):
    proto, x, label, loss = staged_mlp()
    opts = popart.SessionOptions()
    opts.virtualGraphMode = popart.VirtualGraphMode.Manual
    opts.enablePipelining = pipelined
    training = popart.TrainingSession(proto, popart.DataFlow(4, []), loss, popart.SGD({"defaultMomentum": (0.5, True)}),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}), userOptions=opts)
    training.prepareDevice()
    training.weightsFromHost()
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(4, 4, 6)).astype(np.float32)
    labels = rng.integers(0, 3, (4, 4)).astype(np.int32)
    training.run(popart.PyStepIO({x: xs, label: labels}, {}))
    return training


def test_pipelining_leaves_the_numbers_unchanged_and_marks_the_stages():
    pipelined, plain = train(True), train(False)
    for name, value in trained_weights(plain).items():
        np.testing.assert_array_equal(trained_weights(pipelined)[name], value)
    program = pipelined.program
    forward = {op.meta["pipeline_stage"] for graph in pipelined.ir.graphs if graph.name == "forward"
               for op in graph.ops}
    backward = {op.meta["pipeline_stage"] for op in program.grad_graph.ops}
    assert forward == {0, 1} and backward == {1, 2}
    updates = [op for graph in pipelined.ir.graphs if graph.name == "step" for op in graph.ops
               if op.type.startswith("accumulate")]
    assert {op.meta["pipeline_stage"] for op in updates} == {1, 2}


def test_a_call_spanning_two_ipus_takes_and_returns_tensors_on_their_ipus():
    import popxl
    import popxl.ops as ops

    ir = popxl.Ir()
    with ir.main_graph:
        with popxl.ipu(0):
            a = popxl.variable(np.ones(2, np.float32), name="a")
        with popxl.ipu(1):
            b = popxl.variable(np.full(2, 2.0, np.float32), name="b")
        graph = ir.create_empty_graph("spanning")
        with graph:
            with popxl.ipu(0):
                x = popxl.graph_input((2,), popxl.float32, "x")
            with popxl.ipu(1):
                y = popxl.graph_input((2,), popxl.float32, "y")
                popxl.graph_output(ops.add(x.copy_to_ipu(1), y))
        out, = ops.call(graph, a, b)
        assert out.ipu == 1
        with popxl.ipu(1):
            stream = popxl.d2h_stream((2,), popxl.float32, "out")
            ops.host_store(stream, out)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run({})[stream], [3.0, 3.0])


def test_the_schedule_view_shows_each_pipeline_stage_as_a_band():
    from workbench.widgets import ScheduleView

    figure = ScheduleView(train(True), live=False).figure
    strips = {trace.meta["stage"]: trace for trace in figure.data if (trace.meta or {}).get("kind") == "pipeline stage"}
    assert sorted(strips) == [0, 1, 2]
    assert all(trace.name == f"pipeline stage {stage}" for stage, trace in strips.items())
    assert len({trace.marker.color for trace in strips.values()}) == 3
    import popxl
    import popxl.ops as ops

    ir = popxl.Ir()
    with ir.main_graph:
        ops.relu(popxl.variable(np.ones(3, np.float32)))
    unstaged = ScheduleView(ir, live=False).figure
    assert not [trace for trace in unstaged.data if (trace.meta or {}).get("kind") == "pipeline stage"]
