"""Whether a graph's Graph-tab picture opens grouped or op by op, decided once here and shipped in the JSON
(``grouped.graphs[].opens``), so that the notebook's Graph tab and the JupyterLab extension's open every graph
the same way; both offer the other picture a click away ("every op" in the notebook, "draw every op" in the
extension).

A graph opens grouped where drawing it op by op would not explain it: from ``GROUPED_OPS`` ops (ResNet-50's 181
ops took 172 layers, 16 to a screen), or where its ops, wrapped to ``SCREEN_WIDTH`` pixels as both views wrap
them (``wrapping.band_rows`` over the shipped ``graph_layers``), take more than ``TALL_ROWS`` rows (a screen and a
half: a graph a row or two taller than a screen reads better scrolled than folded into runs of ops, as tutorial
10's 52-op step graph in 17 rows) and its grouped picture fits ``SCREEN_ROWS`` (a transformer's optimizer, 24 all-reduce → update pairs, is a ladder of 28 rows
op by op; grouped, the graph is its 5 ops and the optimizer's box). The grouped picture's rows count its top
level's and those of the graph's outputs, which the notebook draws beside the groups: a graph whose groups would
still take more than a screen (a transformer's forward graph, its 67 activations 22 rows) stays op by op.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Optional

from workbench.ir import Graph

from .compose import compose
from .graph_layers import graph_layers, wrap_width
from .wrapping import GRAPH_BAND_MARGIN, GRAPH_BEND, GRAPH_GAP, band_rows, wrap_rows

GROUPED_OPS = 150  # from this many ops a graph opens grouped
SCREEN_ROWS = 16  # rows of a picture one screen shows
TALL_ROWS = SCREEN_ROWS * 3 // 2  # rows op by op beyond which a graph whose groups fit a screen opens grouped
SCREEN_WIDTH = 960  # pixels of the output a graph is judged at: a notebook picture's width

LARGE, TALL, SMALL = "large", "tall", "small"


@dataclass(frozen=True, slots=True)
class Opening:
    """How a graph's picture opens: ``grouped`` or not, ``why`` ("large": ``GROUPED_OPS`` ops or more;
    "tall": op by op more than ``TALL_ROWS`` rows, grouped within a screen; "small": it fits, or its groups would not),
    and the rows of its ops drawn one by one and of its grouped top level with its outputs at ``SCREEN_WIDTH``
    (None where not measured: a large graph is grouped by its size alone)."""

    grouped: bool
    why: str
    rows: Optional[int] = None
    grouped_rows: Optional[int] = None

    def to_json(self) -> dict:
        return {"grouped": self.grouped, "why": self.why, "rows": self.rows, "grouped_rows": self.grouped_rows}


def graph_opening(graph: Graph, layering: Optional[dict] = None, pictures=None) -> Opening:
    """How ``graph`` opens; ``layering`` (its ``graph_layers`` entry) and ``pictures`` (its
    ``group_layout.GroupPictures``) are made here where not given."""
    if len(graph.ops) >= GROUPED_OPS:
        return Opening(True, LARGE)
    rows = wrapped_rows(layering if layering is not None else graph_layers(graph), SCREEN_WIDTH)
    if rows <= TALL_ROWS:
        return Opening(False, SMALL, rows)
    if pictures is None:
        from .group_layout import GroupPictures

        pictures = GroupPictures(graph)
    root = pictures.picture(pictures.root.id)
    has_groups = any(node["kind"] == "group" for node in root["nodes"])
    scene = compose(pictures.picture, pictures.root.id, (), room=SCREEN_WIDTH)
    outputs = wrap_rows([wrap_width(tensor) for tensor in graph.outputs], SCREEN_WIDTH - GRAPH_BAND_MARGIN, GRAPH_GAP)
    grouped_rows = len({round(box["y"]) for box in scene.boxes}) + (max(outputs) + 1 if outputs else 0)
    tall = has_groups and grouped_rows <= SCREEN_ROWS
    return Opening(tall, TALL if tall else SMALL, rows, grouped_rows)


def wrapped_rows(entry: dict, width: float) -> int:
    """The rows the nodes of a ``graph_layers`` entry take, wrapped into an output ``width`` pixels wide by
    ``wrapping.band_rows`` (each node its shipped width, each bend of an edge ``GRAPH_BEND``): the rows holding
    nodes, as a reader counts them."""
    if not entry["nodes"]:
        return 0
    items: dict[int, list] = defaultdict(list)  # layer -> (column, is a bend, item)
    widths: dict = {}
    predecessors: dict = defaultdict(list)
    for number, (key, layer, column) in enumerate(zip(entry["nodes"], entry["layers"], entry["cols"])):
        items[layer].append((column, 0, ("node", number)))
        widths[("node", number)] = entry["widths"][number]
    for number, (tail, head, bends) in enumerate(entry["edges"]):
        chain = [("node", tail), *[("bend", number, index) for index in range(len(bends))], ("node", head)]
        for (column, layer), bend in zip(bends, chain[1:-1]):
            items[layer].append((column, 1, bend))
            widths[bend] = GRAPH_BEND
        for before, after in zip(chain, chain[1:]):
            predecessors[after].append(before)
    layers = [[item for _, _, item in sorted(items[layer], key=lambda entry: entry[:2])] for layer in sorted(items)]
    rows, _ = band_rows(layers, widths, predecessors, width - GRAPH_BAND_MARGIN, GRAPH_GAP)
    return len({rows[("node", number)] for number in range(len(entry["nodes"]))})
