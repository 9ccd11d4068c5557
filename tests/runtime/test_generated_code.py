"""The generated code reads like hand-written NumPy: one line per op, named in a comment, and a
traceback through it shows the line of the op that failed."""
import re
import traceback

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.runtime.execution.plan import plan_graph
from workbench.runtime.replication.replicas import ReplicaExecutionError


def small_ir():
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2], popxl.float32, name="x")
        x = ops.host_load(x_stream)
        w = popxl.variable(np.ones(2, np.float32), name="w")
        y = ops.add(x, w)
        index = ops.host_load(popxl.h2d_stream([1], popxl.int32, name="index"))
        picked = ops.gather(y, index)  # an index out of range fails at run time
        out = popxl.d2h_stream(picked.shape, picked.dtype, name="out")
        ops.host_store(out, picked)
    return ir, x_stream, out, y


def test_each_line_names_its_op_and_slots_are_reused_once_their_value_is_dead():
    ir, _, _, _ = small_ir()
    with popxl.Session(ir, "ipu_model") as session:
        code = session.graph_code[ir.main_graph]
    init_x, load_x, add, init_index, load_index, gather, store = (f"{op.name} ({op.type})" for op in code.steps)
    assert code.source == (
        "def run(V):\n"
        "    t0 = V[0]  # w\n"
        f"    t1 = k0()  # {init_x}\n"
        f"    t1 = k1(t1)  # {load_x}\n"
        f"    t0 = k2(t1, t0)  # {add}\n"
        f"    t1 = k3()  # {init_index}\n"
        f"    t1 = k4(t1)  # {load_index}\n"
        f"    t1 = k5(t0, t1)  # {gather}\n"
        f"    k6(t1)  # {store}\n"
        "    return ()\n")


def test_a_traceback_shows_the_generated_line_of_the_failing_op():
    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=2)
        index = ops.host_load(popxl.h2d_stream([], popxl.int32, name="index"))
        loaded = ops.remote_load(buffer, index)  # an entry out of range fails at run time
        out = popxl.d2h_stream(loaded.shape, loaded.dtype, name="out")
        ops.host_store(out, loaded)
    index_stream = ir.get_all_h2d_streams().pop()
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(ReplicaExecutionError, match="remote_load") as caught:
            session.run({index_stream: np.array(5, np.int32)})
    load = caught.value.op
    text = "".join(traceback.format_exception(caught.value.__cause__))
    assert re.search(rf"= k\d+\(t\d+, t\d+\)  # {re.escape(load.name)} \(remote_load\)", text)


def test_interpreter_and_generated_code_read_one_plan():
    ir, _, _, y = small_ir()
    plan = plan_graph(ir.main_graph)
    with popxl.Session(ir, "ipu_model") as session:
        code = session.graph_code[ir.main_graph]
    assert [s.op for s in code.plan.plan_steps] == [s.op for s in plan.plan_steps]
    # y (the add) dies at its only reader, the gather: its slot is free from then on.
    gather = next(s for s in code.plan.plan_steps if s.op.type == "gather")
    assert y in gather.released
