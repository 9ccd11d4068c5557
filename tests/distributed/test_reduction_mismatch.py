"""Instances that reach the same collective with different reductions are refused on every instance,
like any other mismatch, through shared memory and through MPI alike."""
import re
import sys

import pytest

from launch import poprun_command, run

DISAGREE = """
import numpy as np, popdist, popxl, popxl.ops as ops
instance = popdist.getInstanceIndex()
ir = popxl.Ir(replication="popdist")
with ir.main_graph:
    x = popxl.variable(np.ones(2, np.float32), name="x")
    y = ops.collectives.replicated_all_reduce(x, op="add" if instance == 0 else "mean")
    ops.host_store(popxl.d2h_stream([2], popxl.float32, name="y"), y)
with popxl.Session(ir, "ipu_hw") as session:
    try:
        print(f"instance {instance}: ran", [value.tolist() for value in session.run({}).values()])
    except Exception as error:
        print(f"instance {instance}: {type(error).__name__}: {error}")
"""


@pytest.mark.parametrize("hosts", [[], ["--host", "localhost,127.0.0.1"]], ids=["shared memory", "MPI"])
def test_instances_with_different_reductions_are_refused(hosts):
    done = run([*poprun_command(2, 4, hosts), sys.executable, "-c", DISAGREE])
    assert done.returncode == 0, done.stderr
    for instance in (0, 1):
        assert re.search(rf"instance {instance}: CollectiveMismatchError: the instances reached different "
                         r"collectives: instance 0 at replicated_all_reduce\S* \(replicated_all_reduce\) occurrence 0: "
                         r"float32\[2\], add, groups \[0, 0, 0, 0\]; instance 1 at replicated_all_reduce\S* "
                         r"\(replicated_all_reduce\) occurrence 0: float32\[2\], mean", done.stdout), done.stdout
    assert "ran" not in done.stdout
