"""Test-wide settings: every kernel's result is checked against its op's inferred shape and dtype.

Under ``pytest -n N`` (pytest-xdist) the tests are shared out to the workers a module at a time, except the
folders whose tests share state within one process (the browser tests' one JupyterLab server and browser,
the gradient checks that the coverage test counts): each of those goes whole to one worker. The longest
units are handed out first, so that no worker starts one near the end."""
from pathlib import Path

import pytest

from workbench.runtime.options import default_run_options, set_default_run_options

set_default_run_options(default_run_options().with_changes(check_kernels=True))

HERE = Path(__file__).resolve().parent
FOLDERS_RUN_WHOLE = ("extension", "autodiff")
LONGEST_FIRST = ("test_tutorials_install.py", "extension", "autodiff")


def _unit(path: Path) -> str:
    """The first part of a test file's path below tests/: its folder, or its own name at the top."""
    return path.resolve().relative_to(HERE).parts[0]


def pytest_collection_modifyitems(items) -> None:
    def rank(item) -> int:
        unit = _unit(Path(str(item.path)))
        return LONGEST_FIRST.index(unit) if unit in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, when it is installed
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class WholeFolders(LoadScopeScheduling):
        """Scopes of one module each, but of one folder each for the folders run whole."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            parts = module.split("/")
            if len(parts) > 2 and parts[1] in FOLDERS_RUN_WHOLE:
                return "/".join(parts[:2])
            return module

    config.option.loadscopereorder = False  # keep the collection's order: the longest units first
    return WholeFolders(config, log)
