"""The ai.graphcore shape rules that ONNX's shape inference runs: outputs from known input shapes, and a
clear error when an input's shape is not known."""
import pytest
from onnx import TensorProto, helper

import workbench.onnx.graphcore  # noqa: F401  registers the ai.graphcore schemas
from workbench.onnx.shapes import GRAPHCORE, ShapeInferenceError, TensorType, infer_node

OPSETS = [helper.make_opsetid("", 13), helper.make_opsetid(GRAPHCORE, 1)]
FLOAT = TensorProto.FLOAT


def _group_norm():
    return helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y", "mean", "inv_std_dev"],
                            domain=GRAPHCORE, num_groups=2, epsilon=1e-5)


def test_group_norm_gives_one_statistic_per_sample_and_group():
    types = {"x": TensorType(FLOAT, (4, 6)), "scale": TensorType(FLOAT, (6,)), "bias": TensorType(FLOAT, (6,))}
    assert infer_node(_group_norm(), types, {}, OPSETS) == [
        TensorType(FLOAT, (4, 6)), TensorType(FLOAT, (8,)), TensorType(FLOAT, (8,))]


def test_a_rule_given_an_input_of_unknown_shape_says_so():
    types = {"x": TensorType(FLOAT, None), "scale": TensorType(FLOAT, (6,)), "bias": TensorType(FLOAT, (6,))}
    with pytest.raises(ShapeInferenceError, match=r"GroupNormalization \(y\): an input's shape is not known"):
        infer_node(_group_norm(), types, {}, OPSETS)
    slice_node = helper.make_node("DynamicSlice", ["t", "offset"], ["u"], domain=GRAPHCORE, axes=[0], sizes=[2])
    with pytest.raises(ShapeInferenceError, match="an input's shape is not known"):
        infer_node(slice_node, {"t": TensorType(FLOAT, None), "offset": TensorType(TensorProto.UINT32, (1,))},
                   {}, OPSETS)
