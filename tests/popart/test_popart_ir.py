"""``popart.ir``, popxl's earlier name in the PopART guide: its example runs as the guide writes it."""
import numpy as np

import popxl


def test_the_guides_simple_addition_runs_with_popart_ir():
    import popart.ir as pir
    import popart.ir.ops as ops

    assert pir is popxl and pir.Ir is popxl.Ir and ops is popxl.ops
    ir = pir.Ir()
    main = ir.main_graph()
    assert main is ir.main_graph
    with main:
        input0 = pir.h2d_stream([1], pir.float32, name="input0_stream")
        a = ops.host_load(input0, "a")
        input1 = pir.h2d_stream([1], pir.float32, name="input1_stream")
        b = ops.host_load(input1, "b")
        o = ops.add(a, b)
        o_d2h = pir.d2h_stream(o.shape, o.dtype, name="output_stream")
        ops.host_store(o_d2h, o)
    with pir.Session(ir, "ipu_model") as session:
        outputs = session.run({input0: np.array([1.5], np.float32), input1: np.array([2.0], np.float32)})
    np.testing.assert_array_equal(outputs[o_d2h], np.array([3.5], np.float32))


def test_the_guides_variables_and_constants_with_popart_ir():
    import popart.ir as pir

    ir = pir.Ir()
    with ir.main_graph():
        a = pir.variable(3, dtype=pir.int8, name="variable_a")
        b = pir.constant(1, dtype=pir.int8, name="constant_b")
        c = a + b
    assert (a.dtype, b.dtype, c.dtype) == (pir.int8, pir.int8, pir.int8)
