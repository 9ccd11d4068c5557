"""Replicas in worker processes share a weight they all update alike within their process: one copy a
process, updated once a run by each, with the bits of replicas that each keep their own."""
import os

import numpy as np
import pytest

import popxl
from workbench.runtime.options import RunOptions
from workbench.runtime.replication.processes import ProcessRunner
from test_shared_weights import BATCH, REPLICAS, training_ir

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="worker processes are forked")
STEPS = 4


def trained(options: RunOptions, stepped: bool = False):
    """Weights after ``STEPS`` runs (the second one stepped op by op when ``stepped``), and the
    arrays of the first weight held by each replica after the first run."""
    ir, x_stream, weights = training_ir()
    data = np.random.default_rng(1).standard_normal((STEPS, REPLICAS, BATCH, 5)).astype(np.float32)
    with popxl.Session(ir, "ipu_model", options=options) as session:
        session.run({x_stream: data[0]})
        arrays = [values[weights[0]] for values in session.executable.device_values]
        for step in range(1, STEPS):
            if stepped and step == 1:
                assert session.stepper({x_stream: data[step]}).continue_().finished
            else:
                session.run({x_stream: data[step]})
        runner = session.executable.runner
        return [session.get_tensor_data(w) for w in weights], arrays, runner


@pytest.mark.parametrize("cores", [2, 4])
def test_the_replicas_of_a_process_share_one_copy_of_a_weight_each_process_its_own(cores):
    weights, arrays, runner = trained(RunOptions(replicas="processes", cores=cores))
    assert isinstance(runner, ProcessRunner) and runner.processes == cores
    per_process = REPLICAS // cores
    copies = [arrays[p * per_process: (p + 1) * per_process] for p in range(cores)]
    assert all(all(a is copy[0] for a in copy) for copy in copies)
    assert len({id(copy[0]) for copy in copies}) == cores
    apart, arrays, _ = trained(RunOptions(replicas="processes", cores=cores, shared_weights=False))
    assert len({id(a) for a in arrays}) == REPLICAS
    turns, _, _ = trained(RunOptions(replicas="turns"))
    for ours, theirs, taking_turns in zip(weights, apart, turns):
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(ours, taking_turns)


def test_a_stepped_run_between_runs_in_processes_updates_every_process_copy_once():
    ours, _, _ = trained(RunOptions(replicas="processes", cores=2), stepped=True)
    turns, _, _ = trained(RunOptions(replicas="turns"), stepped=True)
    for weight, expected in zip(ours, turns):
        np.testing.assert_array_equal(weight, expected)
