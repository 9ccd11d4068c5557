"""The gradient of PopART's Sum of many tensors (made through ``popart._internal.ir``) against finite
differences, with broadcast inputs."""
import numpy as np

import popart._internal.ir as _ir
import popxl
from popxl.context import get_current_context

from gradcheck import check_gradients


def sum_of(*ts: popxl.Tensor) -> popxl.Tensor:
    context = get_current_context()
    graph = context.graph
    opid = _ir.OperatorIdentifier("ai.onnx", "Sum", 6, _ir.NumInputs(2, -1), 1)
    op = graph._pb_graph.createConnectedOp_SumOp({i: t.id for i, t in enumerate(ts)},
                                                 {0: graph._create_tensor_id("sum_out")}, opid,
                                                 context._get_op_settings("sum"))
    return popxl.Tensor._from_pb_tensor(op.outTensor(0))


def test_each_tensor_of_a_sum_gets_the_gradient_summed_to_its_shape():
    rng = np.random.default_rng(5)
    arrays = [rng.normal(size=shape) for shape in ((2, 3), (3,), (1, 3), (2, 1))]
    grads = check_gradients(lambda *ts: sum_of(*ts) * sum_of(*ts), *arrays)
    assert [g.shape for g in grads.values()] == [a.shape for a in arrays]
