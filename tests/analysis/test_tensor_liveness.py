"""Tensor liveness: bytes live on each IPU at each step of the flattened schedule. Byte counts are
worked out by hand (float32: 4 bytes an element; a Python scalar operand is a 4-byte constant)."""
import numpy as np

import popxl
import popxl.ops as ops
from workbench.analysis import tensor_liveness
from workbench.analysis.code_size import CODE_BYTES

F32 = np.float32


def code(*op_types):
    return sum(CODE_BYTES[op_type] for op_type in op_types)


def column(liveness, field, ipu=0):
    return [getattr(record, field) for record in liveness.steps[ipu]]


def run(ir, inputs=None):
    with popxl.Session(ir, "ipu_model") as session:
        return session.run(inputs or {})


def test_a_chain_of_ops():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1, 2, 3, 4], F32), name="x")  # 16 bytes
        in_stream = popxl.h2d_stream([4], popxl.float32, name="in")
        a = ops.host_load(in_stream, "a")  # step 0 (a's undefined init), step 1 (the load)
        b = a * x                          # step 2
        c = b + 1                          # step 3, and a 4-byte constant
        out = popxl.d2h_stream(c.shape, c.dtype, name="c")
        ops.host_store(out, c)             # step 4
    a_init = a.producer.inputs[0]

    liveness = tensor_liveness(ir)
    chain_code = code("host_load", "mul", "add", "host_store")  # an undefined init has no code
    assert liveness.ipus == [0]
    assert column(liveness, "variables") == [16] * 5
    assert column(liveness, "constants") == [4] * 5
    assert column(liveness, "intermediates") == [16, 32, 32, 32, 16]
    assert column(liveness, "code") == [chain_code] * 5
    assert [record.tensors for record in liveness.steps[0]] == [{a_init}, {a_init, a}, {a, b}, {b, c}, {c}]
    assert liveness.totals() == [16 + 4 + 16 + chain_code, 16 + 4 + 32 + chain_code, 16 + 4 + 32 + chain_code,
                                 16 + 4 + 32 + chain_code, 16 + 4 + 16 + chain_code]
    assert [(al.tensor, al.start, al.end) for al in liveness.at(2).live] == [(a, 1, 2), (b, 2, 3)]

    data = np.array([1, 1, 1, 1], F32)
    np.testing.assert_array_equal(run(ir, {in_stream: data})[out], data * np.array([1, 2, 3, 4], F32) + 1)


def test_variables_are_always_live_and_a_subgraph_constant_counts_once():
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.zeros((2, 2), F32), name="w")    # 16 bytes
        unused = popxl.variable(np.zeros(8, np.int32), name="unused")  # 32 bytes
        g = ir.create_graph(lambda t: t + 1, w)               # a 4-byte constant in g
        (a,) = ops.call(g, w)  # steps 0 (call) and 1 (add in g)
        (b,) = ops.call(g, a)  # steps 2 (call) and 3 (add in g)

    liveness = tensor_liveness(ir)
    assert column(liveness, "variables") == [48, 48, 48, 48]
    assert column(liveness, "constants") == [4, 4, 4, 4]
    # a is made at step 1 inside g and read by the add of the second call (step 3)
    assert column(liveness, "intermediates") == [0, 16, 16, 32]
    assert {al.tensor for al in liveness.always_live()} == {w, unused, g.constants[0]}
    assert {al.tensor for al in liveness.live_at(0)} == {w, unused, g.constants[0]}


def test_in_place_ops_share_their_input_memory():
    def program(in_place):
        ir = popxl.Ir()
        with ir.main_graph:
            in_stream = popxl.h2d_stream([4], popxl.float32, name="in")
            a = ops.host_load(in_stream, "a")                         # steps 0 (init) and 1
            b = ops.add_(a, popxl.constant(1.0)) if in_place else a + popxl.constant(1.0)  # step 2
            c = ops.relu_(b) if in_place else ops.relu(b)             # step 3
            out = popxl.d2h_stream(c.shape, c.dtype, name="c")
            ops.host_store(out, c)                                    # step 4
        return ir, in_stream, out, (a, b, c)

    ir, in_stream, out, (a, b, c) = program(in_place=True)
    liveness = tensor_liveness(ir)
    # the load's undefined target (steps 0-1) is not the loaded tensor
    assert column(liveness, "intermediates") == [16, 32, 16, 16, 16]
    (target, allocation) = [al for al in liveness.allocations if al.kind == "intermediate"]
    assert target.tensor is a.producer.inputs[0] and (target.start, target.end) == (0, 1)
    assert allocation.tensor is a and allocation.aliases == [b, c]
    assert (allocation.start, allocation.end) == (1, 4)
    data = np.array([-2, -1, 0, 1], F32)
    np.testing.assert_array_equal(run(ir, {in_stream: data})[out], np.maximum(data + 1, 0))

    ir, *_ = program(in_place=False)
    assert column(tensor_liveness(ir), "intermediates") == [16, 32, 32, 32, 16]


def test_subgraph_inputs_are_the_parent_tensors_and_call_outputs_the_callee_outputs():
    ir = popxl.Ir()
    with ir.main_graph:
        in_stream = popxl.h2d_stream([4], popxl.float32, name="in")
        a = ops.host_load(in_stream, "a")  # steps 0 (init) and 1
        g = ir.create_graph(lambda t: t * 2, a)
        (b,) = ops.call(g, a)              # step 2 (call), step 3 (mul in g)
        out = popxl.d2h_stream(b.shape, b.dtype, name="b")
        ops.host_store(out, b)             # step 4

    liveness = tensor_liveness(ir)
    # a lives until g reads it (step 3); g's output is b, from step 3 to the host_store
    assert column(liveness, "intermediates") == [16, 32, 16, 32, 16]
    g_output = g.outputs[0]
    assert liveness.at(3).tensors == {a, g_output}
    (shared,) = [al for al in liveness.allocations if al.tensor is g_output]
    assert shared.aliases == [b] and (shared.start, shared.end) == (3, 4)
    assert shared.frame.graph is g and shared.frame.call_site is b.producer


def test_a_subgraph_writing_its_input_in_place_uses_the_parent_memory():
    def increment(t: popxl.TensorByRef):
        return ops.add_(t, popxl.constant(1.0))

    ir = popxl.Ir()
    with ir.main_graph:
        in_stream = popxl.h2d_stream([4], popxl.float32, name="in")
        a = ops.host_load(in_stream, "a")  # steps 0 (init) and 1
        g = ir.create_graph(increment, a)
        (b,) = ops.call(g, a)              # step 2 (call), step 3 (add_ in g)
        out = popxl.d2h_stream(b.shape, b.dtype, name="b")
        ops.host_store(out, b)             # step 4

    liveness = tensor_liveness(ir)
    assert column(liveness, "intermediates") == [16, 32, 16, 16, 16]
    (_, allocation) = [al for al in liveness.allocations if al.kind == "intermediate"]
    assert allocation.tensor is a and allocation.aliases == [g.outputs[0], b]
    data = np.array([0, 1, 2, 3], F32)
    np.testing.assert_array_equal(run(ir, {in_stream: data})[out], data + 1)


def test_a_repeat_body_reads_its_inputs_until_the_loop_ends():
    ir = popxl.Ir()
    with ir.main_graph:
        in_stream = popxl.h2d_stream([4], popxl.float32, name="in")
        a = ops.host_load(in_stream, "a")        # steps 0 (init) and 1
        body = ir.create_graph(lambda t: t * 2 + 1, a)
        (y,) = ops.repeat(body, 3, a)            # step 2 (repeat), 3 (mul), 4 (add)
        out = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(out, y)                   # step 5

    liveness = tensor_liveness(ir)
    # a's target: 0-1, a: 1-4 (the whole loop), t * 2: 3-4, the body output (y): 4-5
    assert column(liveness, "intermediates") == [16, 32, 16, 32, 48, 16]
    assert column(liveness, "constants") == [8] * 6
    data = np.array([0, 1, 2, 3], F32)
    np.testing.assert_array_equal(run(ir, {in_stream: data})[out], 8 * data + 7)


def test_the_outputs_of_both_branches_are_one_allocation():
    ir = popxl.Ir()
    with ir.main_graph:
        flag = popxl.variable(False, popxl.bool, name="flag")  # 1 byte
        in_stream = popxl.h2d_stream([4], popxl.float32, name="in")
        a = ops.host_load(in_stream, "a")                    # steps 0 (init) and 1
        then_graph = ir.create_graph(lambda t: t + 1, a)
        else_graph = ir.create_graph(lambda t: t * 2, a)
        (b,) = ops.conditional(flag, then_graph, else_graph, [a], [a])  # 2, 3 (add), 4 (mul)
        out = popxl.d2h_stream(b.shape, b.dtype, name="b")
        ops.host_store(out, b)                               # step 5

    liveness = tensor_liveness(ir)
    assert column(liveness, "variables") == [1] * 6
    assert column(liveness, "intermediates") == [16, 32, 16, 32, 32, 16]
    (merged,) = [al for al in liveness.allocations if al.tensor is then_graph.outputs[0]]
    assert merged.aliases == [else_graph.outputs[0], b] and (merged.start, merged.end) == (3, 5)
    data = np.array([0, 1, 2, 3], F32)
    np.testing.assert_array_equal(run(ir, {in_stream: data})[out], data * 2)


def test_each_ipu_counts_its_own_tensors_and_code():
    ir = popxl.Ir()
    with ir.main_graph:
        w0 = popxl.variable(np.ones(4, F32), name="w0")           # IPU 0: 16 bytes
        with popxl.ipu(1):
            w1 = popxl.variable(np.ones((2, 4), F32), name="w1")  # IPU 1: 32 bytes
            y = w1 * 2                                            # step 0, IPU 1, and a constant
            y_stream = popxl.d2h_stream(y.shape, y.dtype, name="y")
            ops.host_store(y_stream, y)                           # step 1, IPU 1
        z = w0 + 1                                                # step 2, IPU 0, and a constant
        z_stream = popxl.d2h_stream(z.shape, z.dtype, name="z")
        ops.host_store(z_stream, z)                               # step 3, IPU 0

    liveness = tensor_liveness(ir)
    assert liveness.ipus == [0, 1]
    assert column(liveness, "variables", ipu=0) == [16] * 4
    assert column(liveness, "variables", ipu=1) == [32] * 4
    assert column(liveness, "constants", ipu=0) == column(liveness, "constants", ipu=1) == [4] * 4
    assert column(liveness, "intermediates", ipu=0) == [0, 0, 16, 16]
    assert column(liveness, "intermediates", ipu=1) == [32, 32, 0, 0]
    assert column(liveness, "code", ipu=0) == [code("add", "host_store")] * 4
    assert column(liveness, "code", ipu=1) == [code("mul", "host_store")] * 4
    assert liveness.at(0, ipu=1).tensors == {y} and liveness.at(0, ipu=0).tensors == frozenset()

    outputs = run(ir)
    np.testing.assert_array_equal(outputs[y_stream], np.full((2, 4), 2, F32))
    np.testing.assert_array_equal(outputs[z_stream], np.full(4, 2, F32))


def test_code_bytes_follow_code_liveness():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, F32), name="x")
        g = ir.create_graph(lambda t: t + 1, x)
        with popxl.in_sequence():
            y = x * 2                                           # step 0
            ops.remote_code_load(g, destination="executable")  # step 1
            ops.call(g, x)                                      # steps 2 (call), 3 (add in g)
            y = y * 2                                           # step 4

    main_code = code("mul", "remote_code_load", "call", "mul")
    assert column(tensor_liveness(ir), "code") == [main_code] + [main_code + code("add")] * 3 + [main_code]
