"""``python -m workbench report SCRIPT.py -o report.html``: run an ordinary popxl script on the
simulated device and write the standalone HTML report of every Ir it built and every Session it made.

While the script runs, ``Ir`` and ``Session`` note each instance made (their ``__init__`` is wrapped,
and restored afterwards), so the script is written as for popxl, unchanged. Each finished session run
prints a progress line on stderr. An error in the script prints its traceback without the frames of
the workbench (the script's own lines and the error) and exits with status 1.
"""
from __future__ import annotations

import argparse
import runpy
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional, Sequence

import popxl
import workbench
from workbench.ir import Ir
from workbench.popxl.session import Session as PopxlSession
from workbench.runtime.session import Session

PREFIX = "[workbench]"
# Frames from these places are the machinery, not the script: left out of a script's traceback.
_HIDDEN = tuple(str(Path(module.__file__).resolve().parent) for module in (workbench, popxl)) + (
    str(Path(runpy.__file__).resolve()),)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workbench", description="IPU Workbench: inspect popxl programs on a simulated IPU system.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    report = commands.add_parser(
        "report", help="run a popxl script and write an HTML report of its Irs and Sessions",
        description="Run SCRIPT (an ordinary popxl program; its Sessions run on the simulated IPU system) "
                    "and write one standalone HTML file with the call tree, graph, schedule, liveness and "
                    "replica-group views of every Ir it built and every Session it made. Arguments after "
                    "'--' are passed to the script.",
        epilog="example: python -m workbench report train.py -o train.html -- --epochs 2")
    report.add_argument("script", type=Path, help="the Python script to run")
    report.add_argument("-o", "--output", type=Path, default=Path("report.html"),
                        help="where to write the report (default: report.html)")
    report.add_argument("--title", help="the report's title (default: the script's name)")
    report.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, script_args = argv[:split], argv[split + 1:]
    options = build_parser().parse_args(argv)
    return report_command(options.script, options.output, script_args, options.title, options.quiet)


def report_command(script: Path, output: Path, script_args: Sequence[str] = (), title: Optional[str] = None,
                   quiet: bool = False) -> int:
    """Run ``script`` with ``script_args`` and write the report to ``output``; returns the exit status."""
    if not script.is_file():
        print(f"{PREFIX} no script at {script}", file=sys.stderr)
        return 2
    capture = Capture(None if quiet else sys.stderr)
    with capture:
        status = run_script(script, script_args)
    if status != 0:
        return status
    from workbench.widgets.html_report import report
    from workbench.widgets.style import count_of

    sources = capture.sources()
    runs = sum(session.run_count for session in capture.sessions)
    summary = (f"{script.name}: {count_of(len(capture.irs), 'Ir')} built, {count_of(len(capture.sessions), 'session')}, "
               f"{count_of(runs, 'run')}")
    report(sources, output, title=title or f"IPU Workbench report of {script.name}", summary=summary)
    if not quiet:
        print(f"{PREFIX} {summary}; report written to {output}", file=sys.stderr)
    return 0


def run_script(script: Path, args: Sequence[str] = ()) -> int:
    """Run ``script`` as ``__main__`` with ``args``; returns 0, or the exit status after printing the
    script's traceback."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as stop:
        if stop.code in (None, 0):
            return 0
        print(f"{PREFIX} {script.name} exited with status {stop.code}; no report written", file=sys.stderr)
        return stop.code if isinstance(stop.code, int) else 1
    except Exception as error:
        sys.stderr.write(script_traceback(error))
        print(f"{PREFIX} {script.name} failed; no report written", file=sys.stderr)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


def script_traceback(error: BaseException) -> str:
    """The traceback of ``error`` (and of the errors chained to it) without the workbench's frames."""
    report = traceback.TracebackException.from_exception(error)
    seen = set()
    pending = [report]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.stack = traceback.StackSummary.from_list(
            [frame for frame in current.stack if not _hidden(frame.filename)])
        pending.extend(chained for chained in (current.__cause__, current.__context__) if chained is not None)
    return "".join(report.format())


def _hidden(filename: str) -> bool:
    if filename.startswith("<frozen runpy"):
        return True
    try:
        path = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return any(path == hidden or path.startswith(hidden + "/") for hidden in _HIDDEN)


class Capture:
    """While active, notes every Ir and Session made (in order) and reports each session run on
    ``progress`` (a text stream, or None for silence, which also hides the bars of long runs)."""

    def __init__(self, progress: Any = None):
        self.progress = progress
        self.irs: list[Ir] = []
        self.sessions: list[Session] = []
        self._saved: list[tuple[type, Any]] = []

    def __enter__(self) -> "Capture":
        self._wrap(Ir, self._ir_made)
        self._wrap(Session, self._session_made)  # as PopART's sessions make them
        self._wrap(PopxlSession, self._session_made)
        return self

    def __exit__(self, *exc) -> None:
        for cls, init in reversed(self._saved):
            cls.__init__ = init
        self._saved = []

    def _wrap(self, cls: type, made) -> None:
        original = cls.__init__

        def __init__(instance, *args, **kwargs):
            original(instance, *args, **kwargs)
            if type(instance) is cls:
                made(instance)
        __init__.__wrapped__ = original
        self._saved.append((cls, original))
        cls.__init__ = __init__

    def _ir_made(self, ir: Ir) -> None:
        self.irs.append(ir)

    def _session_made(self, session: Session) -> None:
        self.sessions.append(session)
        if self.progress is None:
            session.progress = False
        else:
            number = len(self.sessions)
            session.events.subscribe(_progress_listener(session, number, self.progress))

    def sources(self) -> list:
        """What the report shows: each session, and each Ir no session was made for, in order made."""
        with_session = {id(session.ir) for session in self.sessions}
        sources: list = []
        for ir in self.irs:
            if id(ir) in with_session:
                sources.extend(s for s in self.sessions if s.ir is ir)
            else:
                sources.append(ir)
        made_here = {id(ir) for ir in self.irs}
        sources.extend(s for s in self.sessions if id(s.ir) not in made_here)
        return sources


def _progress_listener(session: Session, number: int, stream: Any):
    started = [0.0]

    def hear(kind: str, payload: Any) -> None:
        if kind == "run_started":
            started[0] = time.perf_counter()
        elif kind == "run_finished":
            seconds = time.perf_counter() - started[0]
            print(f"{PREFIX} session {number} ({session.ir!r} on {session.device.kind}): run {session.run_count} "
                  f"finished in {seconds * 1e3:.1f} ms", file=stream, flush=True)
    return hear
