"""A PopART session over a popxl Ir: ``ir._pb_ir.removeIsolatedGraphs()`` drops the subgraphs nothing
calls, and ``InferenceSession.fromIr`` runs the Ir with the anchors its data flow names."""
import numpy as np

import popart
import popxl
import popxl.ops as ops


def program():
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream((2,), popxl.float32, name="x_stream")
        x = ops.host_load(x_stream, "x")
        w = popxl.variable(np.array([1.0, 2.0], np.float32), name="w")
        double = ir.create_graph(lambda t: t + t, x)
        unused = ir.create_graph(lambda t: t * t, x)
        y, = ops.call(double, x * w)
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y_stream")
        ops.host_store(y_stream, y)
    return ir, x_stream, y_stream, double, unused


def test_isolated_graphs_are_removed_and_called_ones_kept():
    ir, _, _, double, unused = program()
    ir_ = ir._pb_ir
    ir_.removeIsolatedGraphs()
    names = {str(g.id) for g in ir_.getAllGraphs()}
    assert double.id in names and unused.id not in names


def test_a_session_from_the_ir_runs_each_batch_of_the_step():
    ir, x_stream, y_stream, _, _ = program()
    ir_ = ir._pb_ir
    ir_.setDataFlow(popart.DataFlow(2, {y_stream.tensor_id: popart.AnchorReturnType("All")}))
    ir_.removeIsolatedGraphs()
    session = popart.InferenceSession.fromIr(ir=ir_, deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    data = np.array([[1.0, 1.0], [3.0, -1.0]], np.float32)
    session.run(popart.PyStepIO({x_stream.tensor_id: data}, anchors))
    np.testing.assert_allclose(anchors[y_stream.tensor_id], 2 * data * [1.0, 2.0])
