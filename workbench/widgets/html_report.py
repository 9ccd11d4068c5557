"""A standalone HTML report: every view of some Irs and Sessions in one file that works offline.

plotly.js is inside the file once, gzipped (``offline_plotly``). Text the report writes itself (titles,
the stepper's tables) has every name from the IR escaped.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Iterable, Union

from workbench.ir import Ir

from .offline_plotly import figure_html, loader_html
from .style import count_of, text
from .tabs import Workbench
from .workbench_html import workbench_html

STYLE = """
body { font-family: Helvetica, Arial, sans-serif; color: #262626; margin: 24px 32px; }
h1 { font-size: 22px; } h2 { font-size: 18px; border-bottom: 1px solid #D9D9D9; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 4px; color: #44546A; }
nav ul { margin: 4px 0 16px; } .summary { color: #595959; font-size: 13px; }
"""


def section_title(workbench: Workbench) -> str:
    """A heading for the views of one Ir or Session (plain text)."""
    ir = workbench.ir
    ops = sum(len(graph.ops) for graph in ir.graphs)
    what = (f"{ir!r}: {count_of(len(ir.graphs), 'graph')}, {count_of(ops, 'op')}, "
            f"{count_of(ir.replication_factor, 'replica')}")
    session = workbench.session
    if session is None:
        return what
    return f"Session on {session.device.kind}, {count_of(session.run_count, 'run')}, of {what}"


def report_html(sources: Union[Any, Iterable[Any]], title: str = "IPU Workbench report",
                summary: str = "") -> str:
    """The whole report of ``sources`` (an Ir, Session or Workbench, or several) as one HTML page."""
    drawn: set[str] = set()

    def draw(figure, div_id: str) -> str:
        drawn.update(trace.type or "scatter" for trace in figure.data)
        return figure_html(figure, div_id)

    workbenches = [_workbench(source) for source in _as_list(sources)]
    ids = (f"workbench-{n}" for n in itertools.count())
    contents = "".join(f"<li><a href='#section-{n}'>{text(section_title(wb))}</a></li>"
                       for n, wb in enumerate(workbenches))
    sections = "\n".join(
        f"<section id='section-{n}'><h2>{text(section_title(wb))}</h2>\n{workbench_html(wb, draw, ids)}</section>"
        for n, wb in enumerate(workbenches))
    empty = "" if workbenches else "<p>Nothing to show: no Ir was given.</p>"
    return (f"<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n<title>{text(title)}</title>\n"
            f"<style>{STYLE}</style>\n{loader_html(drawn)}</head>\n<body>\n"
            f"<h1>{text(title)}</h1>\n"
            + (f"<p class='summary'>{text(summary)}</p>\n" if summary else "")
            + (f"<nav><ul>{contents}</ul></nav>\n" if len(workbenches) > 1 else "")
            + f"{empty}{sections}\n</body>\n</html>\n")


def report(sources: Union[Any, Iterable[Any]], path: Union[str, Path] = "report.html", *,
           title: str = "IPU Workbench report", summary: str = "") -> Path:
    """Write the standalone HTML report of an Ir, Session or Workbench (or a list of them) to ``path``;
    returns the path. The file needs no network: plotly.js is inside it, once, gzipped.

    >>> workbench.report(session, "report.html")
    """
    path = Path(path)
    path.write_text(report_html(sources, title, summary), encoding="utf-8")
    return path


def _as_list(sources: Any) -> list:
    """One source (an Ir, Session or Workbench, or what names one, as a PopART session does), or several."""
    if isinstance(sources, (Ir, Workbench)) or hasattr(sources, "events") or hasattr(sources, "_workbench_source"):
        return [sources]
    return list(sources)


def _workbench(source: Any) -> Workbench:
    return source if isinstance(source, Workbench) else Workbench(source, live=False)

