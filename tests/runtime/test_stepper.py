"""Stepping a run op by op: the same outputs and weights as ``session.run``, stops before each op with
the live values of every replica, breakpoints, events, reset and the errors a person can meet."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.analysis import flattened_schedule
from workbench.runtime.replication.communicator import CollectiveMismatchError
from workbench.runtime.replication.replicas import ReplicaExecutionError
from support.faulty_ops import exploding_op  # noqa: F401  (a fixture)

TRANSFERS = 3
W0 = np.arange(9, dtype=np.float32).reshape(3, 3) / 10


class Model:
    """Per run: a repeat loads one x per iteration and sums ``x @ w`` (all-reduced over the replicas
    with ``collectives``), a call doubles the sum, a conditional adds or subtracts 1 by a loaded flag,
    ``w`` is updated in place from the result, and the result is stored (the last op)."""

    def __init__(self, replicas=1, collectives=False):
        self.ir = ir = popxl.Ir(replication=replicas)
        with ir.main_graph:
            self.x_stream = popxl.h2d_stream([2, 3], popxl.float32, name="x")
            self.flag_stream = popxl.h2d_stream([], popxl.bool, name="flag")
            self.w = w = popxl.variable(W0, name="w")

            def body(acc, weight):
                h = ops.host_load(self.x_stream) @ weight
                if collectives:
                    h = ops.collectives.replicated_all_reduce(h)
                return acc + h

            self.loop = ir.create_graph(body, popxl.TensorSpec((2, 3), popxl.float32), w)
            zeros = ops.init([2, 3], popxl.float32, "zeros")
            (total,) = ops.repeat(self.loop, TRANSFERS, zeros, inputs_dict={self.loop.inputs[1]: w})
            self.double = ir.create_graph(lambda t: t * 2, total)
            (doubled,) = ops.call(self.double, total)
            self.then_graph = ir.create_graph(lambda t: t + 1, doubled)
            self.else_graph = ir.create_graph(lambda t: t - 1, doubled)
            flag = ops.host_load(self.flag_stream)
            (self.y,) = ops.conditional(flag, self.then_graph, self.else_graph, [doubled], [doubled])
            ops.var_updates.accumulate_(w, ops.transpose(self.y) @ self.y * 0.01)
            self.y_stream = popxl.d2h_stream(self.y.shape, self.y.dtype, name="y")
            ops.host_store(self.y_stream, self.y)
        ir.num_host_transfers = TRANSFERS

    def inputs(self, flags=(True,), seed=0):
        replicas = self.ir.replication_factor
        x = np.random.default_rng(seed).standard_normal((TRANSFERS, replicas, 2, 3)).astype(np.float32)
        flag = np.broadcast_to(np.array(flags, bool), (TRANSFERS, replicas)).copy()
        squeeze = (lambda a: a[:, 0]) if replicas == 1 else (lambda a: a)
        return {self.x_stream: squeeze(x), self.flag_stream: squeeze(flag)}

    def op(self, graph, op_type):
        return next(op for op in graph.ops if op.type == op_type)


def expected_single(inputs, model):
    x, flag = inputs[model.x_stream], inputs[model.flag_stream][0]
    doubled = 2 * sum(x[i] @ W0 for i in range(TRANSFERS))
    y = doubled + 1 if flag else doubled - 1
    return y, W0 + y.T @ y * np.float32(0.01)


def finish(stepper, command):
    count = 0
    while not stepper.finished:
        getattr(stepper, command)()
        count += 1
    return count


def run_once(make_model, inputs_of):
    """Outputs and weights of ``session.run`` on a fresh model."""
    model = make_model()
    with popxl.Session(model.ir, "ipu_model") as session:
        outputs = session.run(inputs_of(model))
        return outputs[model.y_stream], session.get_tensor_data(model.w)


# ----- a stepped run is a run -----
@pytest.mark.parametrize("command", ["step", "step_over", "step_out", "continue_"])
def test_stepping_gives_exactly_the_outputs_and_weights_of_run(command):
    ran_y, ran_w = run_once(Model, lambda m: m.inputs())
    model = Model()
    inputs = model.inputs()
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(inputs)
        finish(stepper, command)
        np.testing.assert_array_equal(stepper.outputs[model.y_stream], ran_y)
        np.testing.assert_array_equal(session.get_tensor_data(model.w), ran_w)
    y, w = expected_single(inputs, model)
    np.testing.assert_allclose(ran_y[0], y, rtol=1e-5)  # one store: transfer 0
    np.testing.assert_allclose(ran_w, w, rtol=1e-5)


@pytest.mark.parametrize("command", ["step", "step_over", "continue_"])
def test_replicated_stepping_with_collectives_gives_the_outputs_of_run(command):
    flags = (True, False, True, False)
    make = lambda: Model(replicas=4, collectives=True)
    ran_y, ran_w = run_once(make, lambda m: m.inputs(flags))
    model = make()
    inputs = model.inputs(flags)
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(inputs)
        finish(stepper, command)
        np.testing.assert_array_equal(stepper.outputs[model.y_stream], ran_y)
        np.testing.assert_array_equal(session.get_tensor_data(model.w), ran_w)
    x = inputs[model.x_stream]
    doubled = 2 * sum(x[i].sum(axis=0) @ W0 for i in range(TRANSFERS))
    for replica, flag in enumerate(flags):
        np.testing.assert_allclose(ran_y[0, replica], doubled + (1 if flag else -1), rtol=1e-5)


def test_a_stepped_run_counts_as_a_run_and_makes_the_host_weights_stale():
    model = Model()
    with popxl.Session(model.ir, "ipu_model") as session:
        transfers = session.weights_to_host_count
        stepper = session.stepper(model.inputs())
        stepper.continue_()
        assert session.run_count == 1
        np.testing.assert_allclose(session.get_tensor_data(model.w), expected_single(model.inputs(), model)[1],
                                   rtol=1e-5)
        assert session.weights_to_host_count == transfers + 1


def test_a_stepped_run_leaves_the_same_trace_as_run():
    flags = (True, False)
    make = lambda: Model(replicas=2)
    reference = make()
    with popxl.Session(reference.ir, "ipu_model") as session:
        session.run(reference.inputs(flags))
        ran = [(e.replica, e.op.name, e.step, e.iterations) for e in session.last_trace]
    model = make()
    with popxl.Session(model.ir, "ipu_model") as session:
        finish(session.stepper(model.inputs(flags)), "step")
        assert [(e.replica, e.op.name, e.step, e.iterations) for e in session.last_trace] == ran


# ----- step into, step over, step out -----
def counting_ir():
    """main: init, host_load, call(g: mul, add), repeat(h: add) x 3, host_store."""
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2], popxl.float32, name="x")
        x = ops.host_load(x_stream)
        g = ir.create_graph(lambda t: t * 2 + 1, x)
        (y,) = ops.call(g, x)
        h = ir.create_graph(lambda t: t + 1, y)
        (z,) = ops.repeat(h, 3, y)
        out = popxl.d2h_stream(z.shape, z.dtype, name="z")
        ops.host_store(out, z)
    return ir, x_stream, out, g, h


def test_step_enters_calls_and_each_repeat_iteration_while_step_over_runs_them_whole():
    ir, x_stream, out, g, h = counting_ir()
    data = np.array([1, 2], np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        into = session.stepper({x_stream: data})
        assert finish(into, "step") == 5 + 2 + 3   # main ops, g's 2 ops, h's op three times
        over = session.stepper({x_stream: data})
        assert finish(over, "step_over") == 5
        assert over.stop.actions == 5 and into.stop.actions == 10
        np.testing.assert_array_equal(into.outputs[out], data * 2 + 1 + 3)
        np.testing.assert_array_equal(over.outputs[out], data * 2 + 1 + 3)


def test_step_stops_in_the_called_graph_and_step_out_returns_to_the_caller():
    ir, x_stream, out, g, h = counting_ir()
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper({x_stream: np.zeros(2, np.float32)})
        assert stepper.stop.op.type == "init" and stepper.stop.status == "ready"
        assert stepper.step().op.type == "host_load"
        stepper.step()
        call = stepper.stop.op
        assert call.type == "call"
        stop = stepper.step()
        assert stop.position.graph is g and stop.position.depth == 1 and stop.position.call_path == (call,)
        assert stop.position.frames[1].kind == "call"
        stop = stepper.step_out()
        assert stop.op.type == "repeat" and stop.position.depth == 0
        stepper.step()
        stepper.step()
        stop = stepper.stop
        assert stop.position.graph is h and stop.position.iterations == (1,)
        stop = stepper.step_out()
        assert stop.op.type == "host_store"


def test_the_conditional_enters_only_the_branch_each_replica_takes():
    model = Model(replicas=2)
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(model.inputs((True, False)))
        stop = stepper.run_to(op_type="conditional")
        stop = stepper.step()
        graphs = [r.position.graph for r in stop.replicas]
        assert graphs == [model.then_graph, model.else_graph]
        assert [r.position.frames[-1].kind for r in stop.replicas] == ["then", "else"]


def in_place_ir(mark_modified):
    """A call that writes its input in place (by reference with ``mark_modified``, else on a copy),
    then a repeat whose body writes its carried input in place and returns it."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        x = popxl.variable(np.ones(2, np.float32), name="x")

        def increment(t):
            ops.var_updates.copy_var_update_(t, t + popxl.graph_input(t.shape, t.dtype, "value"))

        info = ops.call_with_info(ir.create_graph(increment, x), x, popxl.constant(np.ones(2, np.float32)))
        if mark_modified:
            info.set_parent_input_modified(x)

        def bump(t):
            ops.var_updates.accumulate_(t, popxl.constant(np.full(2, 10, np.float32)))
            return t

        (y,) = ops.repeat(ir.create_graph(bump, x), 3, x)
        out = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(out, y)
    return ir, x, out


@pytest.mark.parametrize("mark_modified", [True, False])
def test_stepping_into_in_place_calls_keeps_their_by_reference_and_by_value_semantics(mark_modified):
    ir, x, out = in_place_ir(mark_modified)
    with popxl.Session(ir, "ipu_model") as session:
        ran = session.run()[out]
        ran_x = session.get_tensor_data(x)
    ir, x, out = in_place_ir(mark_modified)
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper()
        finish(stepper, "step")
        np.testing.assert_array_equal(stepper.outputs[out], ran)
        np.testing.assert_array_equal(session.get_tensor_data(x), ran_x)
    start = 2 if mark_modified else 1
    np.testing.assert_array_equal(ran, np.full(2, start + 30))
    np.testing.assert_array_equal(ran_x, np.full(2, start))


def test_stepping_a_repeat_whose_body_returns_another_input_never_writes_through_to_it():
    """Iteration 0 returns input ``c``; iteration 1 writes that carried value in place, which must be
    a copy, not the variable ``c`` itself."""
    def build():
        ir = popxl.Ir()
        with ir.main_graph:
            t = popxl.variable(np.zeros(2, np.float32), name="t")
            c = popxl.variable(np.full(2, 5, np.float32), name="c")

            def body(carried, other):
                ops.var_updates.accumulate_(carried, popxl.constant(np.full(2, 10, np.float32)))
                return other

            (y,) = ops.repeat(ir.create_graph(body, t, c), 3, t, c)
            out = popxl.d2h_stream(y.shape, y.dtype, name="y")
            ops.host_store(out, y)
        return ir, c, out

    ir, c, out = build()
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper()
        finish(stepper, "step")
        np.testing.assert_array_equal(stepper.outputs[out], np.full(2, 5))
        np.testing.assert_array_equal(session.get_tensor_data(c), np.full(2, 5))


def test_stepping_out_of_a_graph_that_returns_its_input_hands_back_a_copy():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        x_stream = popxl.h2d_stream([2], popxl.float32, name="x")
        x = ops.host_load(x_stream)
        (y,) = ops.call(ir.create_graph(lambda t: t, x), x)
        ops.add_(y, popxl.constant(np.ones(2, np.float32)))
        out = popxl.d2h_stream(x.shape, x.dtype, name="x_out")
        ops.host_store(out, x)
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper({x_stream: np.array([1, 2], np.float32)})
        finish(stepper, "step")
        np.testing.assert_array_equal(stepper.outputs[out], [1, 2])


# ----- positions -----
def test_positions_point_into_the_graph_schedule_and_the_flattened_schedule():
    model = Model()
    flat = flattened_schedule(model.ir)
    with popxl.Session(model.ir, "ipu_model") as session:
        code = session.graph_code
        stepper = session.stepper(model.inputs())
        seen = []
        while not stepper.finished:
            position = stepper.stop.position
            assert code[position.graph].steps[position.index] is position.op
            step = flat[position.flat_index]
            assert step.op is position.op and step.call_path == position.call_path
            seen.append(position.flat_index)
            stepper.step()
    # Each repeat iteration revisits the body's steps; the taken branch (then) only is visited.
    body = [s.index for s in flat if s.graph is model.loop]
    assert [i for i in seen if i in body] == body * TRANSFERS
    assert not [s for s in flat if s.graph is model.else_graph and s.index in seen]


# ----- breakpoints -----
def test_breakpoint_by_op_type_stops_before_each_matching_op_in_every_iteration():
    model = Model()
    inputs = model.inputs()
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(inputs)
        stepper.add_breakpoint(op_type="matmul")
        iterations = []
        while not stepper.continue_().finished:
            assert stepper.stop.op.type == "matmul" and stepper.stop.breakpoint.op_type == "matmul"
            iterations.append(stepper.stop.position.iterations)
    # Three matmuls in the loop, then x^T y in the main graph.
    assert iterations == [(0,), (1,), (2,), ()]


def test_breakpoint_by_op_name_and_by_op_object():
    model = Model()
    add = model.op(model.loop, "add")
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(model.inputs())
        stop = stepper.run_to(op=add.name)
        assert stop.op is add and stop.position.iterations == (0,) and stop.breakpoint.op == add.name
        stepper.add_breakpoint(op=model.op(model.double, "mul"))
        assert stepper.continue_().op.graph is model.double


def test_breakpoint_by_graph_stops_where_each_run_of_the_graph_begins():
    model = Model()
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(model.inputs())
        stepper.add_breakpoint(graph=model.loop)
        stops = []
        while not stepper.continue_().finished:
            stops.append((stepper.stop.position.graph, stepper.stop.position.index,
                          stepper.stop.position.iterations))
        assert stops == [(model.loop, 0, (i,)) for i in range(TRANSFERS)]
        stepper.clear_breakpoints()
        stepper.reset()
        assert stepper.run_to(graph=model.then_graph.label).position.graph is model.then_graph


def test_without_breakpoints_continue_runs_to_the_end_and_breakpoints_can_be_removed():
    model = Model()
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(model.inputs())
        breakpoint = stepper.add_breakpoint(op_type="matmul")
        assert stepper.breakpoints == (breakpoint,)
        stepper.remove_breakpoint(breakpoint)
        assert stepper.continue_().finished and stepper.stop.op is None


# ----- live tensors -----
def test_live_tensors_and_their_values_at_a_stop_match_numpy():
    model = Model()
    inputs = model.inputs()
    x = inputs[model.x_stream]
    matmul, add = model.op(model.loop, "matmul"), model.op(model.loop, "add")
    acc = model.loop.inputs[0]
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(inputs)
        stepper.add_breakpoint(op=add.name)
        stepper.continue_()
        stop = stepper.continue_()        # before the add of iteration 1
        assert stop.position.iterations == (1,)
        np.testing.assert_allclose(stop.value(matmul.outputs[0]), x[1] @ W0, rtol=1e-6)
        np.testing.assert_allclose(stop.value(acc), x[0] @ W0, rtol=1e-6)
        live = {t.tensor: t for t in stop.live}
        assert live[acc].graph is model.loop and live[acc].depth == 1
        assert live[model.w].depth == 0
        np.testing.assert_array_equal(live[model.w].values[0], W0)
        # The matmul's loaded input was freed at its last use.
        assert model.op(model.loop, "host_load").outputs[0] not in live
        with pytest.raises(KeyError, match="not alive"):
            stop.value(model.y)


def test_live_values_are_per_replica_and_are_copies():
    model = Model(replicas=2)
    inputs = model.inputs((True, True))
    loaded = model.op(model.loop, "host_load").outputs[0]
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(inputs)
        stop = stepper.run_to(op_type="matmul")
        for replica in range(2):
            np.testing.assert_array_equal(stop.value(loaded, replica), inputs[model.x_stream][0, replica])
        kept = stop.value(loaded, 1).copy()
        stepper.continue_()
        np.testing.assert_array_equal(stop.value(loaded, 1), kept)


# ----- events -----
def test_every_command_emits_a_step_event_with_its_stop():
    model = Model()
    with popxl.Session(model.ir, "ipu_model") as session:
        events = []
        session.events.subscribe(lambda kind, payload: events.append((kind, payload)))
        stepper = session.stepper(model.inputs())
        stops = [stepper.step(), stepper.step_over(), stepper.run_to(op_type="conditional"), stepper.continue_()]
    steps = [payload for kind, payload in events if kind == "step"]
    assert steps[0].reason == "created" and steps[1:] == stops
    assert [s.reason for s in stops] == ["step", "step_over", "run_to", "continue"]
    kinds = [kind for kind, _ in events]
    assert kinds.count("run_started") == 1 and kinds.count("run_finished") == 1
    assert kinds.index("run_started") == 1          # right after the stepper is made, at the first step
    assert kinds[-3:] == ["run_finished", "step", "detached"]


# ----- reset and abandoned runs -----
def test_reset_restores_the_weights_saved_at_the_start_and_steps_the_same_run_again():
    model = Model()
    inputs = model.inputs()
    y, w = expected_single(inputs, model)
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(inputs)
        stepper.run_to(op_type="accumulate_")
        stop = stepper.step()
        assert stop.op.type == "host_store"
        np.testing.assert_allclose(session.get_tensor_data(model.w), w, rtol=1e-5)  # read mid-run
        assert stop.status == "paused"
        stop = stepper.reset()
        assert stop.status == "ready" and stop.reason == "reset" and stop.actions == 0
        np.testing.assert_array_equal(session.get_tensor_data(model.w), W0)
        stepper.continue_()
        np.testing.assert_allclose(stepper.outputs[model.y_stream][0], y, rtol=1e-5)
        np.testing.assert_allclose(session.get_tensor_data(model.w), w, rtol=1e-5)
        assert session.run_count == 1


def test_reset_after_the_end_steps_a_new_run_from_the_current_weights():
    ran_y = []
    model = Model()
    with popxl.Session(model.ir, "ipu_model") as session:
        for _ in range(2):
            ran_y.append(session.run(model.inputs())[model.y_stream])
    model = Model()
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(model.inputs())
        stepper.continue_()
        stepper.reset()
        stepper.continue_()
        np.testing.assert_array_equal(stepper.outputs[model.y_stream], ran_y[1])


def test_running_the_session_abandons_a_stepped_run_and_restores_its_weights():
    model = Model()
    inputs = model.inputs()
    y, w = expected_single(inputs, model)
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(inputs)
        stepper.run_to(op_type="accumulate_")
        stepper.step_over()                     # w updated on the device
        outputs = session.run(inputs)          # as if the stepped run had never begun
        np.testing.assert_allclose(outputs[model.y_stream][0], y, rtol=1e-5)
        np.testing.assert_allclose(session.get_tensor_data(model.w), w, rtol=1e-5)
        assert stepper.status == "abandoned"
        with pytest.raises(RuntimeError, match="abandoned because the session ran.*call reset"):
            stepper.step()


def test_a_new_stepper_or_a_weight_write_abandons_the_stepped_run_in_progress():
    model = Model()
    with popxl.Session(model.ir, "ipu_model") as session:
        first = session.stepper(model.inputs())
        first.run_to(op_type="host_store")
        second = session.stepper(model.inputs())
        assert first.status == "paused"        # making a stepper changes nothing yet
        second.step()
        assert first.status == "abandoned"
        second.continue_()
        session.write_variable_data(model.w, np.ones((3, 3), np.float32))
        third = session.stepper(model.inputs())
        third.step()
        session.write_variable_data(model.w, np.zeros((3, 3), np.float32))
        assert third.status == "abandoned"
        np.testing.assert_array_equal(session.get_tensor_data(model.w), np.zeros((3, 3)))


def test_detaching_abandons_the_stepped_run_so_the_host_keeps_the_weights_of_before():
    model = Model()
    session = popxl.Session(model.ir, "ipu_model")
    with session:
        stepper = session.stepper(model.inputs())
        stepper.run_to(op_type="accumulate_")
        stepper.step_over()
    np.testing.assert_array_equal(session.get_tensor_data(model.w), W0)
    with pytest.raises(RuntimeError, match="abandoned because the session detached"):
        stepper.step()
    with session:
        stepper.reset()
        assert stepper.continue_().finished


def test_reset_also_restores_remote_variables_written_by_remote_store():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        buffer = popxl.remote_buffer((), popxl.int32, entries=1)
        x = popxl.remote_variable(np.array(1, np.int32), buffer, 0, name="x")
        ops.remote_store(buffer, 0, ops.remote_load(buffer, 0) + 2)
        ops.host_store(popxl.d2h_stream((), popxl.int32, name="x_out"), ops.remote_load(buffer, 0))
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper()
        stepper.run_to(op_type="remote_store")
        stepper.step()
        assert session.get_tensor_data(x) == 3
        stepper.reset()
        assert session.get_tensor_data(x) == 1
        stepper.continue_()
        assert session.get_tensor_data(x) == 3


# ----- errors -----
def test_stepping_past_the_end_says_so():
    ir, x_stream, out, g, h = counting_ir()
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper({x_stream: np.zeros(2, np.float32)})
        stepper.continue_()
        for command in (stepper.step, stepper.step_over, stepper.continue_):
            with pytest.raises(RuntimeError, match="has finished: no op is left to run; call reset"):
                command()


def test_unknown_breakpoints_are_refused_with_what_exists():
    ir, x_stream, out, g, h = counting_ir()
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper({x_stream: np.zeros(2, np.float32)})
        name = g.ops[0].name
        with pytest.raises(ValueError, match=f"no op named '{name}x' in the Ir; did you mean '{name}'"):
            stepper.add_breakpoint(op=name + "x")
        with pytest.raises(ValueError, match="no op of type 'matmul' in the Ir; the types there are: add, call"):
            stepper.run_to(op_type="matmul")
        with pytest.raises(ValueError, match=r"no graph named 'nope' in the Ir; its graphs are: 'main'"):
            stepper.add_breakpoint(graph="nope")
        with pytest.raises(ValueError, match=f"no op of type 'host_load' in graph '{g.label}'"):
            stepper.add_breakpoint(op_type="host_load", graph=g)
        with pytest.raises(ValueError, match="needs an op"):
            stepper.add_breakpoint()
        assert stepper.breakpoints == () and stepper.stop.status == "ready"


def test_closing_a_stepper_abandons_its_run_and_restores_the_weights():
    model = Model(replicas=2)
    with popxl.Session(model.ir, "ipu_model") as session:
        stepper = session.stepper(model.inputs((True, True)))
        stepper.run_to(op_type="accumulate_")
        stepper.step()
        stepper.close()
        assert stepper.stop.status == "abandoned" and stepper.stop.reason == "abandoned"
        np.testing.assert_array_equal(session.get_tensor_data(model.w), W0)
        with pytest.raises(RuntimeError, match="abandoned because the stepper was closed"):
            stepper.step()


def test_a_detached_session_is_attached_for_a_stepped_run_and_given_back_when_it_ends():
    model = Model()
    session = popxl.Session(model.ir, "ipu_model")
    with session:
        expected = session.run(model.inputs())[model.y_stream]
        trained = session.get_tensor_data(model.w)
        session.write_variable_data(model.w, W0)
    stepper = session.stepper(model.inputs())
    assert not session.is_attached and stepper.status == "ready"
    stepper.step()
    assert session.is_attached
    assert stepper.continue_().finished and not session.is_attached
    np.testing.assert_array_equal(stepper.outputs[model.y_stream], expected)
    np.testing.assert_array_equal(session.get_tensor_data(model.w), trained)
    assert session.weights_from_host_count == 3 and session.weights_to_host_count == 3


def test_a_reset_or_a_failure_gives_back_the_session_a_stepped_run_attached():
    model = Model()
    session = popxl.Session(model.ir, "ipu_model")
    stepper = session.stepper(model.inputs())
    stepper.run_to(op_type="accumulate_")
    stepper.step_over()
    assert session.is_attached
    stepper.reset()
    assert not session.is_attached and stepper.status == "ready"
    np.testing.assert_array_equal(session.get_tensor_data(model.w), W0)
    with session:
        stepper.step()
    assert stepper.status == "abandoned" and not session.is_attached


def test_bad_inputs_are_refused_when_the_stepper_is_made():
    ir, x_stream, out, g, h = counting_ir()
    with popxl.Session(ir, "ipu_model") as session:
        with pytest.raises(ValueError, match="Shape mismatch for input stream x"):
            session.stepper({x_stream: np.zeros(3, np.float32)})


def test_a_failing_replica_is_named_and_the_weights_are_restored(exploding_op):
    from workbench.ops.registry import apply

    ir = popxl.Ir(replication=4)
    with ir.main_graph, popxl.in_sequence():
        w = popxl.variable(np.zeros(2, np.float32), name="w")
        stream = popxl.h2d_stream([2], popxl.float32, name="x")
        x = ops.host_load(stream)
        ops.var_updates.accumulate_(w, x)
        total = ops.collectives.replicated_all_reduce(apply("test_explode", x))
        ops.host_store(popxl.d2h_stream(total.shape, total.dtype, name="total"), total)
    bad = np.ones((4, 2), np.float32)
    bad[3] = -1
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper({stream: bad})
        stepper.step()
        stepper.step()
        with pytest.raises(ReplicaExecutionError, match=r"replica 3 failed in op .*test_explode"):
            stepper.continue_()
        assert stepper.status == "failed"
        np.testing.assert_array_equal(session.get_tensor_data(w), np.zeros(2))
        with pytest.raises(RuntimeError, match="stepped run failed .*call reset"):
            stepper.step()


# ----- replicas whose control flow diverges -----
def diverging_ir():
    """Replicas take branches of different lengths before an all-reduce in the main graph."""
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        flag_stream = popxl.h2d_stream([], popxl.bool, name="flag")
        x_stream = popxl.h2d_stream([2], popxl.float32, name="x")
        flag, x = ops.host_load(flag_stream), ops.host_load(x_stream)
        long = ir.create_graph(lambda t: (t + 1) * 3, x)
        short = ir.create_graph(lambda t: t - 1, x)
        (y,) = ops.conditional(flag, long, short, [x], [x])
        total = ops.collectives.replicated_all_reduce(y)
        out = popxl.d2h_stream(total.shape, total.dtype, name="total")
        ops.host_store(out, total)
    return ir, flag_stream, x_stream, out


def test_a_replica_ahead_waits_in_the_collective_until_the_others_reach_it():
    data = np.array([[1, 2], [3, 4]], np.float32)
    flags = np.array([True, False])
    ir, flag_stream, x_stream, out = diverging_ir()
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper({flag_stream: flags, x_stream: data})
        waits = []
        while not stepper.finished:
            stop = stepper.step()
            waits.append([r.waiting for r in stop.replicas])
        assert any(w[1] is not None and "replicated_all_reduce" in w[1] for w in waits)
        expected = (data[0] + 1) * 3 + (data[1] - 1)
        np.testing.assert_array_equal(stepper.outputs[out], [expected, expected])


@pytest.mark.parametrize("else_has_other_collective, message", [
    (False, "finished the run without reaching it"),
    (True, "reached different collectives and wait on each other"),
])
def test_replicas_that_miss_a_collective_fail_instead_of_hanging(else_has_other_collective, message):
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        flag_stream = popxl.h2d_stream([], popxl.bool, name="flag")
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        then_graph = ir.create_graph(lambda t: ops.collectives.replicated_all_reduce(t), x)
        if else_has_other_collective:
            else_graph = ir.create_graph(lambda t: ops.collectives.replicated_all_reduce(t, op="max"), x)
        else:
            else_graph = ir.create_graph(lambda t: t * 2, x)
        (y,) = ops.conditional(ops.host_load(flag_stream), then_graph, else_graph, [x], [x])
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name="y"), y)
    x_stream = next(s for s in ir.get_all_h2d_streams() if s.name == "x")
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper({flag_stream: np.array([True, False]), x_stream: np.ones((2, 2), np.float32)})
        with pytest.raises(CollectiveMismatchError, match=message):
            stepper.continue_()
        assert stepper.status == "failed"
