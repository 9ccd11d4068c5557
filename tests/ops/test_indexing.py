"""Slices, Tensor indexing, dynamic slices, gathers, scatters and one-hot against NumPy."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from helpers import run_op, run_op_on_variables

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
RNG = np.random.default_rng(7)


@pytest.fixture
def x():
    ir = popxl.Ir()
    with ir.main_graph:
        yield popxl.variable(X, name="x")


# ----- slice -----
@pytest.mark.parametrize("kwargs, key", [
    (dict(start=1), np.s_[1:]),
    (dict(stop=-2), np.s_[:-2]),
    (dict(start=[1, 2], stop=[3, 4]), np.s_[1:3, 2:4]),
    (dict(start=[0, -3], axis=[2, 0]), np.s_[-3:, :, 0:]),
    (dict(stop=1, step=-1), np.s_[:1:-1]),
    (dict(start=[None, 3], stop=[2, None], step=[-1, -1], axis=[1, 2]), np.s_[:, :2:-1, 3::-1]),
    (dict(start=-100, stop=100, axis=-1), np.s_[:, :, -100:100]),
    (dict(start=5, stop=2, axis=1), np.s_[:, 5:2]),
])
def test_slice_matches_numpy(kwargs, key):
    result = run_op(lambda t: ops.slice(t, **kwargs), X)
    np.testing.assert_array_equal(result, X[key])


def test_slice_without_start_stop_or_step_is_the_tensor_itself(x):
    assert ops.slice(x) is x
    assert ops.slice(x, axis=1) is x


def test_slice_in_place_aliases_its_input():
    def fn(t):
        return ops.add_(ops.slice_(t, start=[1, 2], stop=[2, 4], axis=[0, 2]),
                        popxl.constant(np.full((1, 4, 2), 100, np.float32)))

    result, (updated,) = run_op_on_variables(fn, X)
    expected = X.copy()
    expected[1:2, :, 2:4] += 100
    np.testing.assert_array_equal(updated, expected)
    np.testing.assert_array_equal(result, expected[1:2, :, 2:4])


def test_writing_into_an_out_of_place_slice_leaves_the_variable_alone():
    result, (updated,) = run_op_on_variables(
        lambda t: ops.add_(ops.slice(t, start=1), popxl.constant(np.ones((2, 4, 5), np.float32))), X)
    np.testing.assert_array_equal(result, X[1:] + 1)
    np.testing.assert_array_equal(updated, X)


def test_slice_errors(x):
    with pytest.raises(ValueError, match="`stop` has length 1 != 2"):
        ops.slice(x, start=[0, 1], stop=[2])
    with pytest.raises(ValueError, match=r"step must be 1 or -1, got \[2\]; .* ops.subsample"):
        ops.slice(x, step=2)
    with pytest.raises(ValueError, match="slices an axis twice"):
        ops.slice(x, start=[0, 1], axis=[1, -2])
    with pytest.raises(ValueError, match="out of range"):
        ops.slice(x, start=0, axis=3)
    assert not x.graph.ops


# ----- Tensor.__getitem__ -----
@pytest.mark.parametrize("key", [
    0, -1, 2, np.int32(1), np.s_[1:], np.s_[::-1], np.s_[::2], np.s_[::-2], np.s_[1::3],
    (0, 1), (-1, -1, -1), (1, np.s_[1:3]), (np.s_[:], 2), (np.s_[::2], np.s_[1:], np.s_[::-3]),
    (np.s_[5:], ), (np.s_[:, :, 2]), np.s_[-2:-1, ::-1, 4],
])
def test_basic_indexing_matches_numpy(key):
    np.testing.assert_array_equal(run_op(lambda t: t[key], X), X[key])


def test_integer_indexing_gathers_rows():
    indices = np.array([[2, 0], [1, 1]], np.int32)
    np.testing.assert_array_equal(run_op(lambda t, i: t[i], X, indices), X[indices])
    np.testing.assert_array_equal(run_op(lambda t: t[[2, 0]], X), X[[2, 0]])
    np.testing.assert_array_equal(run_op(lambda t: t[np.array([1])], X), X[[1]])


def test_boolean_indexing_zeroes_instead_of_compacting():
    """The mask broadcasts as NumPy does (trailing axes first), unlike NumPy's boolean indexing."""
    mask = np.array([True, False, True, True, False])
    np.testing.assert_array_equal(run_op(lambda t: t[mask], X), np.where(mask, X, 0))
    rows = np.array([True, False, True]).reshape(3, 1, 1)
    np.testing.assert_array_equal(run_op(lambda t: t[rows], X), np.where(rows, X, 0))
    full_mask = X % 3 == 0
    np.testing.assert_array_equal(run_op(lambda t, m: t[m], X, full_mask), np.where(full_mask, X, 0))


def test_indexing_a_vector_by_int_gives_a_scalar():
    result = run_op(lambda t: t[3], np.arange(5, dtype=np.int32))
    assert result.shape == () and result == 3


def test_diag_uses_flatten_and_a_strided_index():
    square = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(run_op(lambda t: t.diag(), square), np.diag(square))


@pytest.mark.parametrize("key", [True, "a", Ellipsis, None, 1.5, (0, None), np.array([0.5])])
def test_unsupported_keys_are_type_errors(x, key):
    with pytest.raises(TypeError, match="valid indices"):
        x[key]


def test_bad_index_tensors_add_nothing_to_the_graph(x):
    with pytest.raises(ValueError, match=r"getitem: shapes \(2,\) and \(3, 4, 5\) cannot be broadcast"):
        x[np.array([True, False])]
    scalar = popxl.variable(np.float32(1.0))
    with pytest.raises(IndexError, match="is a scalar; there is no axis to gather from"):
        scalar[[0]]
    assert not x.graph.ops and not x.graph.constants


def test_index_errors(x):
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]


# ----- dynamic_slice and dynamic_update -----
@pytest.mark.parametrize("offsets, axes, sizes", [
    ([1], [0], [2]), ([0, 2], [1, 2], [3, 3]), ([2, 1, 0], [0, 1, 2], [1, 3, 5]), ([3], [-1], [2]),
])
def test_dynamic_slice_matches_numpy_slicing(offsets, axes, sizes):
    index = np.array(offsets, np.uint32)
    result = run_op(lambda t, i: ops.dynamic_slice(t, i, axes, sizes, False), X, index)
    key = [slice(None)] * 3
    for offset, axis, size in zip(offsets, axes, sizes):
        key[axis] = slice(offset, offset + size)
    np.testing.assert_array_equal(result, X[tuple(key)])


def test_dynamic_slice_wraps_and_treats_offsets_past_the_end_as_zero():
    index = np.array([3, 7], np.uint32)
    result = run_op(lambda t, i: ops.dynamic_slice(t, i, [1, 2], [2, 2], True), X, index)
    np.testing.assert_array_equal(result, X[:, [3, 0]][:, :, [0, 1]])


def test_dynamic_slice_reads_the_offset_at_run_time():
    ir = popxl.Ir()
    with ir.main_graph:
        table = popxl.variable(np.arange(10, dtype=np.int32))
        index_stream = popxl.h2d_stream((1,), popxl.uint32)
        out = ops.dynamic_slice(table, ops.host_load(index_stream), [0], [2], False)
        out_stream = popxl.d2h_stream(out.shape, out.dtype)
        ops.host_store(out_stream, out)
    with popxl.Session(ir, "ipu_model") as session:
        results = [session.run({index_stream: np.array([offset], np.uint32)})[out_stream] for offset in (0, 4, 8)]
    np.testing.assert_array_equal(results, [[0, 1], [4, 5], [8, 9]])


def test_dynamic_update_copies_and_dynamic_update_in_place_writes():
    index = np.array([1, 3], np.uint32)
    update = -np.ones((3, 2, 5), np.float32)
    expected = X.copy()
    expected[:, 1:3, 3:5] = update[:, :, :2]
    update = update[:, :, :2]
    result, (updated_x, *_) = run_op_on_variables(
        lambda t, i, u: ops.dynamic_update(t, i, u, [1, 2], [2, 2], False), X, index, update)
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(updated_x, X)
    result, (updated_x, *_) = run_op_on_variables(
        lambda t, i, u: ops.dynamic_update_(t, i, u, [1, 2], [2, 2], False), X, index, update)
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(updated_x, expected)


def test_dynamic_update_takes_an_update_without_the_slices_leading_1():
    index = np.array([2], np.uint32)
    update = np.full((4, 5), 7.0, np.float32)  # the slice X[2:3] has shape (1, 4, 5)
    result = run_op(lambda t, i, u: ops.dynamic_update(t, i, u, [0], [1], False), X, index, update)
    expected = X.copy()
    expected[2] = update
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("update_shape", [(2, 4, 5), (4, 4)])
def test_dynamic_update_is_built_as_in_popxl_and_its_update_shape_checked_when_the_session_compiles(update_shape):
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(X)
        index = popxl.variable(np.array([0], np.uint32))
        out = ops.dynamic_update(t, index, popxl.variable(np.zeros(update_shape, np.float32)), [0], [1], False)
    assert out.shape == X.shape
    with pytest.raises(ValueError, match=rf"dynamic_update: t_update has shape \({update_shape[0]}, .*; the slice "
                                         r"it replaces has shape \(1, 4, 5\)"):
        popxl.Session(ir, "ipu_model")


def test_dynamic_update_wraps_like_dynamic_slice():
    result = run_op(lambda t, i, u: ops.dynamic_update(t, i, u, [0], [2], False),
                    np.zeros(4, np.int32), np.array([3], np.uint32), np.array([7, 8], np.int32))
    np.testing.assert_array_equal(result, [8, 0, 0, 7])


def test_dynamic_errors(x):
    index = popxl.variable(np.array([0], np.uint32))
    with pytest.raises(ValueError, match=r"size 4 for axis 0 must be between 1 and the axis length 3"):
        ops.dynamic_slice(x, index, [0], [4], False)
    with pytest.raises(ValueError, match=r"one offset per axis \(2\), got shape \(1,\)"):
        ops.dynamic_slice(x, index, [0, 1], [1, 1], False)
    with pytest.raises(TypeError, match="expected a int tensor, got float32"):
        ops.dynamic_slice(x, popxl.variable(np.array([0.0], np.float32)), [0], [1], False)


# ----- gather -----
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("indices_shape", [(), (2,), (2, 3)])
def test_gather_matches_numpy_take(axis, indices_shape):
    indices = RNG.integers(0, X.shape[axis], indices_shape).astype(np.int32)
    result = run_op(lambda t, i: ops.gather(t, i, axis), X, indices)
    np.testing.assert_array_equal(result, np.take(X, indices, axis))


def test_tied_gather_gives_the_numbers_of_gather():
    indices = np.array([3, 0, 3], np.uint32)
    result = run_op(lambda t, i: ops.tied_gather(t, i, axis=1), X, indices)
    np.testing.assert_array_equal(result, np.take(X, indices, 1))


def test_gather_zero_oor_zeroes_out_of_range_indices():
    indices = np.array([[0, 3], [-1, 2]], np.int32)
    result = run_op(lambda t, i: ops.gather(t, i, axis=0, zero_OOR=True), X, indices)
    expected = np.take(X, np.clip(indices, 0, 2), 0)
    expected[0, 1] = expected[1, 0] = 0
    np.testing.assert_array_equal(result, expected)


def test_gather_without_zero_oor_takes_negative_indices_from_the_end():
    result = run_op(lambda t, i: ops.gather(t, i), np.arange(5, dtype=np.int32), np.array([-1, 1], np.int32))
    np.testing.assert_array_equal(result, [4, 1])


def test_groupedgather_gathers_per_group():
    table = RNG.standard_normal((2, 6, 3)).astype(np.float32)
    indices = np.array([[5, 0], [1, 1]], np.int32)
    result = run_op(lambda t, i: ops.groupedgather(t, i, axis=0, group_size=2), table, indices)
    np.testing.assert_array_equal(result, np.stack([table[0][[5, 0]], table[1][[1, 1]]]))
    columns = np.array([[2, 0], [1, 1]], np.int32)
    result = run_op(lambda t, i: ops.groupedgather(t, i, axis=1, group_size=2), table, columns)
    np.testing.assert_array_equal(result, np.stack([table[0][:, [2, 0]], table[1][:, [1, 1]]]))


def test_gather_errors(x):
    with pytest.raises(TypeError, match="gather: expected a int tensor, got float32"):
        ops.gather(x, x)
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        ops.gather(x, popxl.variable(np.array([0], np.int32)), axis=3)
    with pytest.raises(ValueError, match="leading group dimension of group_size=2"):
        ops.groupedgather(x, popxl.variable(np.zeros((2, 1), np.int32)), group_size=2)


# ----- scatter -----
def test_scatter_matches_onnx_scatter_elements():
    data = np.zeros((3, 3), np.float32)
    indices = np.array([[1, 0, 2], [0, 2, 1]], np.int32)
    updates = np.array([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], np.float32)
    expected = np.array([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]], np.float32)
    np.testing.assert_array_equal(run_op(lambda t, i, v: ops.scatter(t, i, v), data, indices, updates), expected)


def test_scatter_along_the_last_axis_with_negative_indices():
    data = np.arange(10, dtype=np.int32).reshape(2, 5)
    indices = np.array([[1, -1]], np.int32)
    values = np.array([[70, 80]], np.int32)
    result = run_op(lambda t, i, v: ops.scatter(t, i, v, axis=-1), data, indices, values)
    expected = data.copy()
    expected[0, 1], expected[0, 4] = 70, 80
    np.testing.assert_array_equal(result, expected)


def test_scatter_errors(x):
    indices = popxl.variable(np.zeros((3, 4, 5), np.int32))
    with pytest.raises(ValueError, match="must have the same shape"):
        ops.scatter(x, indices, popxl.variable(np.zeros((3, 4, 4), np.float32)))
    with pytest.raises(TypeError, match="same dtype"):
        ops.scatter(x, indices, popxl.variable(np.zeros((3, 4, 5), np.int32)))


# ----- scatter_reduce -----
def reference_scatter_reduce(data, indices, reduction, axis, axis_size, initial=None):
    shape = list(data.shape)
    shape[axis] = axis_size
    out = np.zeros(shape, data.dtype) if initial is None else initial.copy()
    touched = np.zeros(shape, bool)
    for position in np.ndindex(*data.shape):
        target = list(position)
        target[axis] = indices[position]
        target = tuple(target)
        value = data[position]
        if reduction == "none" or (not touched[target] and initial is None):
            out[target] = value
        elif reduction == "sum":
            out[target] += value
        elif reduction == "max":
            out[target] = max(out[target], value)
        else:
            out[target] = min(out[target], value)
        touched[target] = True
    return out


@pytest.mark.parametrize("reduction", ["sum", "max", "min", "none"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_reduce_matches_a_loop(reduction, axis):
    data = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    indices = RNG.integers(0, 5, data.shape).astype(np.int32)
    result = run_op(lambda d, i: ops.scatter_reduce(d, i, reduction, axis=axis, axis_size=5), data, indices)
    expected = reference_scatter_reduce(data, indices, reduction, axis % 3, 5)
    np.testing.assert_allclose(result, expected, rtol=1e-6)


@pytest.mark.parametrize("reduction", ["sum", "max", "min", "none"])
def test_scatter_reduce_starts_from_initial_values(reduction):
    data = RNG.standard_normal((5, 3)).astype(np.float32)
    indices = RNG.integers(0, 4, data.shape).astype(np.int32)
    initial = RNG.standard_normal((4, 3)).astype(np.float32)
    result = run_op(lambda d, i, v: ops.scatter_reduce(d, i, reduction, initial_values=v), data, indices, initial)
    np.testing.assert_allclose(result, reference_scatter_reduce(data, indices, reduction, 0, 4, initial), rtol=1e-6)


def test_scatter_reduce_broadcasts_a_vector_of_indices_along_the_axis():
    data = np.arange(12, dtype=np.int32).reshape(4, 3)
    indices = np.array([1, 0, 1, 2], np.int32)
    result = run_op(lambda d, i: ops.scatter_reduce(d, i, "sum", axis_size=3), data, indices)
    expected = np.stack([data[1], data[0] + data[2], data[3]])
    np.testing.assert_array_equal(result, expected)
    result = run_op(lambda d, i: ops.scatter_reduce(d, i, "max", axis=1, axis_size=3), data.T.copy(), indices)
    np.testing.assert_array_equal(result, np.stack([data[1], np.maximum(data[0], data[2]), data[3]], 1))


def test_scatter_reduce_errors(x):
    indices = popxl.variable(np.zeros((3, 4, 5), np.int32))
    with pytest.raises(ValueError, match="one of initial_values and axis_size must be specified"):
        ops.scatter_reduce(x, indices, "sum")
    with pytest.raises(ValueError, match=r"the reduction must be one of \['sum', 'min', 'max', 'none'\]"):
        ops.scatter_reduce(x, indices, "mean", axis_size=2)
    with pytest.raises(ValueError, match="neither match data"):
        ops.scatter_reduce(x, popxl.variable(np.zeros((3, 4), np.int32)), "sum", axis_size=2)
    with pytest.raises(ValueError, match=r"initial_values has shape \(3, 4, 5\), expected \(2, 4, 5\)"):
        ops.scatter_reduce(x, indices, "sum", initial_values=x, axis_size=2)


# ----- onehot -----
@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -3])
def test_onehot_matches_an_equality_table(axis):
    labels = np.array([[0, 2], [3, -1]], np.int32)
    values = np.array([-1.0, 5.0], np.float32)

    def fn(t, v):
        return ops.onehot(t, popxl.constant(4, popxl.int32), v, axis)

    result = run_op(fn, labels, values)
    hot = np.expand_dims(labels % 4, axis) == np.arange(4).reshape((4,) + (1,) * (2 - axis % 3))
    np.testing.assert_array_equal(result, np.where(hot, 5.0, -1.0))


def test_onehot_of_out_of_range_indices_is_all_off():
    result = run_op(lambda t, v: ops.onehot(t, popxl.constant(3, popxl.int32), v, -1),
                    np.array([5, 1], np.int32), np.array([0, 1], np.int32))
    np.testing.assert_array_equal(result, [[0, 0, 0], [0, 1, 0]])


def test_onehot_errors(x):
    labels = popxl.variable(np.array([0, 1], np.int32))
    values = popxl.variable(np.array([0.0, 1.0], np.float32))
    with pytest.raises(ValueError, match="num_classes must be a one-element constant tensor"):
        ops.onehot(labels, popxl.variable(np.array(3, np.int32)), values, -1)
    with pytest.raises(ValueError, match="axis 2 is out of range for indices of rank 1"):
        ops.onehot(labels, popxl.constant(3, popxl.int32), values, 2)
    with pytest.raises(ValueError, match=r"two entries \[off_value, on_value\]"):
        ops.onehot(labels, popxl.constant(3, popxl.int32), x, 0)
