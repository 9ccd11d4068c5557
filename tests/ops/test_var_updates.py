"""Variable updates against the formulas popxl documents, written out in NumPy."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from popxl.ops import var_updates

from helpers import run_op_on_variables

RNG = np.random.default_rng(7)
T = RNG.normal(size=(3, 4)).astype(np.float32)
X = RNG.normal(size=(3, 4)).astype(np.float32)


def _updated(fn, *arrays):
    """Run ``fn`` on variables; return what it returned and the first variable afterwards."""
    result, (target, *_) = run_op_on_variables(fn, *arrays)
    return result, target


# ----- accumulators -----
@pytest.mark.parametrize("name, f, expected", [
    ("accumulate_", None, T + X),
    ("accumulate_", 0.5, T + 0.5 * X),
    ("accumulate_square_", 1.0, T + X ** 2),
    ("accumulate_square_", 0.25, T + 0.25 * X ** 2),
    ("accumulate_mean_", 3.0, 3.0 / 4.0 * T + X / 4.0),
    ("accumulate_moving_average_", 0.9, 0.9 * T + 0.1 * X),
    ("accumulate_moving_average_square_", 0.9, 0.9 * T + 0.1 * X ** 2),
])
def test_accumulators_with_a_number_factor(name, f, expected):
    op = getattr(var_updates, name)
    args = () if f is None else (f,)
    result, target = _updated(lambda t, x: op(t, x, *args), T, X)
    np.testing.assert_allclose(target, expected, rtol=1e-6)
    np.testing.assert_allclose(result, expected, rtol=1e-6)


@pytest.mark.parametrize("name, expected", [
    ("accumulate_", T + 0.5 * X),
    ("accumulate_square_", T + 0.5 * X ** 2),
    ("accumulate_mean_", 0.5 / 1.5 * T + X / 1.5),
    ("accumulate_moving_average_", 0.5 * T + 0.5 * X),
    ("accumulate_moving_average_square_", 0.5 * T + 0.5 * X ** 2),
])
def test_accumulators_with_a_tensor_factor(name, expected):
    op = getattr(var_updates, name)
    _, target = _updated(lambda t, x, f: op(t, x, f), T, X, np.float32(0.5))
    np.testing.assert_allclose(target, expected, rtol=1e-6)


def test_accumulate_mean_over_steps_gives_the_running_mean():
    values = [np.float32(v) for v in (1.0, 2.0, 6.0)]
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        mean = popxl.variable(np.float32(0), name="mean")
        for step, value in enumerate(values):
            var_updates.accumulate_mean_(mean, popxl.constant(value), float(step))
    with popxl.Session(ir, "ipu_model") as session:
        session.run({})
        np.testing.assert_allclose(session.get_tensor_data(mean), np.mean(values))


def test_accumulate_mixes_dtypes_in_the_target_dtype():
    half = X.astype(np.float16)
    _, target = _updated(lambda t, x: var_updates.accumulate_(t, x, 2.0), T, half)
    assert target.dtype == np.float32
    np.testing.assert_allclose(target, T + 2.0 * half.astype(np.float32), rtol=1e-6)


def test_accumulate_does_not_broadcast():
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(T)
        with pytest.raises(ValueError, match=r"accumulate_: X must have the shape .*\(3, 4\).*no broadcasting"):
            var_updates.accumulate_(t, popxl.constant(np.ones(4, np.float32)))
        assert len(ir.main_graph.ops) == 0


def test_a_factor_tensor_must_be_scalar():
    ir = popxl.Ir()
    with ir.main_graph:
        t, x = popxl.variable(T), popxl.variable(X)
        with pytest.raises(ValueError, match="accumulate_square_: f must be a scalar tensor"):
            var_updates.accumulate_square_(t, x, popxl.constant(np.ones(2, np.float32)))
        with pytest.raises(TypeError, match="accumulate_: f must be a number or a scalar Tensor"):
            var_updates.accumulate_(t, x, "0.5")


@pytest.mark.parametrize("f, expected", [(0.5, 0.5 * T), (-2.0, -2.0 * T)])
def test_accumulator_scale(f, expected):
    _, target = _updated(lambda t: var_updates.accumulator_scale_(t, f), T)
    np.testing.assert_allclose(target, expected)


@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply")
def test_accumulator_scale_by_number_zero_clears_nan_and_inf_but_a_tensor_zero_multiplies():
    data = np.array([1.0, np.nan, np.inf], np.float32)
    _, by_number = _updated(lambda t: var_updates.accumulator_scale_(t, 0.0), data)
    np.testing.assert_array_equal(by_number, [0.0, 0.0, 0.0])
    _, by_tensor = _updated(lambda t, f: var_updates.accumulator_scale_(t, f), data, np.float32(0))
    np.testing.assert_array_equal(by_tensor, data * np.float32(0))


def test_accumulator_zero():
    result, target = _updated(var_updates.accumulator_zero_, T)
    np.testing.assert_array_equal(target, np.zeros_like(T))
    np.testing.assert_array_equal(result, np.zeros_like(T))


def test_copy_var_update():
    _, target = _updated(var_updates.copy_var_update_, T, X)
    np.testing.assert_array_equal(target, X)


def test_in_place_updates_return_an_alias_of_the_target():
    ir = popxl.Ir()
    with ir.main_graph:
        t, x = popxl.variable(T), popxl.variable(X)
        out = var_updates.accumulate_square_(t, x)
    assert out.producer.modified == (0,) and out.producer.aliases == {0: 0}


# ----- sparse accumulate -----
def test_sparse_accumulate_adds_rows_at_indices_with_repeats():
    table = np.zeros((5, 3), np.float32)
    rows = RNG.normal(size=(4, 3)).astype(np.float32)
    indices = np.array([1, 3, 1, 0], np.int32)
    _, target = _updated(lambda t, x, i: var_updates.sparse_accumulate_(t, x, i, f=0.5), table, rows, indices)
    expected = table.copy()
    np.add.at(expected, indices, 0.5 * rows)
    np.testing.assert_allclose(target, expected, rtol=1e-6)


def test_sparse_accumulate_is_the_reverse_of_gather_along_an_axis():
    table = RNG.normal(size=(2, 6, 3)).astype(np.float32)
    indices = np.array([[5, 0], [2, 5]], np.int32)
    slices = RNG.normal(size=(2, 2, 2, 3)).astype(np.float32)  # table.shape with axis 1 -> indices.shape
    _, target = _updated(lambda t, x, i, f, w: var_updates.sparse_accumulate_(t, x, i, axis=1, f=f, W=w),
                         table, slices, indices, np.float32(2.0), table)
    expected = table.copy()
    for a in range(2):
        for b in range(2):
            expected[:, indices[a, b]] += 2.0 * slices[:, a, b]
    np.testing.assert_allclose(target, expected, rtol=1e-6)


@pytest.mark.parametrize("axis, update_shape, message", [
    (0, (4, 2), r"sparse_accumulate_: X must have shape \(4, 3\)"),
    (2, (5, 4), r"sparse_accumulate_: axis 2 is out of range for a tensor of rank 2"),
])
def test_sparse_accumulate_is_built_as_in_popxl_and_checked_when_the_session_compiles(axis, update_shape, message):
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(np.zeros((5, 3), np.float32))
        var_updates.sparse_accumulate_(t, popxl.constant(np.zeros(update_shape, np.float32)),
                                       popxl.constant(np.zeros(4, np.int32)), axis)
    pb_op = ir._pb_ir.getMainGraph().getOps()[-1]
    assert (pb_op.opType(), pb_op.getAxis(), pb_op.getFactor().val()) == ("PopartSparseAccumulate", axis, 1.0)
    with pytest.raises(ValueError, match=message):
        popxl.Session(ir, "ipu_model")


# ----- the Adam family -----
def _adam_reference(m, v, w, t, wd, beta1, beta2, eps, mode):
    """The updater term as popxl documents it; returns (x, incremented t)."""
    t = t + 1
    if mode == "adamax":
        mc = m / (1 - beta1 ** t)
        return mc / (v + eps) + wd * w, t
    if beta1 is not None:
        m, v = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return m / (np.sqrt(v) + eps) + wd * w, t


M = np.abs(RNG.normal(size=(3, 4))).astype(np.float32)
V = np.abs(RNG.normal(size=(3, 4))).astype(np.float32) + 0.1
W = RNG.normal(size=(3, 4)).astype(np.float32)


@pytest.mark.parametrize("updater", [var_updates.adam_updater, var_updates.lamb_updater])
def test_adam_and_lamb_updaters_without_bias_correction(updater):
    result, _ = run_op_on_variables(lambda m, v: updater(m, v, epsilon=1e-3), M, V)
    np.testing.assert_allclose(result, M / (np.sqrt(V) + 1e-3), rtol=1e-6)


@pytest.mark.parametrize("updater", [var_updates.adam_updater, var_updates.lamb_updater])
def test_adam_updater_with_weight_decay_and_bias_correction_increments_the_step(updater):
    fn = lambda m, v, w, step: updater(m, v, w, step, weight_decay=0.01, beta1=0.9, beta2=0.999,  # noqa: E731
                                       epsilon=1e-5)
    result, (_, _, _, step) = run_op_on_variables(fn, M, V, W, np.float32(4))
    expected, _ = _adam_reference(M, V, W, 4, 0.01, 0.9, 0.999, 1e-5, "adam")
    np.testing.assert_allclose(result, expected, rtol=1e-5)
    assert step == 5


def test_adam_updater_takes_hyperparameters_as_tensors():
    fn = lambda m, v, w, step, wd, b1, b2, eps: var_updates.adam_updater(  # noqa: E731
        m, v, w, step, weight_decay=wd, beta1=b1, beta2=b2, epsilon=eps)
    result, _ = run_op_on_variables(fn, M, V, W, np.int32(0), *(np.float32(p) for p in (0.1, 0.8, 0.99, 1e-4)))
    expected, _ = _adam_reference(M, V, W, 0, 0.1, 0.8, 0.99, 1e-4, "adam")
    np.testing.assert_allclose(result, expected, rtol=1e-5)


def test_adamax_updater():
    fn = lambda m, v, w, step: var_updates.adamax_updater(m, v, w, step, weight_decay=0.5, beta1=0.8)  # noqa
    result, (*_, step) = run_op_on_variables(fn, M, V, W, np.float32(1))
    expected, _ = _adam_reference(M, V, W, 1, 0.5, 0.8, None, 1e-7, "adamax")
    np.testing.assert_allclose(result, expected, rtol=1e-6)
    assert step == 2


def test_updater_argument_errors():
    ir = popxl.Ir()
    with ir.main_graph:
        m, v = popxl.variable(M), popxl.variable(V)
        step = popxl.variable(np.float32(0))
        for decay in (0.1, 0.0):  # as popxl: any weight_decay given needs the weight
            with pytest.raises(ValueError, match=r"^Weight decay requires weight to not be None\. \(adam_updater"):
                var_updates.adam_updater(m, v, weight_decay=decay)
        with pytest.raises(ValueError, match=r"^Bias correction requires both beta1 and beta2 to not be None\. "
                                             r"\(lamb_updater"):
            var_updates.lamb_updater(m, v, time_step=step, beta1=0.9)
        with pytest.raises(ValueError, match=r"^AdaMax requires time_step to not be None\."):
            var_updates.adamax_updater(m, v)
        # both wrong: the weight decay is named first, as popxl names it
        with pytest.raises(ValueError, match=r"^Weight decay requires weight .*\(lamb_updater"):
            var_updates.lamb_updater(m, v, time_step=step, weight_decay=0.1)
        with pytest.raises(ValueError, match=r"^Weight decay requires weight .*\(adamax_updater"):
            var_updates.adamax_updater(m, v, weight_decay=0.1)
        assert len(ir.main_graph.ops) == 0
        var_updates.adam_updater(m, v)  # no decay needs no weight


def _lamb_reference(w, x, lr, max_weight_norm):
    r1, r2 = np.sum(w.astype(np.float64) ** 2), np.sum(x.astype(np.float64) ** 2)
    ratio = 1.0 if 0 in (r1, r2, max_weight_norm) else min(np.sqrt(r1), max_weight_norm) / np.sqrt(r2)
    return w - lr * ratio * x


@pytest.mark.parametrize("max_weight_norm", [None, 0.0, 0.5, 100.0])
def test_adam_var_update_applies_the_lamb_trust_ratio(max_weight_norm):
    def fn(w, x):
        r1, r2 = ops.lamb_square(w), ops.lamb_square(x)
        return var_updates.adam_var_update(w, x, r1, r2, learning_rate=0.1, max_weight_norm=max_weight_norm)

    _, (w, _) = run_op_on_variables(fn, W, X)
    np.testing.assert_allclose(w, _lamb_reference(W, X, 0.1, max_weight_norm or 0.0), rtol=1e-5)


def test_adam_var_update_with_tensor_learning_rate_and_zero_norms():
    fn = lambda w, x, r1, r2, lr, mwn: var_updates.adam_var_update(w, x, r1, r2, lr, mwn)  # noqa: E731
    _, (w, *_) = run_op_on_variables(fn, W, X, np.float32(0), np.float32(4), np.float32(0.5), np.float32(1))
    np.testing.assert_allclose(w, W - 0.5 * X, rtol=1e-6)


def test_adam_var_update_without_a_learning_rate_leaves_the_weight_as_popxl_does():
    _, (w, _) = run_op_on_variables(
        lambda w, x: var_updates.adam_var_update(w, x, ops.lamb_square(w), ops.lamb_square(x)), W, X)
    np.testing.assert_array_equal(w, W)


@pytest.mark.parametrize("mode", ["adam", "lamb"])
def test_several_optimiser_steps_match_numpy(mode):
    """Adam (and LAMB) over several runs: accumulators, bias-corrected updater, weight update."""
    beta1, beta2, eps, wd, lr, mwn, steps = 0.9, 0.99, 1e-6, 0.01, 0.05, 2.0, 4
    gradients = RNG.normal(size=(steps, 3, 4)).astype(np.float32)
    updater = var_updates.lamb_updater if mode == "lamb" else var_updates.adam_updater
    ir = popxl.Ir()
    with ir.main_graph:
        g_stream = popxl.h2d_stream((3, 4), popxl.float32, name="gradient")
        w = popxl.variable(W, name="w")
        m = popxl.variable(np.zeros_like(W), name="m")
        v = popxl.variable(np.zeros_like(W), name="v")
        step = popxl.variable(np.float32(0), name="step")
        g = ops.host_load(g_stream)
        m1 = var_updates.accumulate_moving_average_(m, g, beta1)
        v1 = var_updates.accumulate_moving_average_square_(v, g, beta2)
        x = updater(m1, v1, w, step, weight_decay=wd, beta1=beta1, beta2=beta2, epsilon=eps)
        if mode == "lamb":
            var_updates.adam_var_update(w, x, ops.lamb_square(w), ops.lamb_square(x), lr, mwn)
        else:
            var_updates.adam_var_update(w, x, popxl.constant(np.float32(0)), popxl.constant(np.float32(0)), lr)

    w_ref, m_ref, v_ref, t_ref = W.astype(np.float64), 0.0, 0.0, 0
    with popxl.Session(ir, "ipu_model") as session:
        for gradient in gradients:
            session.run({g_stream: gradient})
            m_ref = beta1 * m_ref + (1 - beta1) * gradient
            v_ref = beta2 * v_ref + (1 - beta2) * gradient.astype(np.float64) ** 2
            x_ref, t_ref = _adam_reference(m_ref, v_ref, w_ref, t_ref, wd, beta1, beta2, eps, "adam")
            w_ref = _lamb_reference(w_ref, x_ref, lr, mwn) if mode == "lamb" else w_ref - lr * x_ref
            np.testing.assert_allclose(session.get_tensor_data(w), w_ref, rtol=1e-4, atol=1e-6)
        assert session.get_tensor_data(step) == steps


def test_adam_family_takes_integer_tensors_as_popxl_does():
    m, v = np.array([8, 27], np.int32), np.array([4, 9], np.int32)
    result, _ = run_op_on_variables(lambda m, v: var_updates.adam_updater(m, v, epsilon=0.0), m, v)
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, (m / np.sqrt(v)).astype(np.int32))
    fn = lambda w, x, r1, r2: var_updates.adam_var_update(w, x, r1, r2, learning_rate=2.0)  # noqa: E731
    _, (w, *_) = run_op_on_variables(fn, np.array([10, 20], np.int32), np.array([1.0, 2.5], np.float32),
                                     np.float32(0), np.float32(0))
    np.testing.assert_array_equal(w, [8, 15])
