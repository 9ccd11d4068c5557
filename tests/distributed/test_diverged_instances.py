"""Each instance's ``get_tensor_data`` reads its own replicas, and weights_to_host warns, on every
instance, when instances hold different values of a variable their replicas share."""
import re
import sys

from launch import poprun_command, run

# Each instance adds its own constant (instance index + 1) to a variable every replica shares.
PROGRAM = """
import warnings, numpy as np, popdist, popxl, popxl.ops as ops
index = popdist.getInstanceIndex()
ir = popxl.Ir(replication="popdist")
with ir.main_graph:
    w = popxl.variable(np.zeros(2, np.float32), name="w")
    ops.var_updates.accumulate_(w, popxl.constant(np.full(2, {step}, np.float32)))
with popxl.Session(ir, "ipu_hw") as session:
    session.run({{}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = session.get_tensor_data(w)
print("instance", index, "w", value.tolist(), "|".join(str(c.message) for c in caught), flush=True)
"""


def values(step: str) -> dict:
    """{instance: (its get_tensor_data of w, the warnings it gave)}."""
    done = run([*poprun_command(2, 4), sys.executable, "-c", PROGRAM.format(step=step)])
    assert done.returncode == 0, done.stderr
    lines = re.findall(r"instance (\d) w \[([^\]]*)\] ?(.*)", done.stdout)
    assert sorted(i for i, _, _ in lines) == ["0", "1"], done.stdout
    return {int(i): ([float(x) for x in w.split(",")], said) for i, w, said in lines}


def test_each_instance_reads_its_own_replicas_and_warns_that_the_instances_diverged():
    seen = values("index + 1")
    assert seen[0][0] == [1.0, 1.0] and seen[1][0] == [2.0, 2.0]
    for instance in (0, 1):
        assert "these instances hold other values than instance 0 for variables that their replicas share " \
               "(instance 1: w)" in seen[instance][1], seen


def test_instances_that_agree_give_no_warning():
    seen = values("3")
    assert seen == {0: ([3.0, 3.0], ""), 1: ([3.0, 3.0], "")}
