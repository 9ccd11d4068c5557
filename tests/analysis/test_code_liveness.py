"""Code loading (graphs reference, section 9.7): the remote_code_load op, and when each graph's code is
live over the flattened schedule. Expected step numbers are worked out by hand in the comments."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.analysis import code_liveness, flattened_schedule, verify


def add_one(t: popxl.Tensor) -> popxl.Tensor:
    return t + 1


def steps_of(ir):
    """(op type, graph) of each step of the flattened schedule."""
    return [(step.op.type, step.graph) for step in flattened_schedule(ir)]


# ----- the op -----
def test_remote_code_load_is_reachable_but_not_in_all():
    assert callable(ops.remote_code_load)
    assert "remote_code_load" not in ops.__all__


def test_remote_code_load_records_the_graph_without_calling_it():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        g = ir.create_graph(add_one, x)
        with popxl.in_sequence():
            result = ops.remote_code_load(g, destination="executable")
            (y,) = ops.call(g, x)
    load = ir.main_graph.ops[0]
    assert result is None
    assert load.type == "remote_code_load"
    assert load.attrs == {"graph": g, "destination": "executable"}
    assert load.called_graphs == () and load.inputs == () and load.outputs == ()
    assert ir.main_graph.called_graphs == (g,)
    verify(ir)


def test_remote_code_load_changes_no_number():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.0, 2.0], np.float32), name="x")
        g = ir.create_graph(add_one, x)
        with popxl.in_sequence():
            ops.remote_code_load(g, destination="executable")
            (y,) = ops.call(g, x)
            ops.remote_code_load(g, destination="executable")
            (z,) = ops.call(g, y)
        y_stream = popxl.d2h_stream(z.shape, z.dtype, name="z")
        ops.host_store(y_stream, z)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    np.testing.assert_array_equal(outputs[y_stream], np.array([1.0, 2.0], np.float32) + 2)


@pytest.mark.parametrize("destination", ["compute_buffer", "io_buffer"])
def test_only_the_executable_destination_is_implemented(destination):
    ir = popxl.Ir()
    g = ir.create_empty_graph("g")
    with ir.main_graph:
        with pytest.raises(NotImplementedError, match=destination):
            ops.remote_code_load(g, destination=destination)
    assert ir.main_graph.ops == ()


def test_remote_code_load_refuses_bad_arguments():
    ir = popxl.Ir()
    g = ir.create_empty_graph("g")
    with ir.main_graph:
        with pytest.raises(ValueError, match="executable, compute_buffer, io_buffer"):
            ops.remote_code_load(g, destination="tiles")
        with pytest.raises(TypeError, match="Graph"):
            ops.remote_code_load("g", destination="executable")
    with g:
        with pytest.raises(ValueError, match="^The remote_code_load op cannot load the code .* its own code"):
            ops.remote_code_load(g, destination="executable")
    other = popxl.Ir().create_empty_graph("other")
    with ir.main_graph:
        with pytest.raises(ValueError, match="another Ir"):
            ops.remote_code_load(other, destination="executable")
    assert ir.main_graph.ops == () and g.ops == ()


# ----- listings 9.7 to 9.10 -----
def test_listing_9_7_code_is_live_from_the_load_to_the_last_call():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        g = ir.create_graph(add_one, x)
        # (1) insert many ops ...
        y = x * 2
        with popxl.in_sequence():
            # (2) load the code from remote memory into compute tiles on-chip
            ops.remote_code_load(g, destination="executable")
            ops.call(g, x)
            # insert more ops...
            y = y + 1
            # call the graph again
            ops.call(g, x)
            # (3) call the graph for the final time
            ops.call(g, x)

    main = ir.main_graph
    assert steps_of(ir) == [("mul", main),               # 0  (1): dead
                            ("remote_code_load", main),  # 1  (2): live
                            ("call", main), ("add", g),  # 2, 3
                            ("add", main),               # 4
                            ("call", main), ("add", g),  # 5, 6
                            ("call", main), ("add", g)]  # 7, 8  (3): last call
    code = code_liveness(ir)
    assert code[g].intervals == [(1, 8)]
    assert code[g].load_steps == [1] and code[g].call_steps == [2, 5, 7]
    assert not code[g].always_live and not code[g].is_live(0)
    assert code[ir.main_graph].always_live and code[ir.main_graph].intervals == [(0, 8)]


def test_listing_9_8_a_load_before_every_call_keeps_the_code_dead_between_calls():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        g = ir.create_graph(add_one, x)
        with popxl.in_sequence():
            y = x * 2  # Dead...
            ops.remote_code_load(g, destination="executable")  # Live
            ops.call(g, x)
            y = y * 2  # Dead again, due to a subsequent load...
            ops.remote_code_load(g, destination="executable")  # Live again
            ops.call(g, x)
            y = y * 2  # Dead again, due to a subsequent load...
            ops.remote_code_load(g, destination="executable")  # Live again
            ops.call(g, x)
            y = y * 2  # Dead again, as graph never called again

    main = ir.main_graph
    assert steps_of(ir) == [("mul", main),                                           # 0
                            ("remote_code_load", main), ("call", main), ("add", g),  # 1-3
                            ("mul", main),                                           # 4
                            ("remote_code_load", main), ("call", main), ("add", g),  # 5-7
                            ("mul", main),                                           # 8
                            ("remote_code_load", main), ("call", main), ("add", g),  # 9-11
                            ("mul", main)]                                           # 12
    code = code_liveness(ir)[g]
    assert code.intervals == [(1, 3), (5, 7), (9, 11)]
    assert code.load_steps == [1, 5, 9] and code.call_steps == [2, 6, 10]
    assert [step for step in range(13) if not code.is_live(step)] == [0, 4, 8, 12]


def expensive_id(x: popxl.Tensor) -> popxl.Tensor:
    return x.T.T


def test_listing_9_9_a_load_inside_a_called_graph_happens_at_its_call():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((2, 3), np.float32), name="x")
    g1 = ir.create_graph(expensive_id, x.spec)

    def load_g1():
        ops.remote_code_load(g1, destination="executable")

    g2 = ir.create_graph(load_g1)
    with ir.main_graph, popxl.in_sequence():
        # Loads code for g1
        ops.remote_code_load(g1, destination="executable")
        # Loads code for g1 again, from inside g2
        ops.call(g2)
        # Execute g1
        ops.call(g1, x)

    main = ir.main_graph
    assert steps_of(ir) == [("remote_code_load", main),                # 0
                            ("call", main), ("remote_code_load", g2),  # 1, 2
                            ("call", main), ("transpose", g1),         # 3, 4
                            ("transpose", g1)]                         # 5
    code = code_liveness(ir)
    # The first load is followed by another load before any call: live only while loading.
    assert code[g1].intervals == [(0, 0), (2, 5)]
    assert code[g1].load_steps == [0, 2] and code[g1].call_steps == [3]
    assert code[g2].always_live and code[g2].intervals == [(0, 5)] and code[g2].call_steps == [1]


def load_graph(g: popxl.Graph):
    ops.remote_code_load(g, destination="executable")


def test_listing_9_10_graphs_that_load_other_graphs():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((2, 3), np.float32), name="x")
    g1 = ir.create_graph(expensive_id, x.spec)
    g2 = ir.create_graph(lambda: ops.remote_code_load(g1, destination="executable"))
    g3 = ir.create_graph(load_graph, g1)
    g4 = ir.create_graph(load_graph, g2)
    with ir.main_graph, popxl.in_sequence():
        ops.remote_code_load(g3, destination="executable")
        ops.call(g3)
        ops.remote_code_load(g4, destination="executable")
        ops.call(g4)

    main = ir.main_graph
    assert steps_of(ir) == [("remote_code_load", main),                # 0
                            ("call", main), ("remote_code_load", g3),  # 1, 2: g1
                            ("remote_code_load", main),                # 3
                            ("call", main), ("remote_code_load", g4)]  # 4, 5: g2
    code = code_liveness(ir)
    assert code[g3].intervals == [(0, 2)] and code[g3].call_steps == [1]
    assert code[g4].intervals == [(3, 5)] and code[g4].call_steps == [4]
    # g1 and g2 are loaded but never called: live only at their loads.
    assert code[g1].intervals == [(2, 2)] and code[g1].call_steps == []
    assert code[g2].intervals == [(5, 5)] and code[g2].load_steps == [5]
    assert code[ir.main_graph].intervals == [(0, 5)]


# ----- branches (9.7.5) -----
def test_a_load_in_only_one_branch_is_disregarded():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        flag = popxl.variable(True, popxl.bool, name="flag")
        g = ir.create_graph(add_one, x)
        loader = ir.create_graph(lambda: ops.remote_code_load(g, destination="executable"))
        idle = ir.create_empty_graph("idle")
        with popxl.in_sequence():
            ops.remote_code_load(g, destination="executable")
            y = x * 2
            ops.conditional(flag, loader, idle)
            ops.call(g, x)

    main = ir.main_graph
    assert steps_of(ir) == [("remote_code_load", main),    # 0
                            ("mul", main),                 # 1
                            ("conditional", main),         # 2  else-branch: no ops
                            ("remote_code_load", loader),  # 3  then-branch
                            ("call", main), ("add", g)]    # 4, 5
    code = code_liveness(ir)[g]
    # The else-branch does not load, so the code was live before the branching: since the load at 0.
    assert code.intervals == [(0, 5)]
    assert code.load_steps == [0, 3] and code.ignored_load_steps == [3]


def test_a_load_in_every_branch_keeps_the_code_dead_until_it():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        flag = popxl.variable(True, popxl.bool, name="flag")
        g = ir.create_graph(add_one, x)
        then_loader = ir.create_graph(lambda: ops.remote_code_load(g, destination="executable"))
        else_loader = ir.create_graph(lambda: ops.remote_code_load(g, destination="executable"))
        with popxl.in_sequence():
            y = x * 2
            ops.conditional(flag, then_loader, else_loader)
            ops.call(g, x)

    main = ir.main_graph
    assert steps_of(ir) == [("mul", main),                      # 0
                            ("conditional", main),              # 1
                            ("remote_code_load", then_loader),  # 2  then
                            ("remote_code_load", else_loader),  # 3  else
                            ("call", main), ("add", g)]         # 4, 5
    code = code_liveness(ir)[g]
    assert code.intervals == [(2, 2), (3, 5)]
    assert code.ignored_load_steps == []
    assert not code.is_live(0) and not code.is_live(1)


def test_a_branch_graph_is_live_for_the_whole_conditional():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        flag = popxl.variable(False, popxl.bool, name="flag")
        then_graph = ir.create_graph(add_one, x)
        else_graph = ir.create_graph(lambda t: t * 3, x)
        with popxl.in_sequence():
            ops.remote_code_load(then_graph, destination="executable")
            ops.conditional(flag, then_graph, else_graph, [x], [x])
            y = x * 2

    # 0 load | 1 conditional | 2 add (then) | 3 mul (else) | 4 mul
    code = code_liveness(ir)[then_graph]
    assert code.intervals == [(0, 3)] and code.call_steps == [1]


# ----- without loads, and loops -----
def test_a_graph_without_loads_is_always_live_and_an_unused_graph_has_no_code():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        g = ir.create_graph(add_one, x)
        unused = ir.create_graph(add_one, x)
        y = x * 2
        ops.call(g, x)
        ops.call(g, y)

    # 0 mul | 1 call, 2 add | 3 call, 4 add
    code = code_liveness(ir)
    assert code[g].always_live and code[g].intervals == [(0, 4)]
    assert code[g].call_steps == [1, 3] and code[g].load_steps == []
    assert not code[unused].always_live and code[unused].intervals == []


@pytest.mark.parametrize("repeat_count, intervals", [(3, [(0, 4)]), (1, [(0, 3)])])
def test_a_repeat_body_keeps_the_code_live_for_its_next_iteration(repeat_count, intervals):
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        g = ir.create_graph(add_one, x)

        def body(t):
            (u,) = ops.call(g, t)
            return u * 2

        body_graph = ir.create_graph(body, x)
        with popxl.in_sequence():
            ops.remote_code_load(g, destination="executable")
            (y,) = ops.repeat(body_graph, repeat_count, x)
            z = y * 2

    main = ir.main_graph
    assert steps_of(ir) == [("remote_code_load", main),        # 0
                            ("repeat", main),                  # 1
                            ("call", body_graph), ("add", g),  # 2, 3
                            ("mul", body_graph),               # 4: another call follows
                            ("mul", main)]                     # 5
    assert code_liveness(ir)[g].intervals == intervals


def test_an_undefined_init_has_no_code_and_a_zero_init_runs_a_fill():
    from workbench.analysis.code_size import CODE_BYTES, graph_code_bytes

    ir = popxl.Ir()
    with ir.main_graph:
        ops.init([4], popxl.float32, "undefined", "undef")
    assert graph_code_bytes(ir.main_graph) == {0: 0}
    with ir.main_graph:
        ops.init([4], popxl.float32, "zeros", "zero")
    assert graph_code_bytes(ir.main_graph) == {0: CODE_BYTES["init"]}
    with ir.main_graph:  # a host load's target is an undefined init: only the load has code
        ops.host_load(popxl.h2d_stream([4], popxl.float32, name="x"))
    assert graph_code_bytes(ir.main_graph) == {0: CODE_BYTES["init"] + CODE_BYTES["host_load"]}
