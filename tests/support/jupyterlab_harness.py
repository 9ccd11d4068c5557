"""JupyterLab on 127.0.0.1 with Debian's Chromium driven headless by Playwright, for the browser tests
and benchmarks. Every wait is bounded; JupyterLab is stopped through its process group."""
import contextlib
import http.cookiejar
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import nbformat

CHROMIUM = "/usr/bin/chromium"
WAIT_MS = 90_000
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# Kernel code (a notebook cell's start) that counts the bytes the kernel sends over its comms in comm_bytes[0].
COUNT_COMM_BYTES = """
import json
from ipykernel.comm.comm import BaseComm as KernelComm
comm_bytes = [0]
publish = KernelComm.publish_msg


def counting(self, msg_type, data=None, metadata=None, buffers=None, **keys):
    comm_bytes[0] += len(json.dumps(data, default=str)) + sum(len(bytes(b)) for b in buffers or ())
    return publish(self, msg_type, data, metadata, buffers, **keys)


KernelComm.publish_msg = counting
"""


@dataclass(frozen=True, slots=True)
class LabFolder:
    """A folder that a JupyterLab server at ``url`` serves: ``root`` on disk, ``prefix`` its path from the
    server's root ("" for the root itself)."""
    url: str
    root: Path
    prefix: str = ""

    def path(self, name: str) -> str:
        """The server's path of ``name`` in this folder."""
        return f"{self.prefix}/{name}" if self.prefix else name

    def tree(self, name: str) -> str:
        """The address that opens ``name`` in this folder in a fresh workspace."""
        return f"{self.url}/lab/tree/{self.path(name)}?reset"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_server(url: str, server: subprocess.Popen, log: Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/status", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer within {seconds} s:\n{log.read_text()[-3000:]}")


def stop(server: subprocess.Popen) -> None:
    """SIGTERM to JupyterLab's process group (it shuts its kernels down), SIGKILL if it lingers."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


def end_kernels(url: str, seconds: float = 60) -> None:
    """Ends every session and kernel of the server at ``url``, waiting until none is left."""
    cookies = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(cookies))
    opener.open(f"{url}/lab", timeout=30).close()  # the page sets the cookie that a DELETE must echo
    xsrf = {"X-XSRFToken": next(cookie.value for cookie in cookies if cookie.name == "_xsrf")}

    def api(path: str, method: str = "GET"):
        asked = urllib.request.Request(f"{url}/api/{path}", headers=xsrf, method=method)
        with opener.open(asked, timeout=30) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    for session in api("sessions"):
        api(f"sessions/{session['id']}", "DELETE")
    for kernel in api("kernels"):
        api(f"kernels/{kernel['id']}", "DELETE")
    deadline = time.monotonic() + seconds
    while left := api("kernels"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"kernels still running {seconds} s after their shutdown: {left}")
        time.sleep(0.2)


def forget_workspaces(home: Path) -> None:
    """Deletes the workspaces that pages of the server of ``jupyterlab(home)`` saved."""
    for saved in (home / "workspaces").glob("*"):
        saved.unlink()


@contextlib.contextmanager
def jupyterlab(home: Path):
    """A JupyterLab server over ``home/work`` with its own settings (no news pop-up) and workspaces
    (in ``home/workspaces``); yields its root folder."""
    assert Path(CHROMIUM).exists(), "Debian's Chromium is needed: apt-get install -y chromium"
    root = home / "work"
    root.mkdir()
    news = home / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(home / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
    log = home / "jupyterlab.log"
    with open(log, "w") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root",
             "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={root}"],
            cwd=root, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_server(url, server, log)
        yield LabFolder(url, root)
    finally:
        stop(server)


@contextlib.contextmanager
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, timeout=WAIT_MS, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser, url):
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.set_default_timeout(WAIT_MS)
    page.goto(url)
    return page


def write_notebook(path: Path, cells: list[str]) -> None:
    """Writes a notebook of code ``cells`` for the Python 3 kernel at ``path``."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)


def open_notebook(browser, lab: LabFolder, name: str):
    """A page with notebook ``name`` of ``lab`` open, the current tab (a fresh workspace, not one that
    earlier pages left), and its kernel started."""
    page = open_page(browser, lab.tree(name))
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    page.wait_for_function(f"window.jupyterapp && window.jupyterapp.shell.currentWidget?.context?.path === "
                           f"{lab.path(name)!r} && window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel")
    return page


def output_width(page, width: int) -> None:
    """Resizes the page so that a notebook output is ``width`` pixels wide."""
    now = page.evaluate("document.querySelector('.jp-Cell .jp-InputArea-editor').getBoundingClientRect().width")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"] + width - round(now), "height": 2200})
    page.wait_for_timeout(1500)


def run_notebook(browser, lab: LabFolder, name: str, cells: list[str], timeout_ms: int = 240_000,
                 width: Optional[int] = None):
    """A page with notebook ``name`` of code ``cells`` (written in ``lab``) open, its outputs ``width``
    pixels wide where given, and every cell set running; Playwright's waits on it last ``timeout_ms``."""
    write_notebook(lab.root / name, cells)
    page = open_notebook(browser, lab, name)
    page.set_default_timeout(timeout_ms)
    if width is not None:
        output_width(page, width)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    return page


# Scripts a test evaluates in the notebook's page (``page.evaluate(SCRIPT, argument)``).
# Whether the open notebook's kernel is idle.
KERNEL_IDLE = "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'"
# The waits below look for what they wait for as long as WAIT_MS, then fail naming it (never a hang).
# Runs cell ``index`` and gives the milliseconds until ``selector`` is painted in it.
TIME_TO_PICTURE = """async ([index, selector]) => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  const cell = notebook.widgets[index];
  cell.model.outputs.clear();
  notebook.activeCellIndex = index;
  const start = performance.now();
  window.jupyterapp.commands.execute('notebook:run-cell');
  return await new Promise((resolve, reject) => {
    const painted = () => {
      if (cell.node.querySelector(selector)) {
        requestAnimationFrame(() => resolve(performance.now() - start));
      } else if (performance.now() - start > %d) {
        reject(new Error(`cell ${index} showed no ${selector} within %d s of running it`));
      } else {
        requestAnimationFrame(painted);
      }
    };
    painted();
  });
}""" % (WAIT_MS, WAIT_MS // 1000)

# Runs cell ``index`` and gives the text it prints.
OUTPUT_TEXT = """async (index) => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  const cell = notebook.widgets[index];
  cell.model.outputs.clear();
  notebook.activeCellIndex = index;
  await window.jupyterapp.commands.execute('notebook:run-cell');
  return await new Promise((resolve) => {
    const read = () => {
      const text = cell.node.querySelector('.jp-OutputArea-output pre');
      if (text && text.textContent.trim()) resolve(text.textContent.trim()); else setTimeout(read, 20);
    };
    read();
  });
}"""

# Before a click on a widget's tab: notes the time of the next pointer press anywhere in the page.
ARM_CLICK_CLOCK = """() => {
  window.__ipuWbPressed = null;
  document.addEventListener('pointerdown', () => { window.__ipuWbPressed = performance.now(); },
                            {capture: true, once: true});
}"""
# After the click: the milliseconds from the press until a visible plotly figure in cell ``index`` has a legend
# entry reading ``legend`` and is painted.
PAINTED_SINCE_CLICK = """async ([index, legend]) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[index];
  const start = performance.now();
  return await new Promise((resolve, reject) => {
    const painted = () => {
      const shown = [...cell.node.querySelectorAll('.main-svg .legendtext')].some(
        (node) => node.textContent === legend && node.getClientRects().length > 0);
      if (shown && window.__ipuWbPressed !== null) {
        requestAnimationFrame(() => resolve(performance.now() - window.__ipuWbPressed));
      } else if (performance.now() - start > %d) {
        reject(new Error(`cell ${index} showed no figure with the legend entry ${legend} within %d s ` +
                         `(pressed: ${window.__ipuWbPressed !== null})`));
      } else {
        requestAnimationFrame(painted);
      }
    };
    painted();
  });
}""" % (WAIT_MS, WAIT_MS // 1000)

# Where on the page point ``number`` of the trace named ``name`` sits, in the visible plotly figure of cell
# ``index``: the place to click it, once the figure has settled (the same place for ten frames running: a
# figure just painted may still be resized to its output, which moves its points).
POINT_ON_PAGE = """async ([index, name, number]) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[index];
  const place = () => {
    const figure = [...cell.node.querySelectorAll('.js-plotly-plot')].find((node) => node.getClientRects().length > 0);
    const trace = figure?.calcdata?.find((points) => points[0].trace.name === name);
    if (!trace) {
      return null;
    }
    const point = trace[number];
    const [xaxis, yaxis, box] = [figure._fullLayout.xaxis, figure._fullLayout.yaxis, figure.getBoundingClientRect()];
    return [box.left + xaxis._offset + xaxis.c2p(point.x), box.top + yaxis._offset + yaxis.c2p(point.y)];
  };
  const start = performance.now();
  let last = null, same = 0;
  return await new Promise((resolve, reject) => {
    const settle = () => {
      const now = place();
      same = now !== null && last !== null && now[0] === last[0] && now[1] === last[1] ? same + 1 : 0;
      last = now;
      if (same >= 10) {
        resolve(now);
      } else if (performance.now() - start > %d) {
        reject(new Error(`cell ${index}: point ${number} of ${name} did not settle within %d s (last at ${last})`));
      } else {
        requestAnimationFrame(settle);
      }
    };
    settle();
  });
}""" % (WAIT_MS, WAIT_MS // 1000)
