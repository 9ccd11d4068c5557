"""PopART's Sum of many tensors, made as code written for PopART makes it: through the binding's
``createConnectedOp_SumOp``."""
import popart._internal.ir as _ir
import popxl
from popxl.context import get_current_context


def sum_of(*ts: popxl.Tensor) -> popxl.Tensor:
    """A Sum op of ``ts`` in the current graph."""
    context = get_current_context()
    graph = context.graph
    opid = _ir.OperatorIdentifier("ai.onnx", "Sum", 6, _ir.NumInputs(2, -1), 1)
    op = graph._pb_graph.createConnectedOp_SumOp({i: t.id for i, t in enumerate(ts)},
                                                 {0: graph._create_tensor_id("sum_out")}, opid,
                                                 context._get_op_settings("sum"))
    return popxl.Tensor._from_pb_tensor(op.outTensor(0))
