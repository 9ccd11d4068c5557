"""binder/ lists what mybinder installs: a fresh virtual environment built from it alone imports the
project and has the JupyterLab extension enabled, with no Node on the PATH."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = REPO / "binder" / "requirements.txt"


def requirement_lines() -> list[str]:
    lines = [line.split("#", 1)[0].strip() for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line]


def test_binder_requirements_are_installable_lines():
    lines = requirement_lines()
    assert ".[tutorials]" in lines, "the project itself (the repository root) with its tutorials' extra"
    for line in lines:
        if not line.startswith("."):
            try:
                Requirement(line)
            except InvalidRequirement as error:
                pytest.fail(f"binder/requirements.txt: {line!r} is not a requirement: {error}")


@pytest.mark.slow
def test_a_fresh_environment_from_binder_runs_the_project_and_the_extension(tmp_path):
    venv = tmp_path / "binder-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_dir = venv / "bin"
    assert shutil.which("node", path=str(bin_dir)) is None
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "PYTHON"))}
    # No bytecode compiled ahead for the hundred-odd distributions installed: the few modules imported below
    # compile as they load, and the install is otherwise the same.
    env.update(PATH=str(bin_dir), PIP_NO_COMPILE="1")
    install = subprocess.run([str(bin_dir / "pip"), "install", "-q", "--disable-pip-version-check", "-r",
                              str(REQUIREMENTS)], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    program = ("import numpy as np, popxl, popxl.ops as ops\n"
               "ir = popxl.Ir()\n"
               "with ir.main_graph:\n"
               "    y = popxl.variable(np.arange(3, dtype=np.float32)) * 2\n"
               "    ops.host_store(popxl.d2h_stream(y.shape, y.dtype, name='y'), y)\n"
               "with popxl.Session(ir, 'ipu_model') as session:\n"
               "    print(list(session.run({}).values())[0])\n")
    run = subprocess.run([str(bin_dir / "python"), "-c", program], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[0. 2. 4.]"
    listing = subprocess.run([str(bin_dir / "jupyter"), "labextension", "list"], env=env, capture_output=True,
                             text=True, timeout=120)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)
    assert listing.returncode == 0, text
    section = text.split(str(venv / "share" / "jupyter" / "labextensions"), 1)[1].split("\n\n", 1)[0]
    assert re.search(r"ipu-workbench v0\.1\.0 enabled\s+OK \(python, ipu-workbench\)", section), text
