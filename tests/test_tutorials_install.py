"""The README's main command is all a newcomer needs: on a copy of this checkout, its install (every
part before it opens JupyterLab) leaves `git status` clean, and nbval then runs every tutorial in a
kernel of the fresh environment it made.

The copy holds the tracked files and the untracked ones git does not ignore, as a clone would, plus
the extension's node_modules when this checkout has them (npm then only checks them against the lock
instead of downloading them again)."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXTENSION = Path("extensions/ipu-workbench")


def main_command() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- main-command -->\s*```\w*\n(.+?)\n```", readme, re.S)
    assert found, "the README has no command after its <!-- main-command --> marker"
    return found.group(1).strip()


def test_the_main_command_installs_the_tutorials_extra_and_then_opens_the_tutorials():
    *install, start = main_command().split(" && ")
    assert install[0] == "python3 -m venv .venv"
    assert re.fullmatch(r"\.venv/bin/pip install -e \"?\.\[tutorials\]\"?", install[1]), install[1]
    assert start.startswith(".venv/bin/jupyter lab") and start.endswith("notebooks/")


def test_the_tutorials_extra_covers_every_module_a_tutorial_imports():
    """Each top-level module the notebooks import is ours, the standard library's, or comes with a
    distribution that the project's dependencies or its `tutorials` extra name."""
    import tomllib
    from importlib.metadata import packages_distributions

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + project["optional-dependencies"]["tutorials"] + \
        project["optional-dependencies"]["distributed"]
    names = {re.split(r"[<>=\[ ]", requirement)[0].lower().replace("_", "-") for requirement in declared}
    ours = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
               ["packages"])
    brought = {"IPython": "jupyterlab"}  # modules that a declared distribution's own dependencies bring
    imported, runs_poprun = set(), False
    for notebook in sorted((REPO / "notebooks").glob("[0-9]*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                imported |= set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", source, re.M))
                runs_poprun |= "workbench.distributed.poprun" in source
    distributions = packages_distributions()
    missing = []
    for module in sorted(imported - ours - set(sys.stdlib_module_names)):
        owners = {name.lower().replace("_", "-") for name in distributions.get(module, [])}
        if not owners & names and brought.get(module) not in names:
            missing.append(f"{module} (from {sorted(owners) or 'no installed distribution'})")
    assert not missing, f"tutorials import modules that nothing in pyproject.toml installs: {missing}"
    assert runs_poprun and "ipu-workbench[distributed]" in project["optional-dependencies"]["tutorials"]


def copy_of_checkout(target: Path) -> Path:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                            check=True, timeout=60).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    if (REPO / EXTENSION / "node_modules").is_dir():
        shutil.copytree(REPO / EXTENSION / "node_modules", target / EXTENSION / "node_modules", symlinks=True)
    git = ["git", "-c", "user.name=clone", "-c", "user.email=clone@localhost"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the clone"]):
        subprocess.run([*git, *command], cwd=target, check=True, capture_output=True, timeout=120)
    return target


@pytest.mark.slow
def test_the_main_command_sets_up_every_tutorial_and_leaves_the_checkout_clean(tmp_path):
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git checkout to copy")
    if shutil.which("npm") is None:
        pytest.skip("the main command builds the JupyterLab extension with npm (Node 20)")
    clone = copy_of_checkout(tmp_path / "clone")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("VIRTUAL_ENV", "PYTHON", "CONDA", "JUPYTER", "PYTEST", "POPDIST_", "PMI_"))}
    *install, _ = main_command().split(" && ")
    for part in install:
        done = subprocess.run(["bash", "-c", part], cwd=clone, env=env, capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, f"{part}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, timeout=60)
    assert status.stdout == "", f"the install changed the checkout:\n{status.stdout}"

    # nbval (from this environment) runs the notebooks in a kernel of the fresh one.
    fresh_python = clone / ".venv" / "bin" / "python"
    kernel = tmp_path / "jupyter" / "kernels" / "fresh-install"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [str(fresh_python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "the main command's environment", "language": "python"}))
    env.update(JUPYTER_PATH=str(tmp_path / "jupyter"), PATH=f"{fresh_python.parent}{os.pathsep}{env['PATH']}")
    notebooks = sorted(path.name for path in (clone / "notebooks").glob("[0-9]*.ipynb"))
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-kernel-name", "fresh-install", "-p",
                          "no:cacheprovider", "-v", "notebooks"], cwd=clone, env=env, capture_output=True, text=True,
                         timeout=1500)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    # nbval names a cell notebooks/NAME::ipynb::Cell N (older versions: NAME.ipynb::Cell N).
    ran = {f"{name}.ipynb" for name in re.findall(r"^notebooks/(\d\d_\w+)(?:\.|::)ipynb::Cell \d+ PASSED",
                                                     run.stdout, re.M)}
    assert len(notebooks) >= 14 and ran == set(notebooks), run.stdout[-3000:]
