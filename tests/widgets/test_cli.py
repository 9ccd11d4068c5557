"""``python -m workbench report SCRIPT.py``: an unchanged popxl script runs on the simulated device and
every Ir it built and Session it made lands in one HTML report; its errors show its own traceback."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path


from workbench import cli
from workbench.ir import Ir
from support.strategies import default_progress
from workbench.runtime import ProgressOptions
from workbench.runtime.session import Session

ROOT = Path(__file__).resolve().parents[2]

TRAIN = """
    import sys

    import numpy as np
    import popxl
    import popxl.ops as ops

    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([4], popxl.float32, name="x")
        w = popxl.variable(np.zeros(4, np.float32), name="w")
        x = ops.host_load(x_stream)
        updated = ops.var_updates.accumulate_(w, x)
        y_stream = popxl.d2h_stream(w.shape, w.dtype, name="w_out")
        ops.host_store(y_stream, updated)
    unused = popxl.Ir()
    with unused.main_graph:
        ops.tanh(popxl.variable(np.ones(2, np.float32), name="v"))
    with popxl.Session(ir, "ipu_model") as session:
        for step in range(3):
            out = session.run({x_stream: np.full(4, step + 1, np.float32)})[y_stream]
    print("final", out.tolist(), "args", sys.argv[1:], __name__)
"""

FAILING = """
    import numpy as np
    import popxl
    import popxl.ops as ops


    def build():
        ir = popxl.Ir()
        with ir.main_graph:
            x = popxl.variable(np.ones(3, np.float32), name="x")
            ops.matmul(x, popxl.variable(np.ones(4, np.float32), name="w"))


    build()
"""


def write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def run_cli(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=tmp_path, capture_output=True,
                          text=True, env=env, timeout=120)


def test_a_script_runs_unchanged_and_its_irs_and_sessions_make_one_report(tmp_path):
    write(tmp_path, "train.py", TRAIN)
    result = run_cli(tmp_path, "report", "train.py", "-o", "out.html", "--", "--epochs", "2")
    assert result.returncode == 0, result.stderr
    # The script ran as __main__ with its own arguments; w accumulated 1 + 2 + 3.
    assert "final [6.0, 6.0, 6.0, 6.0] args ['--epochs', '2'] __main__" in result.stdout
    progress = [line for line in result.stderr.splitlines() if "finished in" in line]
    assert [line.split(": ")[1].split(" finished")[0] for line in progress] == ["run 1", "run 2", "run 3"]
    assert all(line.startswith("[workbench] session 1 (Ir[id=") and "on ipu_model" in line for line in progress)
    assert "train.py: 2 Irs built, 1 session, 3 runs; report written to out.html" in result.stderr
    text = (tmp_path / "out.html").read_text(encoding="utf-8")
    assert text.count("<script id='plotly-js'") == 1 and text.count("<section id=") == 2
    assert "Session on ipu_model, 3 runs, of Ir[id=" in text and "<title>IPU Workbench report of train.py</title>" in text
    assert "Schedule of the last run" in text and "Static schedule (no run yet)" in text


def test_an_error_in_the_script_shows_the_scripts_traceback_and_exits_non_zero(tmp_path):
    script = write(tmp_path, "failing.py", FAILING)
    result = run_cli(tmp_path, "report", str(script), "-o", "out.html")
    assert result.returncode == 1
    stderr = result.stderr
    assert stderr.startswith("Traceback (most recent call last):\n")
    assert f'File "{script}", line 14, in <module>\n    build()' in stderr
    assert f'File "{script}", line 11, in build\n    ops.matmul(' in stderr
    assert "ValueError: matmul: inner dimensions differ" in stderr
    assert "workbench" + os.sep not in stderr.split("[workbench]")[0] and "runpy" not in stderr
    assert "[workbench] failing.py failed; no report written" in stderr
    assert not (tmp_path / "out.html").exists()


def test_help_and_usage_errors(tmp_path):
    result = run_cli(tmp_path, "--help")
    assert result.returncode == 0 and "usage: python -m workbench" in result.stdout and "report" in result.stdout
    result = run_cli(tmp_path, "report", "--help")
    assert result.returncode == 0
    assert all(option in result.stdout for option in ("-o OUTPUT, --output OUTPUT", "--title", "--quiet", "'--'"))
    assert run_cli(tmp_path).returncode == 2
    missing = run_cli(tmp_path, "report", "missing.py")
    assert missing.returncode == 2 and "no script at missing.py" in missing.stderr


def test_in_process_the_classes_are_restored_and_exit_statuses_pass_through(tmp_path, capsys):
    init_ir, init_session = Ir.__init__, Session.__init__
    write(tmp_path, "quiet.py", "import popxl\nir = popxl.Ir()\n")
    assert cli.main(["report", str(tmp_path / "quiet.py"), "-o", str(tmp_path / "q.html"), "-q"]) == 0
    assert (tmp_path / "q.html").exists() and capsys.readouterr().err == ""
    write(tmp_path, "exits.py", "import sys\nsys.exit(3)\n")
    assert cli.main(["report", str(tmp_path / "exits.py"), "-o", str(tmp_path / "e.html")]) == 3
    assert "exits.py exited with status 3; no report written" in capsys.readouterr().err
    assert Ir.__init__ is init_ir and Session.__init__ is init_session
    assert not (tmp_path / "e.html").exists()


LOOP = """
    import numpy as np
    import popxl
    import popxl.ops as ops

    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.zeros(2, np.float32), name="w")
        body = ir.create_graph(lambda x: x + 1, w.spec)
        ops.var_updates.copy_var_update_(w, ops.repeat(body, 12, w)[0])
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
"""


def test_a_long_run_shows_its_bar_and_the_report_keeps_its_own_line(tmp_path, capsys):
    script = write(tmp_path, "loop.py", LOOP)
    with default_progress(ProgressOptions(delay_seconds=0.0)):
        assert cli.main(["report", str(script), "-o", str(tmp_path / "loop.html")]) == 0
    err = capsys.readouterr().err
    assert "run 1: 100%" in err and "12/12" in err
    assert err.index("12/12") < err.index("[workbench] session 1 (Ir[id=")
    assert "run 1 finished in" in err
    assert cli.main(["report", str(script), "-o", str(tmp_path / "quiet.html"), "-q"]) == 0
    assert capsys.readouterr().err == ""
