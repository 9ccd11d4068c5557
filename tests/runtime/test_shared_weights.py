"""Replicas that hold a weight alike share one array of it, and each update of it runs once per run:
with the same numbers, bit for bit, as replicas each updating a copy of their own."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from support.strategies import session as session_of
from workbench.analysis.schedule import schedule
from workbench.runtime.state.shared_weights import SharedUpdates, shared_weights

REPLICAS, BATCH, LR = 4, 3, 0.1


def training_ir(replicas: int = REPLICAS, grouping=None):
    """A 2-layer regression net trained by autodiff, SGD on the all-reduced mean gradient."""
    rng = np.random.default_rng(0)
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        x_stream = popxl.h2d_stream([BATCH, 5], popxl.float32, name="x")
        weights = [popxl.variable(rng.standard_normal(shape).astype(np.float32), name=name)
                   for name, shape in (("w0", (5, 4)), ("w1", (4, 1)))]

        def loss(x, w0, w1):
            return ops.mean(ops.relu(x @ w0) @ w1)

        forward = ir.create_graph(loss, popxl.TensorSpec((BATCH, 5), popxl.float32), *weights)
        grad_info = popxl.transforms.autodiff(forward, grads_required=forward.inputs[1:])
        info = ops.call_with_info(forward, ops.host_load(x_stream), *weights)
        grads = ops.call(grad_info.graph, popxl.constant(1.0), inputs_dict=grad_info.inputs_dict(info))
        for weight, grad in zip(weights, grads):
            group = None if grouping is None else ir.replica_grouping(**grouping)
            ops.scaled_add_(weight, ops.collectives.replicated_all_reduce(grad, op="mean", group=group), b=-LR)
    return ir, x_stream, weights


def train(ir, x_stream, weights, steps: int = 3, threads: bool = False, shared: bool = True):
    data = np.random.default_rng(1).standard_normal((steps, REPLICAS, BATCH, 5)).astype(np.float32)
    with session_of(ir, threads, shared_weights=shared) as session:
        for step in range(steps):
            session.run({x_stream: data[step]})
        arrays = [[values[w] for values in session.executable.device_values] for w in weights]
        return session.get_tensors_data(weights), arrays


def test_replicas_share_each_weight_they_update_alike_and_train_it_bit_for_bit_as_apart():
    trained, arrays = train(*training_ir())
    assert all(all(a is copies[0] for a in copies) for copies in arrays)
    apart, arrays = train(*training_ir(), shared=False)
    assert not any(copies[1] is copies[0] for copies in arrays)
    for w in trained:
        np.testing.assert_array_equal(trained[w], next(v for k, v in apart.items() if k.name == w.name))


@pytest.mark.parametrize("threads", [True, False], ids=["replica threads", "taking turns"])
def test_replicas_in_threads_update_a_shared_weight_once_per_run(threads):
    ir, x_stream, weights = training_ir()
    trained, _ = train(ir, x_stream, weights, threads=threads)
    apart, _ = train(*training_ir(), threads=threads, shared=False)
    for w in trained:
        np.testing.assert_array_equal(trained[w], next(v for k, v in apart.items() if k.name == w.name))


def test_a_stepped_run_updates_a_shared_weight_once_and_a_reset_takes_it_back():
    ir, x_stream, weights = training_ir()
    data = np.random.default_rng(1).standard_normal((REPLICAS, BATCH, 5)).astype(np.float32)
    _, second = [op for op in ir.main_graph.ops if op.type == "scaled_add_"]
    with popxl.Session(ir, "ipu_model") as session:
        before = session.get_tensors_data(weights)
        stepper = session.stepper({x_stream: data})
        stepper.run_to(second)  # the first update made once, and the new array taken by every replica
        assert len({id(values[weights[0]]) for values in session.executable.device_values}) == 1
        assert not np.array_equal(session.get_tensor_data(weights[0]), before[weights[0]])
        stepper.reset()  # abandoned: every replica has the weights of before again
        after_reset = session.get_tensors_data(weights)
        assert len({id(values[weights[0]]) for values in session.executable.device_values}) == 1
        stepper.continue_()
        stepped = session.get_tensors_data(weights)
    with popxl.Session(ir, "ipu_model") as session:
        session.run({x_stream: data})
        run = session.get_tensors_data(weights)
    for w in weights:
        np.testing.assert_array_equal(after_reset[w], before[w])
        np.testing.assert_array_equal(stepped[w], run[w])
        assert not np.array_equal(run[w], before[w])


def updates_of(ir) -> SharedUpdates:
    return shared_weights(ir, schedule(ir.main_graph))


def test_an_update_from_values_that_differ_between_replicas_is_not_shared():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        w = popxl.variable(np.zeros(2, np.float32), name="w")
        own = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        ops.scaled_add_(w, own, b=0.5)
    assert updates_of(ir).variables == set()


@pytest.mark.parametrize("grouping, op", [({"group_size": 2}, "add"), (None, "local")])
def test_an_all_reduce_over_part_of_the_replicas_or_local_gives_no_shared_update(grouping, op):
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        w = popxl.variable(np.zeros(2, np.float32), name="w")
        own = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        group = None if grouping is None else ir.replica_grouping(**grouping)
        ops.scaled_add_(w, ops.collectives.replicated_all_reduce(own, op=op, group=group), b=0.5)
    assert updates_of(ir).variables == set()


def program_around_an_update(before: bool, after: str):
    """w updated from an all-reduce; optionally read before the update (after the collective), and
    afterwards read ("read"), written again ("write") or left ("")."""
    ir = popxl.Ir(replication=2)
    with ir.main_graph, popxl.in_sequence():
        w = popxl.variable(np.ones(2, np.float32), name="w")
        total = ops.collectives.replicated_all_reduce(ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x")))
        out = popxl.d2h_stream([2], popxl.float32, name="out")
        if before:
            ops.host_store(out, w * 2.0)
        ops.scaled_add_(w, total, b=0.5)
        if after == "read":
            ops.host_store(out, w * 2.0)
        elif after == "write":
            ops.scaled_add_(w, total, b=0.5)
    return ir, w


@pytest.mark.parametrize("before, after, shared", [(False, "", True), (False, "read", True), (True, "", False),
                                                   (False, "write", False)])
def test_an_update_is_shared_when_no_replica_can_tell_who_made_it(before, after, shared):
    ir, w = program_around_an_update(before, after)
    assert updates_of(ir).variables == ({w} if shared else set())


@pytest.mark.parametrize("threads", [True, False], ids=["replica threads", "taking turns"])
def test_a_read_after_a_shared_update_sees_it_whole_on_every_replica(threads):
    ir, w = program_around_an_update(False, "read")
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    with session_of(ir, threads) as session:
        for run in range(1, 21):
            out = session.run({ir.get_all_h2d_streams().pop(): x})
            expected = 2 * (1 + run * 0.5 * x.sum(axis=0))
            np.testing.assert_array_equal(out[ir.get_all_d2h_streams().pop()], np.stack([expected, expected]))


def test_weights_set_per_group_or_updated_inside_a_called_graph_are_not_shared():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        grouped = popxl.variable(np.zeros((2, 2), np.float32), name="grouped",
                                 replica_grouping=ir.replica_grouping(group_size=2))
        looped = popxl.variable(np.zeros(2, np.float32), name="looped")
        ops.scaled_add_(grouped, ops.collectives.replicated_all_reduce(grouped * 1.0), b=0.5)

        def body(t: popxl.TensorByRef):
            ops.scaled_add_(t, popxl.constant(np.ones(2, np.float32)))
        ops.repeat(ir.create_graph(body, looped), 3, looped)
    assert updates_of(ir).variables == set()


def test_an_update_from_another_shared_weight_is_shared_too():
    """As in momentum SGD: the momentum follows the all-reduced gradient, the weight the momentum."""
    ir = popxl.Ir(replication=2)
    with ir.main_graph, popxl.in_sequence():
        w = popxl.variable(np.ones(2, np.float32), name="w")
        momentum = popxl.variable(np.zeros(2, np.float32), name="momentum")
        grad = ops.collectives.replicated_all_reduce(ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x")))
        ops.scaled_add_(momentum, grad, a=0.9)
        ops.scaled_add_(w, momentum, b=-0.1)
    shared = updates_of(ir)
    assert shared.variables == {w, momentum} and sorted(v.name for v in shared.updates.values()) == ["momentum", "w"]


def test_one_replica_shares_nothing():
    ir, _, _ = training_ir(replicas=1)
    assert updates_of(ir).variables == set()


def test_the_pure_updates_are_op_types_that_write_their_first_input():
    from workbench.ops.registry import REGISTRY

    pure = {t for t, definition in REGISTRY.items() if definition.pure_update}
    assert {"scaled_add_", "adam_var_update", "copy_var_update_", "accumulate_", "relu_"} <= pure
    assert not pure & {"remote_load_", "replicated_all_reduce_"}  # a replica's own buffer, other replicas
    assert all(REGISTRY[t].modifies == (0,) and not REGISTRY[t].meets_replicas for t in pure)


def test_an_in_place_load_from_a_replicas_own_buffer_is_not_a_shared_update():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=1)
        w = popxl.variable(np.zeros(2, np.float32), name="w")
        ops.remote_load_(buffer, 0, w)
    assert updates_of(ir).variables == set()


def test_a_weight_the_host_may_set_per_replica_is_not_shared():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        w = popxl.variable(np.zeros(2, np.float32), name="w", retrieval_mode="all_replicas")
        ops.scaled_add_(w, popxl.constant(np.ones(2, np.float32)))
    assert updates_of(ir).variables == set()


def test_an_all_reduced_value_changed_in_place_afterwards_is_not_alike_on_every_replica():
    ir = popxl.Ir(replication=2)
    with ir.main_graph, popxl.in_sequence():
        w = popxl.variable(np.zeros(2, np.float32), name="w")
        own = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        total = ops.collectives.replicated_all_reduce(own)
        ops.add_(total, own)
        ops.scaled_add_(w, total)
    assert updates_of(ir).variables == set()


def test_an_update_right_after_a_call_that_reads_the_weight_past_its_collective_is_not_shared():
    """Replicas resume the call after its all-reduce one by one: the first would update the weight
    before the others read it."""
    ir = popxl.Ir(replication=2)
    with ir.main_graph, popxl.in_sequence():
        w = popxl.variable(np.ones(2, np.float32), name="w")
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        body = ir.create_graph(lambda t, weight: ops.collectives.replicated_all_reduce(t) + weight, x, w)
        (y,) = ops.call(body, x, w)
        ops.scaled_add_(w, popxl.constant(np.ones(2, np.float32)))
        ops.host_store(popxl.d2h_stream([2], popxl.float32, name="y"), y)
    assert updates_of(ir).variables == set()
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run({ir.get_all_h2d_streams().pop(): x})[ir.get_all_d2h_streams().pop()]
    np.testing.assert_array_equal(out, np.stack([x.sum(axis=0) + 1] * 2))


def test_when_the_replica_running_a_shared_update_fails_the_others_stop_instead_of_going_on():
    from workbench.runtime.replication.communicator import ReplicaAborted

    ir, w = program_around_an_update(False, "")
    shared = updates_of(ir)
    (update,) = shared.updates

    def failing(variable, total):
        raise FloatingPointError("overflow")
    run = shared.once(update, failing)
    shared.begin()
    weight, total = np.ones(2, np.float32), np.ones(2, np.float32)
    with pytest.raises(FloatingPointError):
        run(weight, total)
    with pytest.raises(ReplicaAborted, match="scaled_add_.* failed in the replica that ran it for all"):
        run(weight, total)
    shared.begin()  # the next run starts afresh
    with pytest.raises(FloatingPointError):
        run(weight, total)
