"""The wheel carries the built JupyterLab extension as shared data, so `pip install` needs no Node.

The wheel is built from the working tree (whose extension the editable install has already built),
then unpacked into a bare prefix with pip, and JupyterLab's own `labextension list`, run with no Node
on the PATH, finds the extension there, enabled.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LABEXTENSION = "share/jupyter/labextensions/ipu-workbench"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=300)
    (built,) = out.glob("ipu_workbench-*.whl")
    return built


def test_the_wheel_holds_the_built_extension_and_no_sources(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        data = [n.split(".data/data/", 1)[1] for n in names if ".data/data/" in n]
        package = json.loads(archive.read(next(n for n in names if n.endswith(f"{LABEXTENSION}/package.json"))))
        install = json.loads(archive.read(next(n for n in names if n.endswith(f"{LABEXTENSION}/install.json"))))
    assert f"{LABEXTENSION}/static/style.js" in data
    entry = package["jupyterlab"]["_build"]["load"]
    assert re.fullmatch(r"static/remoteEntry\.[0-9a-f]+\.js", entry) and f"{LABEXTENSION}/{entry}" in data
    assert package["jupyterlab"]["_build"]["mimeExtension"] == "./mimeExtension"
    assert install["packageName"] == "ipu-workbench"
    assert "workbench/export/mime.py" in names and "popxl/__init__.py" in names and "popart/__init__.py" in names
    assert not [n for n in names if "node_modules" in n or n.endswith(".ts") or "/src/" in n]
    assert wheel.stat().st_size < 2_000_000


def test_pip_installs_an_enabled_extension_without_node(wheel, tmp_path):
    prefix = tmp_path / "prefix"
    installed = metadata.distribution("ipu-workbench")
    # --ignore-installed: without it pip would first uninstall the project from the running environment.
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--ignore-installed", "-q",
                    "--prefix", str(prefix), str(wheel)], check=True, capture_output=True, text=True, timeout=300)
    assert installed.read_text("RECORD") is not None, "the running environment's install is untouched"
    assert (prefix / LABEXTENSION / "package.json").exists()
    python_dir = str(Path(sys.executable).parent)
    assert shutil.which("node", path=python_dir) is None
    env = dict(os.environ, PATH=python_dir, JUPYTER_PATH=str(prefix / "share" / "jupyter"))
    listing = subprocess.run([sys.executable, "-m", "jupyterlab.labextensions", "list"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    text = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)
    section = text.split(str(prefix / LABEXTENSION).rsplit("/", 1)[0], 1)[1].split("\n\n", 1)[0]
    assert re.search(r"ipu-workbench v0\.1\.0 enabled\s+OK \(python, ipu-workbench\)", section), text
