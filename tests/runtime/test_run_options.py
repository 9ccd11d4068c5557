"""A session runs as its ``RunOptions`` say: replica strategy, kernel checks, shared weights; each
kernel layer is a named binder, left out when switched off; bad options are refused by name."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from support.faulty_ops import widening_op  # noqa: F401  (a fixture)
from workbench.ops.registry import apply
from workbench.runtime import RunOptions, default_run_options


def widening_ir() -> tuple:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(3, np.float32), name="x")
        y = apply("test_widen", x)
        out = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(out, y)
    return ir, out


def test_kernel_checks_catch_a_kernel_that_returns_another_dtype_only_when_on(widening_op):
    ir, out = widening_ir()
    with popxl.Session(ir, "ipu_model", options=RunOptions(check_kernels=True)) as session:
        with pytest.raises(Exception, match=r"kernel of test_widen.* \(test_widen\) returned float64\[3\], "
                                            r"expected float32\[3\]"):
            session.run()
    ir, out = widening_ir()
    with popxl.Session(ir, "ipu_model", options=RunOptions(check_kernels=False)) as session:
        np.testing.assert_array_equal(session.run()[out], np.ones(3, np.float32))  # unchecked: it runs on


def test_the_kernel_layers_are_named_binders_and_those_switched_off_are_left_out(widening_op):
    ir, _ = widening_ir()
    session = popxl.Session(ir, "ipu_model", options=RunOptions(check_kernels=False))
    names = [binder.name for binder in session.executable.programs[0].binders]
    assert names == ["records_branch", "copies_view", "returns_arrays", "saves_first_write", "shares_update"]
    ir, _ = widening_ir()
    session = popxl.Session(ir, "ipu_model", options=RunOptions(check_kernels=True))
    assert "checks_kernel" in [binder.name for binder in session.executable.programs[0].binders]


def replicated_ir() -> tuple:
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        w = popxl.variable(np.ones(2, np.float32), name="w")
        ops.scaled_add_(w, ops.collectives.replicated_all_reduce(popxl.constant(np.ones(2, np.float32))),
                        b=-0.5)
    return ir, w


@pytest.mark.parametrize("strategy, threaded", [("turns", False), ("threads", True), ("inline", False)])
def test_the_replica_strategy_is_the_options_choice(strategy, threaded):
    ir, w = replicated_ir()
    options = default_run_options().with_changes(replicas=strategy)
    with popxl.Session(ir, "ipu_model", options=options) as session:
        assert session.executable.runner.threaded == threaded
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(w), np.zeros(2, np.float32))


@pytest.mark.parametrize("shared", [True, False])
def test_shared_weights_are_an_option(shared):
    ir, w = replicated_ir()
    with popxl.Session(ir, "ipu_model", options=RunOptions(shared_weights=shared)) as session:
        values = session.executable.device_values
        assert (values[0][w] is values[1][w]) == shared
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(w), np.zeros(2, np.float32))


def test_bad_options_are_refused_with_what_was_expected():
    with pytest.raises(ValueError, match=r"RunOptions.replicas must be one of 'auto', 'inline', 'turns', "
                                         r"'threads', 'processes', got 'fibers'"):
        RunOptions(replicas="fibers")
    with pytest.raises(ValueError, match="RunOptions.cores must be a positive int or None, got 0"):
        RunOptions(cores=0)
    for most in (-1, 2.5, True):
        with pytest.raises(ValueError, match=f"RunOptions.bucket_replicas must be a non-negative int, got {most!r}"):
            RunOptions(bucket_replicas=most)
    for seconds in (0, -2.0, float("nan"), float("inf"), "3", True):
        with pytest.raises(ValueError, match=r"RunOptions.instance_wait_seconds must be a positive number of "
                                             r"seconds or None, got "):
            RunOptions(instance_wait_seconds=seconds)
    ir, _ = replicated_ir()
    with pytest.raises(TypeError, match="Session options must be a RunOptions, got dict"):
        popxl.Session(ir, "ipu_model", options={"replicas": "threads"})
    assert ir._owner is None  # nothing was compiled
