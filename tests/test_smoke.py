"""The README example, end to end."""
import numpy as np

import popxl
import popxl.ops as ops
import workbench.popxl


def test_popxl_is_the_workbench_facade():
    import popxl.ops.var_updates
    import popxl.transforms
    import popxl.utils
    from popxl import ops as ops_again

    assert popxl is workbench.popxl
    assert popxl.Tensor is workbench.popxl.Tensor
    assert ops is ops_again is workbench.popxl.ops
    assert popxl.ops.var_updates is workbench.popxl.ops.var_updates
    assert callable(popxl.ops.call)


def test_readme_example():
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2], popxl.float32, name="x")
        w = popxl.variable(np.array([1.0, 2.0], np.float32), name="w")
        y = ops.host_load(x_stream) * w + 1
        y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_stream, y)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({x_stream: np.array([3.0, 4.0], np.float32)})
    np.testing.assert_array_equal(outputs[y_stream], np.array([4.0, 9.0], np.float32))
