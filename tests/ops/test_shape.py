"""reshape, transpose, squeeze, concat, split, subsample, identity and detach against NumPy, and
the memory sharing of their in-place and view forms."""
import numpy as np
import pytest

import popart
import popxl
import popxl.ops as ops
from helpers import run_op, run_op_on_variables

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.fixture
def x():
    ir = popxl.Ir()
    with ir.main_graph:
        yield popxl.variable(X, name="x")


# ----- reshape and flatten -----
@pytest.mark.parametrize("shape", [(4, 6), (4, -1), (-1,), (2, 12, 1), (24,)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.bool_])
def test_reshape_matches_numpy(shape, dtype):
    data = X.astype(dtype)
    result = run_op(lambda t: ops.reshape(t, shape), data)
    assert result.dtype == dtype
    np.testing.assert_array_equal(result, data.reshape(shape))


def test_tensor_methods_reshape_and_flatten():
    reshaped, flat = run_op(lambda t: (t.reshape((6, 4)), t.flatten()), X)
    np.testing.assert_array_equal(reshaped, X.reshape(6, 4))
    np.testing.assert_array_equal(flat, X.ravel())


def test_flatten_is_a_reshape_to_one_axis(x):
    flat = ops.flatten(x)
    assert flat.shape == (24,)
    assert flat.producer.type == "reshape"


@pytest.mark.parametrize("shape, message", [
    ((5, 5), r"cannot reshape"),
    ((-1, -1), r"^Reshape shape can contain at most one '-1' value\. Shape: \(-1, -1\)"),
    ((0, 24), r"^Invalid shape value in reshape\. Must be >0 or -1\. Shape: \(0, 24\)"),
    ((-2, 12), r"^Invalid shape value in reshape\."),
    ((5, -1), r"cannot reshape tensor 'x'"),
])
def test_reshape_errors(x, shape, message):
    with pytest.raises(ValueError, match=message):
        ops.reshape(x, shape)
    assert not x.graph.ops


def test_transpose_refuses_axes_beyond_the_rank_in_popxls_words(x):
    with pytest.raises(ValueError, match=r"^Values in permutation must be less than the number of dimensions of the "
                                         r"tensor \(3\): \(0, 3, 1\)\. .*rank 3"):
        ops.transpose(x, (0, 3, 1))


def test_reshape_in_place_aliases_its_input():
    def fn(t):
        y = t.reshape_((6, 4))
        return ops.var_updates.accumulate_(y, popxl.constant(np.ones((6, 4), np.float32)))

    result, (updated,) = run_op_on_variables(fn, X)
    np.testing.assert_array_equal(updated, X + 1)
    np.testing.assert_array_equal(result, X.reshape(6, 4) + 1)


def test_readers_of_the_source_before_an_in_place_write_see_the_old_values():
    def fn(t):
        ops.var_updates.accumulate_(t.reshape_((6, 4)), popxl.constant(np.ones((6, 4), np.float32)))
        return t

    result, (updated,) = run_op_on_variables(fn, X)
    np.testing.assert_array_equal(result, X)
    np.testing.assert_array_equal(updated, X + 1)


def test_flatten_in_place_aliases_its_input():
    def fn(t):
        ops.add_(t.flatten_(), popxl.constant(np.arange(24, dtype=np.float32)))
        return t

    _, (updated,) = run_op_on_variables(fn, X)
    np.testing.assert_array_equal(updated, X + X)


def test_writing_into_an_out_of_place_reshape_leaves_the_variable_alone():
    def fn(t):
        y = ops.add_(t.reshape((6, 4)), popxl.constant(np.ones((6, 4), np.float32)))
        return y, t

    (y, t), (updated,) = run_op_on_variables(fn, X)
    np.testing.assert_array_equal(y, X.reshape(6, 4) + 1)
    np.testing.assert_array_equal(t, X)
    np.testing.assert_array_equal(updated, X)


def test_reshape_read_before_its_source_is_updated_keeps_the_old_values():
    def fn(t):
        with popxl.in_sequence():
            y = t.reshape((24,))
            ops.var_updates.accumulate_(t, popxl.constant(np.ones_like(X)))
            return y

    result, (updated,) = run_op_on_variables(fn, X)
    np.testing.assert_array_equal(result, X.ravel())
    np.testing.assert_array_equal(updated, X + 1)


def test_in_place_reshape_of_a_transposed_alias_cannot_be_a_view():
    def fn(t):
        y = t.T_.reshape_((24,))
        ops.add_(y, popxl.constant(np.ones(24, np.float32)))
        return t

    with pytest.raises(Exception, match="reshape_: .* not contiguous"):
        run_op_on_variables(fn, X)


# ----- transpose -----
@pytest.mark.parametrize("permutation", [None, (0, 2, 1), (2, 0, 1), (1, 0, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_transpose_matches_numpy(permutation, dtype):
    data = X.astype(dtype)
    result = run_op(lambda t: ops.transpose(t, permutation), data)
    np.testing.assert_array_equal(result, np.transpose(data, permutation))


def test_tensor_T_reverses_the_axes():
    np.testing.assert_array_equal(run_op(lambda t: t.T, X), X.T)
    np.testing.assert_array_equal(run_op(lambda t: t.transpose((1, 0, 2)), X), X.transpose(1, 0, 2))


def test_transpose_in_place_aliases_its_input():
    def fn(t):
        ops.add_(t.T_, popxl.constant(np.ones((4, 3, 2), np.float32) * np.arange(4).reshape(4, 1, 1)))
        return t

    _, (updated,) = run_op_on_variables(fn, X)
    np.testing.assert_array_equal(updated, X + np.arange(4, dtype=np.float32))


def test_transpose_in_place_method_and_function_agree():
    def fn(t):
        ops.add_(ops.transpose_(t, (0, 2, 1)), popxl.constant(np.ones((2, 4, 3), np.float32)))
        return t

    _, (updated,) = run_op_on_variables(fn, X)
    np.testing.assert_array_equal(updated, X + 1)


def test_transpose_errors(x):
    with pytest.raises(ValueError, match=r"^Values in permutation must be less than .*found \(3,\)"):
        ops.transpose(x, (0, 1, 3))
    with pytest.raises(ValueError, match="exactly once"):
        ops.transpose(x, (0, 1, 1))


# ----- squeeze -----
@pytest.mark.parametrize("axes", [None, [0], [-1], [0, 3], [3, 0]])
def test_squeeze_matches_numpy(axes):
    data = np.arange(6, dtype=np.int32).reshape(1, 2, 3, 1)
    expected = np.squeeze(data, axis=None if axes is None else tuple(axes))
    np.testing.assert_array_equal(run_op(lambda t: ops.squeeze(t, axes), data), expected)


def test_squeeze_to_a_scalar():
    result = run_op(ops.squeeze, np.array([[5.0]], np.float32))
    assert result.shape == ()
    assert result == 5.0


def test_squeeze_errors(x):
    with pytest.raises(ValueError, match=r"can't squeeze axis 1 .* its length is 3, not 1"):
        ops.squeeze(x, [1])
    with pytest.raises(ValueError, match="duplicates"):
        ops.squeeze(ops.reshape(x, (1, 24)), [0, -2])
    with pytest.raises(ValueError, match="out of range"):
        ops.squeeze(x, [3])


# ----- concat and split -----
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concat_matches_numpy(axis):
    a, b = X, X * 10
    result = run_op(lambda s, t: ops.concat([s, t], axis), a, b)
    np.testing.assert_array_equal(result, np.concatenate([a, b], axis))


def test_concat_of_three_integer_tensors_with_different_lengths():
    arrays = [np.arange(n, dtype=np.int32).reshape(1, n) for n in (1, 2, 3)]
    result = run_op(lambda *ts: ops.concat(ts, axis=1), *arrays)
    np.testing.assert_array_equal(result, np.concatenate(arrays, 1))


@pytest.mark.parametrize("concat", [ops.concat, ops.concat_])
def test_concat_of_different_dtypes_is_refused_in_popxls_words(concat):
    ir = popxl.Ir()
    with ir.main_graph:
        a, b = popxl.variable(np.ones(2, np.float32)), popxl.variable(np.ones(2, np.float16))
        with pytest.raises(TypeError, match=r"^All inputs to a concat operation must have the same type: "
                                            r"\[dtype.float32, dtype.float16\]"):
            concat([a, b], 0)


def test_concat_in_place_variant_gives_the_same_numbers():
    np.testing.assert_array_equal(run_op(lambda s, t: ops.concat_([s, t], 1), X, X), np.concatenate([X, X], 1))


def test_concat_errors(x):
    y = popxl.variable(np.zeros((2, 5, 4), np.float32))
    for error in (ValueError, popart.popart_exception):  # a shape-inference error, as in PopART
        with pytest.raises(error, match="differ outside axis 2"):
            ops.concat([x, y], axis=2)
    with pytest.raises(TypeError, match="must have the same type"):
        ops.concat([x, popxl.variable(X.astype(np.int32))])
    with pytest.raises(ValueError, match="at least one tensor"):
        ops.concat([])
    with pytest.raises(ValueError, match="out of range"):
        ops.concat([x, x], axis=3)


@pytest.mark.parametrize("splits, axis", [(2, 0), (3, 1), (2, -1), ([1, 3], 2), ([3, 0, 1], -1)])
def test_split_matches_numpy(splits, axis):
    parts = run_op(lambda t: ops.split(t, splits, axis), X)
    sections = splits if isinstance(splits, int) else list(np.cumsum(splits)[:-1])
    expected = np.split(X, sections, axis)
    assert len(parts) == len(expected)
    for part, want in zip(parts, expected):
        np.testing.assert_array_equal(part, want)


def test_split_returns_a_list(x):
    parts = ops.split(x, 2, axis=2)
    assert isinstance(parts, list) and [p.shape for p in parts] == [(2, 3, 2), (2, 3, 2)]


def test_writing_into_a_split_part_leaves_the_source_alone():
    def fn(t):
        first, second = ops.split(t, 2, axis=0)
        return ops.add_(second, popxl.constant(np.ones((1, 3, 4), np.float32)))

    second, (updated,) = run_op_on_variables(fn, X)
    np.testing.assert_array_equal(second, X[1:] + 1)
    np.testing.assert_array_equal(updated, X)


def test_split_errors(x):
    with pytest.raises(ValueError, match=r"5 does not equally divide axis 2 .* \(length 4\)"):
        ops.split(x, 5, axis=2)
    for error in (ValueError, popart.popart_exception):  # a shape-inference error, as in PopART
        with pytest.raises(error, match="add up to the length 4"):
            ops.split(x, [1, 2], axis=-1)


# ----- subsample -----
@pytest.mark.parametrize("strides", [(1, 1, 1), (2, 2, 3), (1, 3, 2), (5, 1, 4)])
def test_subsample_matches_numpy_strides(strides):
    result = run_op(lambda t: ops.subsample(t, strides), X)
    np.testing.assert_array_equal(result, X[::strides[0], ::strides[1], ::strides[2]])


def test_subsample_of_a_vector_takes_an_int():
    np.testing.assert_array_equal(run_op(lambda t: ops.subsample(t, 3), np.arange(10, dtype=np.int32)),
                                  np.arange(0, 10, 3))


def test_subsample_with_fewer_strides_than_axes_keeps_the_rest_whole():
    np.testing.assert_array_equal(run_op(lambda t: ops.subsample(t, [2, 2]), X), X[::2, ::2, :])
    np.testing.assert_array_equal(run_op(lambda t: ops.subsample(t, 2), X), X[::2])


def test_subsample_errors(x):
    with pytest.raises(ValueError, match="4 strides given for a tensor of rank 3"):
        ops.subsample(x, [2, 2, 1, 1])
    with pytest.raises(ValueError, match="strides must be >= 1"):
        ops.subsample(x, [1, 0, 1])


# ----- identity, rename, detach -----
def test_identity_rename_and_detach_pass_values_through():
    a, b, c, d = run_op(lambda t: (ops.identity(t), ops.rename(t, "renamed"), ops.detach(t), t.detach_()), X)
    for result in (a, b, c, d):
        np.testing.assert_array_equal(result, X)


def test_rename_is_identity_and_names_the_output(x):
    assert ops.rename is ops.identity
    assert ops.identity(x, "y").name == "y"
    assert ops.identity(x).name == "identity_x"


def test_detach_in_place_aliases_and_the_out_of_place_one_copies_when_written():
    def fn(t):
        ops.add_(t.detach_(), popxl.constant(np.ones_like(X)))
        ops.add_(ops.detach(t), popxl.constant(np.ones_like(X)))
        return t

    _, (updated,) = run_op_on_variables(fn, X)
    np.testing.assert_array_equal(updated, X + 1)


def test_identity_of_a_non_tensor_is_a_type_error(x):
    with pytest.raises(TypeError, match="identity: t must be a Tensor, got ndarray"):
        ops.identity(X)
