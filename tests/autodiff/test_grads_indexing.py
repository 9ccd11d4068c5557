"""Gradients of slices, dynamic slices and updates, gathers, scatters and one-hot against central
finite differences, in float64. Index inputs are integer arrays: they get no gradient and are never
perturbed."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popxl
from popart import popart_exception
import popxl.ops as ops

from gradcheck import check_gradients

SETTINGS = settings(max_examples=25, deadline=None)

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
seeds = st.integers(0, 2 ** 32 - 1)


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def int32(values):
    return np.asarray(values, dtype=np.int32)


# ----- static slices -----
@SETTINGS
@given(shapes, st.data(), seeds)
def test_slice_gradient_pads_back_with_zeros(shape, data, seed):
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    steps = [data.draw(st.sampled_from([1, -1])) for _ in axes]
    starts = [data.draw(st.integers(-shape[a] - 1, shape[a] + 1)) for a in axes]
    stops = [data.draw(st.integers(-shape[a] - 1, shape[a] + 1)) for a in axes]
    x = normal(shape, seed)
    if 0 in np.empty(shape)[tuple(slice(None) if a not in axes else
                                  slice(starts[axes.index(a)], stops[axes.index(a)], steps[axes.index(a)])
                                  for a in range(len(shape)))].shape:
        return  # an empty slice has nothing to differentiate
    check_gradients(lambda t: ops.slice(t, starts, stops, steps, axes), x)


@SETTINGS
@given(st.integers(0, 3), st.integers(1, 3), st.integers(1, 3), seeds)
def test_tensor_indexing_with_strides_and_ints(start, length, stride, seed):
    x = normal((6, 4), seed)
    check_gradients(lambda t: t[start:start + length:stride, 1], x)
    check_gradients(lambda t: t[::-stride, start % 4:], x)


# ----- slices at runtime offsets -----
@SETTINGS
@given(shapes, st.data(), seeds)
def test_dynamic_slice_gradient_lands_at_the_runtime_offsets(shape, data, seed):
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    sizes = [data.draw(st.integers(1, shape[a])) for a in axes]
    offsets = [data.draw(st.integers(0, shape[a] + 1)) for a in axes]  # past the end counts as 0; runs over wrap
    check_gradients(lambda t, i: ops.dynamic_slice(t, i, axes, sizes, no_overlap=True),
                    normal(shape, seed), int32(offsets))


@SETTINGS
@given(shapes, st.data(), seeds)
def test_dynamic_update_gradients_split_between_tensor_and_update(shape, data, seed):
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    sizes = [data.draw(st.integers(1, shape[a])) for a in axes]
    offsets = [data.draw(st.integers(0, shape[a] + 1)) for a in axes]
    update_shape = list(shape)
    for axis, size in zip(axes, sizes):
        update_shape[axis] = size
    check_gradients(lambda t, i, u: ops.dynamic_update(t, i, u, axes, sizes, no_overlap=True) * 2.0,
                    normal(shape, seed), int32(offsets), normal(update_shape, seed + 1))



def test_dynamic_update_gradient_reaches_an_update_given_without_the_leading_1():
    check_gradients(lambda t, i, u: ops.dynamic_update(t, i, u, [0], [1], no_overlap=True) * 2.0,
                    normal((3, 4), 0), int32([1]), normal((4,), 1))


# ----- gathers -----
@SETTINGS
@given(shapes, st.data(), st.booleans(), seeds)
def test_gather_gradient_scatter_adds_repeated_rows(shape, data, zero_oor, seed):
    axis = data.draw(st.integers(0, len(shape) - 1))
    length = shape[axis]
    index_shape = data.draw(st.lists(st.integers(1, 3), max_size=2))
    indices = data.draw(st.lists(st.integers(-length - 2, 2 * length), min_size=int(np.prod(index_shape)),
                                 max_size=int(np.prod(index_shape))))
    gather = ops.tied_gather if data.draw(st.booleans()) else ops.gather
    check_gradients(lambda t, i: gather(t, i, axis, zero_OOR=zero_oor), normal(shape, seed),
                    int32(indices).reshape(index_shape))


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3), st.data(), st.booleans(), seeds)
def test_grouped_gather_gradient_stays_within_each_group(groups, rows, width, data, zero_oor, seed):
    axis = data.draw(st.integers(0, 1))
    length = (rows, width)[axis]
    indices = data.draw(st.lists(st.integers(-1, length), min_size=groups * 3, max_size=groups * 3))
    check_gradients(lambda t, i: ops.groupedgather(t, i, axis, group_size=groups, zero_OOR=zero_oor),
                    normal((groups, rows, width), seed), int32(indices).reshape(groups, 3))


# ----- scatters -----
@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.data(), seeds)
def test_scatter_gradient_skips_overwritten_values(rows, cols, data, seed):
    """Repeated indices keep the last write: earlier writes of an index get no gradient."""
    axis = data.draw(st.integers(0, 1))
    length = (rows, cols)[axis]
    index_shape = (data.draw(st.integers(1, rows)), data.draw(st.integers(1, cols)))
    indices = data.draw(st.lists(st.integers(-length, length - 1), min_size=int(np.prod(index_shape)),
                                 max_size=int(np.prod(index_shape))))
    check_gradients(lambda t, i, v: ops.scatter(t, i, v, axis), normal((rows, cols), seed),
                    int32(indices).reshape(index_shape), normal(index_shape, seed + 1))


@SETTINGS
@given(st.sampled_from(["sum", "max", "min", "none"]), st.booleans(), st.booleans(), st.data(), seeds)
def test_scatter_reduce_gradient(reduction, with_initial, full_indices, data, seed):
    shape = (data.draw(st.integers(1, 5)), data.draw(st.integers(1, 3)))
    axis = data.draw(st.integers(0, 1))
    axis_size = data.draw(st.integers(1, 4))
    index_shape = shape if full_indices else (shape[axis],)
    indices = int32(data.draw(st.lists(st.integers(0, axis_size - 1), min_size=int(np.prod(index_shape)),
                                       max_size=int(np.prod(index_shape))))).reshape(index_shape)
    out_shape = list(shape)
    out_shape[axis] = axis_size
    x = normal(shape, seed)
    if with_initial:
        check_gradients(lambda d, i, init: ops.scatter_reduce(d, i, reduction, initial_values=init, axis=axis),
                        x, indices, normal(out_shape, seed + 1))
    else:
        check_gradients(lambda d, i: ops.scatter_reduce(d, i, reduction, axis=axis, axis_size=axis_size),
                        x, indices)


@SETTINGS
@given(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 5), st.data(), seeds)
def test_onehot_gradient_reaches_the_off_and_on_values(index_shape, classes, data, seed):
    axis = data.draw(st.integers(-len(index_shape) - 1, len(index_shape)))
    indices = data.draw(st.lists(st.integers(-classes, classes + 1), min_size=int(np.prod(index_shape)),
                                 max_size=int(np.prod(index_shape))))
    check_gradients(lambda i, v: ops.onehot(i, popxl.constant(np.int32(classes)), v, axis),
                    int32(indices).reshape(index_shape), normal((2,), seed))


def test_in_place_dynamic_update_asks_for_the_copying_op():
    with pytest.raises(popart_exception, match="modifying op: dynamic_update_ .*; use ops.dynamic_update instead"):
        check_gradients(lambda t, i, u: ops.dynamic_update_(t * 1.0, i, u, [0], [1], True),
                        normal((3,), 0), int32([1]), normal((1,), 1))
