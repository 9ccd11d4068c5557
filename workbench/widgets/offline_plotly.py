"""Figures as HTML that draws with no network: plotly.js travels inside the HTML, gzipped, and the page
unpacks it with the browser's own DecompressionStream (once per page, however many outputs carry it;
a page that already has plotly.js uses its own). Figure JSON is written with ``<`` escaped, so no name
can close the script. The bundle is plotly.js's basic one (scatter and bar traces, all the views use)
where the install has it, else plotly's whole bundle.
"""
from __future__ import annotations

import base64
import functools
import gzip
import itertools
import json
import secrets
from pathlib import Path
from typing import Callable, Iterable

BASIC_BUNDLE = Path(__file__).parent / "assets" / "plotly-basic.min.js"
BASIC_TRACES = {"scatter", "bar", "pie"}  # what the basic bundle draws
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
LOADER = """
window.ipuWorkbenchPlotly = window.ipuWorkbenchPlotly || (async () => {
  if (window.Plotly) { return window.Plotly; }
  const packed = Uint8Array.from(atob(document.getElementById(%s).textContent), (c) => c.charCodeAt(0));
  const unpacked = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"));
  const script = document.createElement("script");
  script.textContent = await new Response(unpacked).text();
  document.head.appendChild(script);
  return window.Plotly;
})();
window.ipuWorkbenchDraw = window.ipuWorkbenchDraw || ((id, figure) =>
  window.ipuWorkbenchPlotly.then((Plotly) => Plotly.newPlot(id, figure.data, figure.layout, %s)));
"""


def plotlyjs_for(trace_types: Iterable[str]) -> str:
    """plotly.js's basic bundle when it draws every one of ``trace_types`` and matches the version
    of plotly's Python package, else plotly's whole bundle."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    if BASIC_BUNDLE.exists() and set(trace_types) <= BASIC_TRACES:
        bundle = BASIC_BUNDLE.read_text(encoding="utf-8")
        if f"v{get_plotlyjs_version()}" in bundle[:200]:
            return bundle
    return get_plotlyjs()


@functools.lru_cache(maxsize=2)
def _packed(basic: bool) -> str:
    source = plotlyjs_for(BASIC_TRACES if basic else {"any"}).encode("utf-8")
    return base64.b64encode(gzip.compress(source, compresslevel=9, mtime=0)).decode("ascii")


def packed_plotlyjs(trace_types: Iterable[str]) -> str:
    """The plotly.js that draws ``trace_types``, gzipped and in base64, as the loader unpacks it."""
    return _packed(set(trace_types) <= BASIC_TRACES)


def loader_html(trace_types: Iterable[str], element_id: str = "plotly-js") -> str:
    """The packed plotly.js under ``element_id`` and the loader that unpacks it."""
    return (f"<script id='{element_id}' type='application/gzip;base64'>{packed_plotlyjs(trace_types)}</script>\n"
            f"<script>{LOADER % (json.dumps(element_id), json.dumps(PLOTLY_CONFIG))}</script>\n")


def figure_html(figure, div_id: str) -> str:
    """A figure's div and the script that draws it once plotly.js is there."""
    data = figure.to_json().replace("<", "\\u003c")
    return (f'<div id="{div_id}" class="plotly-graph-div"></div>'
            f'<script>window.ipuWorkbenchDraw("{div_id}", {data});</script>')


def offline_drawer() -> Callable[[object, str], str]:
    """Draws figures as ``figure_html`` does, the first one preceded by the packed plotly.js and its loader;
    div ids get a random part so that many outputs can share a page."""
    token = secrets.token_hex(4)
    first = [True]

    def draw(figure, div_id: str) -> str:
        html = figure_html(figure, f"{div_id}-{token}")
        if first[0]:
            first[0] = False
            html = loader_html({trace.type or "scatter" for trace in figure.data}, f"plotly-js-{token}") + html
        return html
    return draw


def offline_ids() -> Iterable[str]:
    return (f"workbench-{n}" for n in itertools.count())
