"""One JupyterLab server and one Chromium for the browser tests of this folder, each test in a folder of its
own: its pages (each in a fresh browser context) are closed, its kernels ended and the workspaces its pages
saved deleted when it ends, so that the next test finds the server as a fresh one.

Both start with the first test that asks for them and stop after the last test of this folder: Playwright's
synchronous API keeps an event loop marked running in the main thread while it is open, which later tests of
code that looks for a running loop (the widgets' live updates) would otherwise find."""
import contextlib
import re
from pathlib import Path
from typing import Optional

import pytest

from support.jupyterlab_harness import LabFolder, chromium, end_kernels, forget_workspaces, jupyterlab

HERE = Path(__file__).resolve().parent


class _Shared:
    """The server (its root folder, and its home) and the browser, started on demand."""

    def __init__(self) -> None:
        self.stack: Optional[contextlib.ExitStack] = None
        self.server: Optional[LabFolder] = None
        self.home: Optional[Path] = None
        self.browser = None

    def start(self, tmp_path_factory) -> None:
        if self.stack is None:
            self.stack = contextlib.ExitStack()
            self.home = tmp_path_factory.mktemp("lab")
            self.server = self.stack.enter_context(jupyterlab(self.home))
            self.browser = self.stack.enter_context(chromium())

    def stop(self) -> None:
        if self.stack is not None:
            stack, self.stack, self.server, self.browser = self.stack, None, None, None
            stack.close()


SHARED = _Shared()


def pytest_collection_modifyitems(items) -> None:
    """A module of this folder that uses the shared server or browser must say 'browser' in its name: the
    workers of ``pytest -n`` run those modules together, in one process (``tests/conftest.py``)."""
    for item in items:
        path = Path(str(item.path)).resolve()
        if path.parent == HERE and "browser" not in path.name and {"lab", "browser"} & set(item.fixturenames):
            raise pytest.UsageError(f"{path.name} uses the shared JupyterLab or Chromium (the lab or browser "
                                    "fixture): name it test_browser_*.py so that one worker runs it with the others")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # the test's own fixtures first: they close its pages and end its kernels
    if nextitem is None or Path(str(nextitem.path)).resolve().parent != HERE:
        SHARED.stop()


def close_pages(browser) -> None:
    for context in browser.contexts:
        context.close()


@pytest.fixture
def browser(tmp_path_factory):
    """The shared Chromium; every page a test opened in it is closed when the test ends."""
    SHARED.start(tmp_path_factory)
    yield SHARED.browser
    close_pages(SHARED.browser)


@pytest.fixture
def lab(browser, tmp_path_factory, request):
    """A folder of the shared JupyterLab server for this test alone; when the test ends its pages are closed
    (before their kernels end, so that none asks for another), then every kernel is ended and every saved
    workspace deleted."""
    server = SHARED.server
    folder = server.root / re.sub(r"[^\w.-]", "-", request.node.name)
    folder.mkdir()
    yield LabFolder(server.url, folder, folder.name)
    close_pages(browser)
    end_kernels(server.url)
    forget_workspaces(SHARED.home)
