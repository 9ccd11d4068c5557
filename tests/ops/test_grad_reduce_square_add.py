"""The scaled sum of squares of popxl-addons' GradReduceSquareAddOp: a float32 scalar, squares added in
float32 even for a float16 input."""
import numpy as np

import popxl
import popxl.ops as ops
from workbench.ops.grad_reduce_square_add import grad_reduce_square_add


def test_a_float16_tensor_gives_its_float32_sum_of_squares_times_the_scale():
    data = np.linspace(-300, 300, 24, dtype=np.float16).reshape(4, 6)  # squares beyond float16's range
    ir = popxl.Ir()
    with ir.main_graph:
        total = grad_reduce_square_add(popxl.variable(data), popxl.constant(1 / 64**2, popxl.float32))
        out = popxl.d2h_stream(total.shape, total.dtype, name="out")
        ops.host_store(out, total)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()[out]
    assert result.dtype == np.float32 and result.shape == ()
    expected = np.sum(data.astype(np.float32) ** 2) / 64**2
    np.testing.assert_allclose(result, expected, rtol=1e-6)
