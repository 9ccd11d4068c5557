"""Random ops: deterministic for a seed value, different for other seeds, and with the right statistics.

The numbers are statistically, not bit-wise, like the IPU's; the tests check distributions, and that
each op is a function of its seed.
"""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from popxl.random_seed import two_uint32_to_uint64, uint64_to_two_uint32

X = np.arange(1, 401, dtype=np.float32).reshape(20, 20)


def run_seeded(fn, seeds, replication=1, transfers=1, data=X):
    """Load a seed from a stream, store ``fn(seed, x)`` (x a variable holding ``data``), run once."""
    ir = popxl.Ir(replication=replication)
    ir.num_host_transfers = transfers
    with ir.main_graph:
        seed_stream = popxl.h2d_stream((2,), popxl.uint32, name="seed")
        x = popxl.variable(data, name="x")
        result = fn(ops.host_load(seed_stream), x)
        out = popxl.d2h_stream(result.shape, result.dtype, name="out")
        ops.host_store(out, result)
    with popxl.Session(ir, "ipu_model") as session:
        return session.run({seed_stream: seeds})[out]


# ----- host seeds -----
@pytest.mark.parametrize("kwargs, shape", [
    ({}, (2,)),
    ({"replicas": 4}, (4, 2)),
    ({"batches_per_step": 3, "replicas": 2}, (3, 2, 2)),
    ({"batches_per_step": 2, "gradient_accumulation_factor": 5}, (2, 5, 2)),
])
def test_create_seeds_shape_is_squeezed(kwargs, shape):
    seeds = popxl.create_seeds(42, **kwargs)
    assert seeds.shape == shape and seeds.dtype == np.uint32


def test_create_seeds_draws_uint64_from_numpy_seeded_with_seed_plus_offset():
    seeds = popxl.create_seeds(40, offset=2, replicas=3)
    expected = np.random.default_rng(42).integers(0, 2 ** 64 - 1, endpoint=True, dtype=np.uint64, size=3)
    assert [two_uint32_to_uint64(int(hi), int(lo)) for hi, lo in seeds] == [int(v) for v in expected]
    np.testing.assert_array_equal(popxl.create_seeds(42, replicas=3), seeds)


def test_uint64_splits_into_high_and_low_halves():
    assert uint64_to_two_uint32(2 ** 40 + 7) == (2 ** 8, 7)
    assert two_uint32_to_uint64(2 ** 8, 7) == 2 ** 40 + 7
    with pytest.raises(ValueError, match="cannot be represented as a uint64"):
        uint64_to_two_uint32(-1)
    with pytest.raises(ValueError, match="cannot be represented as a uint32"):
        two_uint32_to_uint64(2 ** 32, 0)


# ----- seeds on the device -----
def test_split_random_seed_gives_distinct_deterministic_seeds():
    seed = popxl.create_seeds(1)
    split = run_seeded(lambda s, x: ops.concat([t.reshape((1, 2)) for t in ops.split_random_seed(s, 3)]), seed)
    assert split.shape == (3, 2) and split.dtype == np.uint32
    assert len({tuple(row) for row in split}) == 3
    again = run_seeded(lambda s, x: ops.concat([t.reshape((1, 2)) for t in ops.split_random_seed(s, 3)]), seed)
    np.testing.assert_array_equal(split, again)


def test_split_random_seed_is_one_modify_op_per_seed_and_the_first_seeds_do_not_depend_on_n():
    ir = popxl.Ir()
    with ir.main_graph:
        seeds = ops.split_random_seed(popxl.variable(np.array([1, 2], np.uint32), name="s"), 3)
    assert [op.type for op in ir.main_graph.ops] == ["modify_random_seed"] * 3
    assert [int(op.inputs[1].data) for op in ir.main_graph.ops] == [0, 1, 2]
    assert [t.name for t in seeds] == ["s_split0", "s_split1", "s_split2"]
    seed = popxl.create_seeds(5)
    two = run_seeded(lambda s, x: ops.concat([t.reshape((1, 2)) for t in ops.split_random_seed(s, 2)]), seed)
    three = run_seeded(lambda s, x: ops.concat([t.reshape((1, 2)) for t in ops.split_random_seed(s, 3)]), seed)
    np.testing.assert_array_equal(three[:2], two)


def test_seed_tensors_must_be_two_uint32():
    ir = popxl.Ir()
    with ir.main_graph:
        bad = popxl.variable(np.zeros(3, np.uint32))
        with pytest.raises(ValueError, match=r"split_random_seed: the seed tensor must have shape \(2,\)"):
            ops.split_random_seed(bad)
        with pytest.raises(ValueError, match="random_uniform: the seed tensor"):
            ops.random_uniform(popxl.variable(np.zeros(2, np.int32)), (2,))
        with pytest.raises(ValueError, match="split_random_seed: n must be a positive int"):
            ops.split_random_seed(popxl.variable(np.zeros(2, np.uint32)), 0)


# ----- distributions -----
def test_random_uniform_statistics():
    values = run_seeded(lambda s, x: ops.random_uniform(s, (200, 100), low=-2.0, high=3.0), popxl.create_seeds(5))
    assert values.shape == (200, 100) and values.dtype == np.float32
    assert values.min() >= -2.0 and values.max() < 3.0
    assert abs(values.mean() - 0.5) < 0.05
    assert abs(values.std() - 5.0 / np.sqrt(12.0)) < 0.03


def test_random_normal_statistics_in_half_precision():
    values = run_seeded(lambda s, x: ops.random_normal(s, (200, 100), mean=1.0, std=0.5, dtype=popxl.float16),
                        popxl.create_seeds(6))
    assert values.dtype == np.float16
    assert abs(values.astype(np.float64).mean() - 1.0) < 0.02
    assert abs(values.astype(np.float64).std() - 0.5) < 0.02


def test_the_same_seed_gives_the_same_numbers_and_another_seed_others():
    uniform = lambda s, x: ops.random_uniform(s, (50,))  # noqa: E731
    first = run_seeded(uniform, popxl.create_seeds(9))
    np.testing.assert_array_equal(first, run_seeded(uniform, popxl.create_seeds(9)))
    assert not np.array_equal(first, run_seeded(uniform, popxl.create_seeds(10)))


def test_random_ops_refuse_integer_dtypes():
    ir = popxl.Ir()
    with ir.main_graph:
        seed = popxl.variable(np.zeros(2, np.uint32))
        with pytest.raises(TypeError, match="random_normal: dtype must be float16 or float32"):
            ops.random_normal(seed, (2,), dtype=popxl.int32)


# ----- dropout -----
def test_dropout_zeroes_about_p_and_scales_the_rest():
    out = run_seeded(lambda s, x: ops.dropout(x, s, 0.25), popxl.create_seeds(3))
    kept = out != 0
    assert abs(1 - kept.mean() - 0.25) < 0.06
    np.testing.assert_allclose(out[kept], X[kept] / 0.75, rtol=1e-6)


def test_dropout_with_p_zero_is_the_identity():
    np.testing.assert_array_equal(run_seeded(lambda s, x: ops.dropout(x, s, 0.0), popxl.create_seeds(3)), X)


def test_dropout_mask_depends_only_on_the_seed():
    twice = lambda s, x: ops.dropout(x, s, 0.5) - ops.dropout(x, s, 0.5)  # noqa: E731
    np.testing.assert_array_equal(run_seeded(twice, popxl.create_seeds(4)), np.zeros_like(X))
    a = run_seeded(lambda s, x: ops.dropout(x, s, 0.5), popxl.create_seeds(4))
    b = run_seeded(lambda s, x: ops.dropout(x, s, 0.5), popxl.create_seeds(8))
    assert not np.array_equal(a != 0, b != 0)


def test_shaped_dropout_keeps_or_drops_whole_rows():
    out = run_seeded(lambda s, x: ops.shaped_dropout(x, s, [20, 1], 0.5), popxl.create_seeds(11))
    rows_kept = (out != 0).all(axis=1)
    rows_dropped = (out == 0).all(axis=1)
    assert np.all(rows_kept | rows_dropped) and rows_kept.any() and rows_dropped.any()
    np.testing.assert_allclose(out[rows_kept], X[rows_kept] * 2.0)


@pytest.mark.parametrize("drop", [lambda t, s: ops.dropout(t, s, 0.5),
                                  lambda t, s: ops.shaped_dropout(t, s, [20, 1], 0.5)])
def test_the_gradient_of_dropout_drops_the_same_elements_of_the_output_gradient(drop):
    """As PopART's DropoutGradOp: the same seed, so the same mask and scale."""
    dy = X[::-1].copy()

    def forward_and_gradient(seed, x):
        graph = popxl.gir().create_graph(drop, x, seed)
        call_info = ops.call_with_info(graph, x, seed)
        grad_info = popxl.transforms.autodiff(graph, grads_required=[graph.inputs[0]])
        (dx,) = ops.call(grad_info.graph, popxl.constant(dy), inputs_dict=grad_info.inputs_dict(call_info))
        return ops.concat([call_info.outputs[0], dx])

    y, dx = np.split(run_seeded(forward_and_gradient, popxl.create_seeds(5)), 2)
    assert (y == 0).any() and (y != 0).any()
    np.testing.assert_allclose(dx, dy * y / X, rtol=1e-6)


def test_dropout_argument_errors():
    ir = popxl.Ir()
    with ir.main_graph:
        x, seed = popxl.variable(X), popxl.variable(np.zeros(2, np.uint32))
        with pytest.raises(ValueError, match=r"dropout: p must be a probability in \[0, 1\), got 1"):
            ops.dropout(x, seed, 1)
        with pytest.raises(ValueError, match=r"shaped_dropout: the mask shape \(3, 1\) must broadcast"):
            ops.shaped_dropout(x, seed, (3, 1), 0.5)


def test_dropout_of_integers_is_built_as_in_popxl_and_refused_when_the_session_compiles():
    ir = popxl.Ir()
    with ir.main_graph:
        seed = popxl.variable(np.zeros(2, np.uint32))
        dropped = ops.dropout(popxl.variable(np.ones(3, np.int32)), seed, 0.5)
    assert dropped.spec == popxl.TensorSpec((3,), popxl.int32)
    with pytest.raises(TypeError, match="dropout: expected a float tensor, got int32"):
        popxl.Session(ir, "ipu_model")


# ----- replicas and steps -----
def test_replicas_given_different_seeds_draw_different_numbers():
    seeds = popxl.create_seeds(21, replicas=4)
    per_replica = run_seeded(lambda s, x: ops.random_uniform(s, (16,)), seeds, replication=4)
    assert per_replica.shape == (4, 16)
    assert len({row.tobytes() for row in per_replica}) == 4
    for replica in range(4):  # each replica computes what one replica alone would with its seed
        np.testing.assert_array_equal(per_replica[replica],
                                      run_seeded(lambda s, x: ops.random_uniform(s, (16,)), seeds[replica]))


def test_each_host_transfer_brings_its_own_seed():
    """A loop of three steps loads a new seed each step (num_host_transfers=3)."""
    ir = popxl.Ir()
    ir.num_host_transfers = 3
    with ir.main_graph:
        seed_stream = popxl.h2d_stream((2,), popxl.uint32, name="seed")
        out = popxl.d2h_stream((8,), popxl.float32, name="out")

        def step():
            ops.host_store(out, ops.random_normal(ops.host_load(seed_stream), (8,)))

        ops.repeat(ir.create_graph(step), 3)
    with popxl.Session(ir, "ipu_model") as session:
        steps = session.run({seed_stream: popxl.create_seeds(2, batches_per_step=3)})[out]
    assert steps.shape == (3, 8) and len({row.tobytes() for row in steps}) == 3
