"""Compile-time values: the outputs of nodes computed from constants and shapes alone (a Shape, and
the Gather/Concat/Unsqueeze chains that exporters build a Reshape's shape with) are evaluated once,
with ONNX's reference evaluator, so that the Ir holds only the values, as constants."""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ..shapes import TensorType

_NEVER = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Dropout",
          "If", "Loop", "Scan"}
_LIMIT = 1 << 16  # values up to this many elements are folded


def fold(node: onnx.NodeProto, values: Mapping[str, np.ndarray], types: Mapping[str, TensorType],
         opsets: list) -> Optional[list[np.ndarray]]:
    """The outputs of ``node`` when every input is known at compile time, else None."""
    if node.domain not in ("", "ai.onnx") or node.op_type in _NEVER:
        return None
    if node.op_type == "Shape":
        ttype = types.get(node.input[0])
        if ttype is None or ttype.shape is None or any(d is None for d in ttype.shape):
            return None
        return [np.array(ttype.shape, np.int64)]
    if node.op_type == "Constant" or not all(name in values for name in node.input if name):
        return None
    if any(values[name].size > _LIMIT for name in node.input if name):
        return None
    if any(t.shape is None or any(d is None for d in t.shape) or int(np.prod(t.shape)) > _LIMIT
           for t in (types.get(o) for o in node.output) if t is not None):
        return None
    inputs = [name for name in dict.fromkeys(node.input) if name]
    bare = onnx.NodeProto()
    bare.CopyFrom(node)
    del bare.attribute[:]  # without PopART's own attributes (__debug_info_id...), which the evaluator refuses
    bare.attribute.extend(a for a in node.attribute if not a.name.startswith("__"))
    graph = helper.make_graph([bare], "fold", [], [helper.make_tensor_value_info(o, 0, None) for o in node.output],
                              initializer=[numpy_helper.from_array(values[n], n) for n in inputs])
    model = helper.make_model(graph, opset_imports=opsets)
    try:
        return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, {})]
    except Exception:  # the evaluator lacks the op or a case of it: lower the node instead
        return None
