"""What the stepper tab runs with: inputs by stream, by stream name or as a PopART PyStepIO, and zeros (said in
the view) where none were given, so that ``workbench.show(popart_session)`` can be stepped; and its table's
values in three short lines, the next op's graph not repeated on every row."""
import numpy as np
import pytest

import popart
import popxl
import popxl.ops as ops
import workbench
from workbench.widgets import SessionStepperView
from workbench.widgets.stepper_view import LiveRow, table_html, value_text


def scaled():
    """y = x * 2 for x float32[2, 3] on 2 replicas."""
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2, 3], popxl.float32, name="x")
        y = ops.host_load(x_stream) * 2
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
    return ir, x_stream, y_stream


def popart_add():
    """o = a + w in PopART, a float32[2] fed from the host, w = [1, 2]."""
    builder = popart.Builder()
    a = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    w = builder.addInitializedInputTensor(np.array([1.0, 2.0], np.float32))
    o = builder.aiOnnx.add([a, w])
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")}),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": 1}))
    session.prepareDevice()
    return session, a, o


def test_without_inputs_it_steps_with_zeros_of_each_streams_host_shape_and_says_so():
    ir, x_stream, y_stream = scaled()
    with popxl.Session(ir, "ipu_model") as session:
        view = SessionStepperView(session, views=[])
        view.widget
        assert view.zeros_for == ("x",)
        assert "no inputs were given: it steps with zeros for 'x'" in view.status_box.value
        view.continue_()
        assert view.status == "finished" and view.message == ""
        np.testing.assert_array_equal(view.stepper.outputs[y_stream], np.zeros((2, 2, 3), np.float32))
        given = SessionStepperView(session, {x_stream: np.ones((2, 2, 3), np.float32)}, views=[])
        assert given.zeros_for == () and "zeros" not in given.status_html()


def test_a_popart_session_shown_with_its_py_step_io_steps_with_that_data():
    session, a, o = popart_add()
    data = np.array([3.0, 4.0], np.float32)
    shown = workbench.show(session, popart.PyStepIO({a: data}, session.initAnchorArrays()))
    stepper = shown["stepper"]
    stepper.continue_()
    assert stepper.status == "finished", stepper.message
    (outputs,) = stepper.stepper.outputs.values()
    np.testing.assert_array_equal(outputs, data + np.array([1.0, 2.0], np.float32))


def test_a_popart_session_shown_alone_can_be_stepped_and_inputs_may_be_named():
    session, a, o = popart_add()
    alone = workbench.show(session)["stepper"]
    alone.step()
    assert alone.message == "" and alone.zeros_for == (a,)
    named = workbench.show(session, {a: np.array([5.0, 6.0], np.float32)})["stepper"]
    named.continue_()
    np.testing.assert_array_equal(next(iter(named.stepper.outputs.values())), [6.0, 8.0])


def test_a_stream_name_the_program_does_not_read_is_refused_naming_the_ones_it_does():
    ir, x_stream, _ = scaled()
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(ValueError, match="a stream 'z' that the program does not read; its input streams are: 'x'"):
            SessionStepperView(session, {"z": np.zeros(3)}, views=[])
        with pytest.raises(TypeError, match="a dict from streams .* or a PopART PyStepIO; got list"):
            SessionStepperView(session, [1, 2], views=[])


def test_a_large_value_is_three_short_lines_and_the_next_ops_graph_is_not_repeated_on_its_rows():
    value = np.arange(256, dtype=np.float32).reshape(8, 32)
    assert value_text(value) == "mean 127.5\nmin 0\nmax 255"
    assert value_text(np.array([1.0, 2.0])) == "[1., 2.]"  # small values whole
    rows = [LiveRow("layer0/split", "forward", "float32[8, 32]", True, ("mean 1\nmin 0, max 2",)),
            LiveRow("w", "main", "float32[2]", True, ("[1., 2.]",))]
    html = table_html(rows, 1, graph="forward")
    assert "float32[8, 32]</span>" in html and "float32[2] in main</span>" in html
    assert "white-space:pre'>mean 1\nmin 0, max 2</td>" in html  # the summary's lines, unwrapped


def test_a_call_making_dozens_of_tensors_names_six_and_counts_the_rest():
    made = [f"t{n}" for n in range(40)]
    html = table_html([], 1, made_next=made)
    assert "t0, t1, t2, t3, t4, t5, … 34 more</p>" in html and "t6" not in html
