"""ONNX conformance of ``popart``: the backend node test cases that come with the ``onnx`` package
either run and match ONNX's expected outputs (onnxruntime's, for cases converted to opset 11), or are
refused at session creation with an error naming the op, its version and the node; never a wrong
value, never an unclear error. Plus the refusals the PopART guide's users meet most."""
import functools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import popart
from onnx_node_cases import SUPPORTED, at_opset, collect_cases, run_case


@functools.lru_cache(maxsize=None)
def node_cases() -> tuple:
    return tuple(collect_cases())


def failures(outcomes) -> list[str]:
    return [f"{o.kind}: {o.case}: {o.detail}" for o in outcomes if o.kind in ("wrong", "unclear")]


def test_every_backend_node_case_runs_or_is_refused_clearly():
    outcomes = [run_case(case) for case in node_cases()]
    assert failures(outcomes) == []
    assert sum(o.kind == "pass" for o in outcomes) >= 30  # the cases at opsets popart supports


def test_backend_node_cases_converted_to_opset_11_match_onnxruntime():
    converted = [c for c in (at_opset(case, 11) for case in node_cases()) if c is not None]
    outcomes = [run_case(case) for case in converted]
    assert failures(outcomes) == []
    assert sum(o.kind == "pass" for o in outcomes) >= 120


def session_of(nodes, inputs, outputs, opset, initializers=()):
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers)),
                              opset_imports=[helper.make_opsetid("", opset)])
    return popart.InferenceSession(fnModel=model.SerializeToString(),
                                   dataFlow=popart.DataFlow(1, [o.name for o in outputs]),
                                   deviceInfo=popart.DeviceManager().createCpuDevice())


def value(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def test_shape_with_start_and_end_is_refused_not_run_as_shape_1():
    node = helper.make_node("Shape", ["x"], ["y"], name="shape_node", start=1, end=2)
    with pytest.raises(popart.popart_exception, match=r"ai\.onnx\.Shape:15 \(node 'shape_node'\) at opset 15"):
        session_of([node], [value("x", TensorProto.FLOAT, [2, 3, 4])], [value("y", TensorProto.INT64, [1])], 15)


def test_an_op_of_a_later_opset_is_refused_with_its_version():
    node = helper.make_node("Abs", ["x"], ["y"], name="abs_node")
    with pytest.raises(popart.popart_exception, match=r"ai\.onnx\.Abs:13 \(node 'abs_node'\) at opset 13 is not "
                                                      r"supported"):
        session_of([node], [value("x", TensorProto.FLOAT, [2])], [value("y", TensorProto.FLOAT, [2])], 13)


def test_optional_has_element_is_refused():
    node = helper.make_node("OptionalHasElement", ["x"], ["y"], name="has")
    with pytest.raises(popart.popart_exception, match=r"OptionalHasElement:\d+ \(node 'has'\)"):
        session_of([node], [value("x", TensorProto.FLOAT, [2])], [value("y", TensorProto.BOOL, [])], 18)


def test_an_unsupported_element_type_names_op_tensor_and_type():
    node = helper.make_node("Identity", ["x"], ["y"], name="copy")
    with pytest.raises(popart.popart_exception, match=r"ai\.onnx\.Identity:1 \(node 'copy'\): tensor 'x' has element "
                                                      r"type BFLOAT16"):
        session_of([node], [value("x", TensorProto.BFLOAT16, [2])], [value("y", TensorProto.BFLOAT16, [2])], 11)


@pytest.mark.parametrize("opset", [6, 7, 9])
def test_prelu_slope_per_channel_at_opset_6_numpy_broadcast_after(opset):
    x = np.linspace(-2, 2, 2 * 3 * 2 * 3, dtype=np.float32).reshape(2, 3, 2, 3)
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    node = helper.make_node("PRelu", ["x", "slope"], ["y"], name="prelu")
    session = session_of([node], [value("x", TensorProto.FLOAT, list(x.shape))],
                         [value("y", TensorProto.FLOAT, list(x.shape))], opset,
                         [onnx.numpy_helper.from_array(slope, "slope")])
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({"x": x}, anchors))
    broadcast = slope.reshape(3, 1, 1) if opset == 6 else slope  # per channel, or along the last axis
    np.testing.assert_allclose(anchors["y"], np.where(x < 0, x * broadcast, x), rtol=1e-6)


def test_graphcore_dynamic_update_add_and_zero():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [4, 3]))
    index = builder.addInputTensor(popart.TensorInfo("UINT32", [1]))
    update = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]))
    outputs = [getattr(builder.aiGraphcore, name)([x, index, update], axes=[0], sizes=[2])
               for name in ("dynamicupdate", "dynamicadd", "dynamiczero")]
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, outputs),
                                      popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    data, new = np.arange(12, dtype=np.float32).reshape(4, 3), np.full((2, 3), 10, np.float32)
    session.run(popart.PyStepIO({x: data, index: np.array([1], np.uint32), update: new}, anchors))
    replaced, added, zeroed = data.copy(), data.copy(), data.copy()
    replaced[1:3] = new
    added[1:3] += new
    zeroed[1:3] = 0
    for output, expected in zip(outputs, (replaced, added, zeroed)):
        np.testing.assert_array_equal(anchors[output], expected)


def test_tile_1_repeats_along_one_axis():
    node = helper.make_node("Tile", ["x", "tiles", "axis"], ["y"], name="tile")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    session = session_of([node], [value("x", TensorProto.FLOAT, [2, 3])], [value("y", TensorProto.FLOAT, [2, 6])], 5,
                         [helper.make_tensor("tiles", TensorProto.INT64, [1], [2]),
                          helper.make_tensor("axis", TensorProto.INT64, [1], [1])])
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({"x": x}, anchors))
    np.testing.assert_array_equal(anchors["y"], np.tile(x, (1, 2)))


@pytest.mark.parametrize("exclusive, reverse", [(0, 1), (1, 0), (1, 1)])
def test_cumsum_exclusive_and_reverse_match_onnxruntime(exclusive, reverse):
    import onnxruntime

    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    axis = onnx.numpy_helper.from_array(np.array(1, np.int32), "axis")
    session = session_of([node], [value("x", onnx.TensorProto.FLOAT, [3, 4])],
                         [value("y", onnx.TensorProto.FLOAT, [3, 4])], 11, [axis])
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({"x": x}, anchors))
    model = helper.make_model(helper.make_graph([node], "g", [value("x", onnx.TensorProto.FLOAT, [3, 4])],
                                                [value("y", onnx.TensorProto.FLOAT, [3, 4])], initializer=[axis]),
                              opset_imports=[helper.make_opsetid("", 11)])
    expected = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    np.testing.assert_array_equal(anchors["y"], expected)
