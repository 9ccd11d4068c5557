"""Test-wide settings: every kernel's result is checked against its op's inferred shape and dtype.

Under ``pytest -n N`` (pytest-xdist) the tests are shared out to the workers a module at a time, except those
that share state within one process: the browser tests (in two halves, each with one JupyterLab server and
one browser) and the gradient checks (which the coverage test counts) each go whole to one worker. The
longest units are handed out first, so that no worker starts one near the end."""
import os
from pathlib import Path

import pytest

from workbench.runtime.options import default_run_options, set_default_run_options

set_default_run_options(default_run_options().with_changes(check_kernels=True))

HERE = Path(__file__).resolve().parent
LONGEST_FIRST = ("test_tutorials_install.py", "extension", "autodiff")


def _unit(path: Path) -> str:
    """The first part of a test file's path below tests/: its folder, or its own name at the top ('' for a
    file elsewhere, such as a notebook collected beside the tests)."""
    path = path.resolve()
    return path.relative_to(HERE).parts[0] if path.is_relative_to(HERE) else ""


def pytest_collection_modifyitems(items) -> None:
    def rank(item) -> int:
        unit = _unit(Path(str(item.path)))
        return LONGEST_FIRST.index(unit) if unit in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, when it is installed
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class SharedStateTogether(LoadScopeScheduling):
        """A unit of work per module, but one for every gradient check and one for every browser test."""

        def _split_scope(self, nodeid: str) -> str:
            return _shared_state_unit(nodeid.split("::", 1)[0])

    config.option.loadscopereorder = False  # keep the collection's order: the longest units first
    return SharedStateTogether(config, log)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: the number of workers of ``-n auto``
def pytest_xdist_auto_num_workers(config) -> int:
    """Half as many workers again as there are cores: the browser tests, the kernels and the jobs of several
    instances spend much of their time waiting, which a worker of their own does not fill."""
    cores = len(os.sched_getaffinity(0))
    return cores + cores // 2


def _shared_state_unit(module: str) -> str:
    """The unit of work of a test module (its path from the root, with '/'): the module itself, or the
    group of modules that share state with it in one process. The browser tests are two such groups, each
    with its own JupyterLab server and browser (every other module, in the order of their names)."""
    folder, name = module.rsplit("/", 1)
    if folder.endswith("/autodiff"):
        return folder
    if folder.endswith("/extension") and "browser" in name:
        return f"{folder}/browser-{_BROWSER_MODULES.index(name) % 2}"
    return module


_BROWSER_MODULES = sorted(path.name for path in (HERE / "extension").glob("test_*browser*.py"))
