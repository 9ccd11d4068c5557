"""PopART's devicex debug lines around each copy of the weights to the host, one per copy that happens:
a read of the variables after a run copies once, further reads none. POPART_LOG_LEVEL counts from the
first line PopART weighs, so setting it after ``import popart`` still works, as in PopART."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import workbench

SCRIPT = textwrap.dedent("""
    import os
    import sys
    import popart
    import popxl
    import popxl.ops as ops

    os.environ["POPART_LOG_LEVEL"] = "DEBUG"  # after the import, before the first line
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(2.0, name="w")
        ops.var_updates.accumulate_(w, popxl.constant(1.0))
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.get_tensor_data(w)
        print("-- run", file=sys.stderr)
        session.run()
        session.get_tensor_data(w)
        session.get_tensor_data(w)
        print("-- read twice", file=sys.stderr)
        print(session.get_tensor_data(w), session.weights_to_host_count)
""")


def test_one_copy_after_a_run_logs_once():
    env = {**os.environ, "PYTHONPATH": str(Path(workbench.__file__).parents[1])}
    env.pop("POPART_LOG_LEVEL", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True)
    before, after_run = done.stderr.split("-- run")
    during, _ = after_run.split("-- read twice")
    assert "Writing weights to host complete." not in before
    assert during.count("Writing weights to host complete.") == 1
    assert during.count("[popart:devicex] [debug] Writing weights to host\n") == 1
    assert done.stdout.split() == ["3.0", "1"]
