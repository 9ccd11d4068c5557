"""Gradients of the shape ops against central finite differences, in float64, over random shapes,
axes and attributes."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff

from gradcheck import check_gradients

SETTINGS = settings(max_examples=25, deadline=None)

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)
seeds = st.integers(0, 2 ** 32 - 1)


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@SETTINGS
@given(shapes, st.randoms(use_true_random=False), seeds)
def test_reshape_gradient(shape, random, seed):
    dims = list(shape)
    random.shuffle(dims)
    target = [int(np.prod(dims[:1]))] + dims[1:]
    target[random.randrange(len(target))] = -1
    check_gradients(lambda t: ops.reshape(t, target) * 3.0, normal(shape, seed))
    check_gradients(lambda t: ops.flatten(t), normal(shape, seed))


@SETTINGS
@given(shapes.flatmap(lambda s: st.tuples(st.just(s), st.permutations(range(len(s))))), seeds)
def test_transpose_gradient_permutes_back(shape_and_permutation, seed):
    shape, permutation = shape_and_permutation
    check_gradients(lambda t: ops.transpose(t, permutation), normal(shape, seed))
    check_gradients(lambda t: t.T, normal(shape, seed))


@SETTINGS
@given(shapes, st.lists(st.integers(0, 4), max_size=2), seeds)
def test_squeeze_gradient(shape, ones_at, seed):
    padded = list(shape)
    for position in ones_at:
        padded.insert(min(position, len(padded)), 1)
    check_gradients(lambda t: ops.squeeze(t), normal(padded, seed))


@SETTINGS
@given(shapes, st.data(), seeds)
def test_concat_gradient_splits_back(shape, data, seed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    lengths = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    parts = []
    for i, length in enumerate(lengths):
        part_shape = list(shape)
        part_shape[axis] = length
        parts.append(normal(part_shape, seed + i))
    check_gradients(lambda *ts: ops.concat(ts, axis), *parts)


@SETTINGS
@given(shapes, st.data(), seeds)
def test_split_gradient_joins_the_parts(shape, data, seed):
    axis = data.draw(st.integers(0, len(shape) - 1))
    cuts = sorted(data.draw(st.lists(st.integers(0, shape[axis]), max_size=3)))
    lengths = np.diff([0, *cuts, shape[axis]]).tolist()
    used = data.draw(st.lists(st.integers(0, len(lengths) - 1), min_size=1, unique=True))
    x = normal(shape, seed)
    check_gradients(lambda t: tuple(ops.split(t, lengths, axis)), x)
    # Parts left out of the result get zero gradient.
    check_gradients(lambda t: tuple(ops.split(t, lengths, axis)[i] for i in used), x)


@SETTINGS
@given(shapes, st.data(), seeds)
def test_subsample_gradient_spreads_back(shape, data, seed):
    strides = [data.draw(st.integers(1, 4)) for _ in shape]
    check_gradients(lambda t: ops.subsample(t, strides), normal(shape, seed))


@SETTINGS
@given(shapes, seeds)
def test_identity_gradient(shape, seed):
    check_gradients(lambda t: ops.identity(t) * ops.rename(t), normal(shape, seed))


def test_in_place_views_pass_gradients_like_their_copies():
    x = normal((2, 3), 7)
    check_gradients(lambda t: ops.transpose_(ops.reshape_(t * 1.0, (3, 2))) * 2.0, x)
    check_gradients(lambda t: ops.slice_(ops.concat_([t * 1.0, t * t], axis=0), start=1, stop=3, axis=0), x)


def test_split_parts_have_distinct_names_so_their_gradients_can_be_named():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda t: tuple(ops.split(t, 3)), popxl.TensorSpec((6,), popxl.float32))
        info = autodiff(graph)
    assert len({t.name for t in graph.outputs}) == 3
    assert [t.name for t in info.graph.inputs[:3]] == [f"Gradient___{t.name}" for t in graph.outputs]
