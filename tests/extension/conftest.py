"""One JupyterLab server and one Chromium for all the browser tests of a run, each test in a folder of its
own: its pages (each in a fresh browser context) are closed, its kernels ended and the workspaces its pages
saved deleted when it ends, so that the next test finds the server as a fresh one."""
import re

import pytest

from support.jupyterlab_harness import LabFolder, chromium, end_kernels, forget_workspaces, jupyterlab


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    home = tmp_path_factory.mktemp("lab")
    with jupyterlab(home) as server:
        yield server, home


@pytest.fixture(scope="session")
def shared_browser():
    with chromium() as browser:
        yield browser


def close_pages(browser) -> None:
    for context in browser.contexts:
        context.close()


@pytest.fixture
def browser(shared_browser):
    """The run's Chromium; every page a test opened in it is closed when the test ends."""
    yield shared_browser
    close_pages(shared_browser)


@pytest.fixture
def lab(lab_server, shared_browser, request):
    """A folder of the run's JupyterLab server for this test alone; when the test ends its pages are closed
    (before their kernels end, so that none asks for another), then every kernel is ended and every saved
    workspace deleted."""
    server, home = lab_server
    folder = server.root / re.sub(r"[^\w.-]", "-", request.node.name)
    folder.mkdir()
    yield LabFolder(server.url, folder, folder.name)
    close_pages(shared_browser)
    end_kernels(server.url)
    forget_workspaces(home)
