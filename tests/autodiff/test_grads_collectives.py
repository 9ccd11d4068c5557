"""Gradients of the collectives, over 2 and 4 replicas and replica groups, and of the copies between
IPUs and tiles, against central finite differences in float64.

``check_replicated_gradients`` perturbs each replica's input separately, except where a value is
held by every replica (``shared``) or by several IPUs (``tied``); outputs held by every replica
(``once``) or by several IPUs (``tied_outputs``) count once in the loss. Each test states which
of its tensors are such single values.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff

from gradcheck import check_gradients
from replicated_gradcheck import check_replicated_gradients
from workbench.ops.identical_all_reduce import identical_all_reduce

SETTINGS = settings(max_examples=10, deadline=None)
collectives = ops.collectives

shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)
seeds = st.integers(0, 2 ** 32 - 1)
# (replicas, stride, group_size) of a constant-stride replica grouping
groupings = st.sampled_from([(2, 1, 2), (2, 1, 1), (4, 1, 4), (4, 1, 2), (4, 2, 2)])


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def group(stride, group_size):
    return popxl.gir().replica_grouping(stride=stride, group_size=group_size)


def members(replicas, stride, group_size):
    """The replica sets of a grouping: the holders of a value shared within each group."""
    assignment = popxl.Ir(replication=replicas).replica_grouping(stride, group_size).assignment
    return [[r for r in range(replicas) if assignment[r] == g] for g in sorted(set(assignment))]


# ----- across replicas -----
@SETTINGS
@given(shapes, groupings, st.sampled_from(["add", "mean"]), seeds)
def test_all_reduce_gradient_is_the_all_reduce_of_the_gradients(shape, grouping, op, seed):
    """Every replica's loss depends on every input of its group."""
    replicas, stride, size = grouping
    check_replicated_gradients(lambda t: collectives.replicated_all_reduce(t * t, op, group(stride, size)),
                               normal((replicas, *shape), seed), replicas=replicas)


@pytest.mark.parametrize("op", ["add", "mean"])
def test_tensor_parallel_all_reduce_without_identity_flags_differentiates_as_an_all_reduce(op):
    """popxl-addons' tensor-parallel all-reduce with neither side an identity: its gradient rule (another
    such op) gives an all-reduce's gradient."""
    check_replicated_gradients(lambda t: identical_all_reduce(t * t, op, group(1, 2)),
                               normal((4, 2, 3), 7), replicas=4)


@SETTINGS
@given(shapes, groupings, st.data(), seeds)
def test_all_gather_gradient_is_each_replicas_part(shape, grouping, data, seed):
    """The gathered tensor is one value held by the replicas of a group; each replica's input gets
    its part of that value's gradient."""
    replicas, stride, size = grouping
    axis = data.draw(st.integers(0, len(shape) - 1))
    x = normal((replicas, *shape), seed)
    holders = members(replicas, stride, size)
    check_replicated_gradients(lambda t: collectives.replicated_all_gather(t, axis, group(stride, size)), x,
                               replicas=replicas, once=[0], holders=holders)
    check_replicated_gradients(lambda t: collectives.replicated_all_gather(t, 0, group(stride, size), "new_axis"),
                               x, replicas=replicas, once=[0], holders=holders)


@SETTINGS
@given(shapes, st.sampled_from([2, 4]), seeds)
def test_sharded_gather_gradient_is_each_replicas_own_slice(shape, replicas, seed):
    """A tensor sharded over the replicas and gathered back is one value held by every replica; as in
    popxl each replica's shard gets its slice of its own gradient (a local reduce-scatter), not the
    sum over replicas."""
    for output_shape in ("auto", "meta_shape"):
        check_replicated_gradients(
            lambda t: collectives.replicated_all_gather(collectives.replica_sharded_slice(t),
                                                        output_shape=output_shape) ** 2,
            normal(shape, seed), replicas=replicas, shared=[0], once=[0])


def test_sharded_gather_gradient_is_not_summed_over_replicas():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        v, shard = popxl.replica_sharded_variable(np.arange(8, dtype=np.float32), name="v")
        graph = ir.create_graph(lambda s: collectives.replicated_all_gather(s) * 1.0, shard)
        grad_graph = autodiff(graph)
        seed = popxl.constant(np.full(8, 2.0, np.float32))
        (grad,) = ops.call(grad_graph.graph, seed)
        stream = popxl.d2h_stream(grad.shape, grad.dtype, name="grad")
        ops.host_store(stream, grad)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[stream], np.full((4, 2), 2.0))


@SETTINGS
@given(st.integers(1, 9), groupings, st.sampled_from(["add", "mean"]), seeds)
def test_reduce_scatter_gradient_is_the_all_gather_of_the_shards_gradients(length, grouping, op, seed):
    """Lengths that do not divide evenly leave padding in the last shard; it gets no gradient."""
    replicas, stride, size = grouping
    check_replicated_gradients(lambda t: collectives.replicated_reduce_scatter(t, op, group(stride, size)),
                               normal((replicas, length), seed), replicas=replicas)


@SETTINGS
@given(shapes, groupings, st.data(), seeds)
def test_replicated_slice_gradient_gathers_the_parts(shape, grouping, data, seed):
    """The sliced tensor is one value held by the replicas of a group; its gradient collects every
    part."""
    replicas, stride, size = grouping
    axis = data.draw(st.integers(0, len(shape) - 1))
    shape = shape[:axis] + (shape[axis] * size,) + shape[axis + 1:]
    holders = members(replicas, stride, size)
    check_replicated_gradients(lambda t: collectives.replicated_slice(t, axis, group(stride, size)),
                               normal((len(holders), *shape), seed), replicas=replicas, shared=[0], holders=holders)


@pytest.mark.parametrize("axis", [0, 1])
def test_replicated_slice_gradient_restores_a_dropped_axis(axis):
    shape = (4, 3) if axis == 0 else (3, 4)
    check_replicated_gradients(lambda t: collectives.replicated_slice(t, axis), normal(shape, axis),
                               replicas=4, shared=[0])


@SETTINGS
@given(st.integers(1, 9), st.sampled_from([2, 4]), seeds)
def test_sharded_slice_gradient_gathers_the_shards(length, replicas, seed):
    check_replicated_gradients(lambda t: collectives.replica_sharded_slice(t), normal((length,), seed),
                               replicas=replicas, shared=[0])


@pytest.mark.parametrize("make", [
    lambda t: collectives.replicated_all_reduce(t, "max"),
    lambda t: collectives.replicated_reduce_scatter(t, "mul"),
])
def test_collectives_without_a_gradient_say_which_ops_have_one(make):
    with pytest.raises(NotImplementedError, match=r"no gradient for op '(max|mul)'; the differentiable ops are "
                                                  r"'add' and 'mean'"):
        check_replicated_gradients(make, normal((2, 4), 0), replicas=2)


# ----- across the IPUs of a replica -----
def on_ipu_1(t):
    with popxl.ipu(1):
        return ops.ipu_copy(t, 1)


def test_all_reduce_over_ipus_differentiates_add_only():
    def fn(a, b):
        return tuple(collectives.all_reduce([a, on_ipu_1(b)], ipus=[0, 1], op="max"))
    with pytest.raises(NotImplementedError, match=r"all_reduce: no gradient for op 'max'; the differentiable ops "
                                                  r"are 'add'$"):
        check_replicated_gradients(fn, normal((1, 2), 0), normal((1, 2), 1))


@SETTINGS
@given(shapes, st.sampled_from([1, 2]), seeds)
def test_all_reduce_over_ipus_gradient_is_an_all_reduce(shape, replicas, seed):
    def fn(a, b):
        return tuple(collectives.all_reduce([a, on_ipu_1(b)], ipus=[0, 1]))
    check_replicated_gradients(fn, normal((replicas, *shape), seed), normal((replicas, *shape), seed + 1),
                               replicas=replicas)


@SETTINGS
@given(shapes, seeds)
def test_identical_inputs_all_reduce_passes_each_ipu_the_summed_gradient(shape, seed):
    """The inputs are one value held by two IPUs: the forward pass copies, each holder gets the
    gradient summed over the IPUs."""
    def fn(a, b):
        return tuple(collectives.all_reduce_identical_inputs([a, on_ipu_1(b)], ipus=[0, 1]))
    x = normal((1, *shape), seed)
    check_replicated_gradients(fn, x, x, tied=[(0, 1)])


@SETTINGS
@given(shapes, seeds)
def test_identical_grad_inputs_all_reduce_passes_the_gradient_through(shape, seed):
    """The outputs are one value held by two IPUs: the forward pass reduces, each input gets that
    value's gradient as it is."""
    def fn(a, b):
        return tuple(collectives.all_reduce_identical_grad_inputs([a, on_ipu_1(b)], ipus=[0, 1]))
    check_replicated_gradients(fn, normal((1, *shape), seed), normal((1, *shape), seed + 1),
                               tied_outputs=[(0, 1)])


def test_all_reduce_over_ipus_gives_zeros_for_an_unused_output():
    def fn(a, b):
        total = collectives.all_reduce([a, on_ipu_1(b)], ipus=[0, 1])[1]
        with popxl.ipu(1):
            return total * 3.0
    check_replicated_gradients(fn, normal((1, 2, 2), 0), normal((1, 2, 2), 1))


# ----- copies -----
@SETTINGS
@given(shapes, seeds)
def test_ipu_copy_gradient_is_copied_back_to_the_source_ipu(shape, seed):
    def fn(t):
        doubled = t * 2.0
        with popxl.ipu(1):
            return ops.ipu_copy(doubled, 1) * ops.ipu_copy(t, 1)
    check_gradients(fn, normal(shape, seed))


def test_ipu_copy_gradient_ops_run_on_the_ipus_of_their_inputs():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda t: ops.ipu_copy(t, 1), popxl.TensorSpec((2,), popxl.float32))
        info = autodiff(graph)
    (copy,) = [op for op in info.graph.ops if op.type == "ipu_copy"]
    assert (copy.attrs["source"], copy.attrs["destination"]) == (1, 0)
    assert info.graph.outputs[0].ipu == 0


@SETTINGS
@given(shapes, seeds)
def test_io_tile_copy_gradient_returns_to_the_source_tiles(shape, seed):
    def fn(t):
        with popxl.io_tiles():
            staged = ops.io_tile_copy(t)
        return ops.io_tile_copy(staged) * t
    check_gradients(fn, normal(shape, seed))


def test_io_tile_copy_gradients_mirror_the_forward_copies():
    def fn(t):
        with popxl.io_tiles():
            staged = ops.io_tile_copy(t)
        return ops.io_tile_copy(staged)
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(fn, popxl.TensorSpec((2,), popxl.float32))
        info = autodiff(graph)
    copies = [op.attrs["destination"] for op in info.graph.ops if op.type == "io_tile_copy"]
    assert copies == ["io", "compute"]
    assert info.graph.outputs[0].tile_set == "compute"
