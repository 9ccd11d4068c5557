"""Runs of repeated structure (``workbench.export.repeats``): units alike in their op types and independent of
each other fold; a unit that reads what an earlier one made ends the run."""
import numpy as np
import popxl
import popxl.ops as ops

from workbench.export.repeats import REPEAT_AT_LEAST, repeated_units


def ops_of(build) -> list:
    ir = popxl.Ir()
    with ir.main_graph:
        build()
    return list(ir.main_graph.ops)


def test_independent_pairs_fold_into_one_run_of_their_units():
    def build():
        for index in range(6):
            w = popxl.variable(np.ones(4, np.float32), name=f"w{index}")
            ops.var_updates.accumulate_(w, ops.negate(w))
    found = repeated_units(ops_of(build))
    assert len(found) == 1 and len(found[0]) == 6
    assert all([op.type for op in unit] == [op.type for op in found[0][0]] for unit in found[0])
    assert len(found[0][0]) == 2


def test_a_chain_of_alike_ops_is_no_run():
    def build():
        x = popxl.variable(np.ones(4, np.float32), name="x")
        for _ in range(8):
            x = ops.negate(x)
    assert repeated_units(ops_of(build)) == []


def test_a_unit_reading_an_earlier_one_ends_the_run_before_it():
    def build():
        made = []
        for index in range(REPEAT_AT_LEAST + 1):
            x = popxl.variable(np.ones(4, np.float32), name=f"x{index}")
            made.append(ops.negate(x if index < REPEAT_AT_LEAST else made[0]))
    units = [unit for run in repeated_units(ops_of(build)) for unit in run]
    negations = [unit for unit in units if unit[0].type == "negate"]
    assert len(negations) == REPEAT_AT_LEAST  # the last reads the first's output: not one of the run
