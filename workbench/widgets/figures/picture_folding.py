"""A graph picture whose layers are too wide for its output, folded into rows: the layers that do not fit wrap
into bands by ``wrapping.band_rows``, each node as wide as ``graph_layers.wrap_width`` says (its marker and its
whole label), as the extension's Graph tab wraps the same layers, so that the two give the same rows at the
same output width. Edges are routed through the rows they pass by ``RowRouter``."""
from __future__ import annotations

from collections import defaultdict

from workbench.export.graph_layers import wrap_width
from workbench.export.layered import Layout
from workbench.export.wrapping import GRAPH_BAND_MARGIN, GRAPH_BEND, GRAPH_GAP, band_rows, wrap_rows

from ..dataflow import DataflowPicture
from .picture_labels import Sizes, label_rooms, picture_sizes, room_captions
from .row_routes import RowRouter

FOLD_COLUMN = 24  # pixels per column of a folded picture: a full-size marker and the gaps round it
# Edges pass a row at points of one grid, every LANE_PITCH pixels, at least LANE_CLEARANCE from a node's or a bend's
# cell: rows of cells of different widths share lanes, so that a run of edges goes straight down them.
LANE_PITCH, LANE_CLEARANCE = 6, 4


def fold_wide_layers(layout: Layout, picture: DataflowPicture, width: int) -> None:
    """Where some node's name would be cut or left out, or some layer is wider than the picture's ``width`` less
    ``GRAPH_BAND_MARGIN``, wraps the layers by ``band_rows`` into rows of that many pixels (a run of wide layers
    wraps in bands, each all-reduce of an optimizer over the update it feeds) and places each node and bend at
    its left edge there, in columns of ``FOLD_COLUMN`` pixels; a layer that fits keeps its place. Nodes keep
    their order in their layer; ``layout.layers`` keeps each node's layer."""
    band = width - GRAPH_BAND_MARGIN
    captions = room_captions(picture)
    widths: dict[object, float] = {key: wrap_width(node.item, node.sites, captions[key]) for key, node in picture.nodes.items()}
    widths.update({(edge, index): GRAPH_BEND for edge, route in layout.bends.items() for index in range(len(route))})
    ordered, predecessors = _layers(layout, picture)
    layers = [[item for _, item in entries] for entries in ordered]
    rooms = label_rooms(layout, picture_sizes(layout, width))
    if (all(rooms[key] >= len(node.label) for key, node in picture.nodes.items() if key in rooms)
            and not any(max(wrap_rows([widths[item] for item in layer], band, GRAPH_GAP), default=0) for layer in layers)):
        return  # every name fits (a caption may be cut after it) and every layer is one row
    row_of, lefts = band_rows(layers, widths, predecessors, band, GRAPH_GAP)
    numbers = {row: number for number, row in enumerate(sorted(set(row_of.values())))}
    rows: list[list[object]] = [[] for _ in numbers]
    starts = dict(lefts)
    for entries, layer in zip(ordered, layers):
        for item in layer:
            rows[numbers[row_of[item]]].append(item)
        total = sum(widths[item] for item in layer) + GRAPH_GAP * (len(layer) - 1)
        if len({row_of[item] for item in layer}) == 1 and total <= band:  # a layer that fits keeps its place
            shift = min(max(0.0, (entries[0][0] - layout.left) * FOLD_COLUMN), band - total)
            starts.update((item, lefts[item] + shift) for item in layer)
    _place(layout, picture, rows, starts, widths, band)


def _layers(layout: Layout, picture: DataflowPicture) -> tuple[list[list[tuple[float, object]]], dict]:
    """Each layer's nodes and bends (``(edge, index)``) with their columns, left to right, the top layer first;
    and for each point of an edge after its tail, the points before it (the edge's tail or bend)."""
    by_layer: dict[float, list[tuple[float, object]]] = defaultdict(list)
    for key in picture.nodes:
        if key in layout.positions:
            x, y = layout.positions[key]
            by_layer[y].append((x, key))
    for edge, route in layout.bends.items():
        for index, (x, y) in enumerate(route):
            by_layer[y].append((x, (edge, index)))
    predecessors: dict[object, list[object]] = defaultdict(list)
    for tail, head, _ in picture.edges:
        if tail in layout.positions and head in layout.positions:
            chain: list[object] = [tail, *[((tail, head), index) for index in range(len(layout.bends.get((tail, head), ())))],
                                   head]
            for before, after in zip(chain, chain[1:]):
                predecessors[after].append(before)
    return [sorted(by_layer[y], key=lambda entry: entry[0]) for y in sorted(by_layer, reverse=True)], predecessors


def _place(layout: Layout, picture: DataflowPicture, rows: list[list[object]], starts: dict, widths: dict,
           band: float) -> None:
    """Puts each item of ``rows`` at its left edge (``starts``, pixels): a node's marker a marker's half right of
    it, a bend in the middle of its slot; and routes the edges through the lanes of each row clear of its items."""
    column = FOLD_COLUMN
    half = Sizes(column).call / 2

    def at(pixels: float) -> float:  # pixels from the left of the plot -> column (the plot starts half a column left)
        return pixels / column - 0.5

    positions, bends = {}, {edge: list(route) for edge, route in layout.bends.items()}
    lanes: list[list[float]] = []  # per row: columns an edge may cross it at, clear of nodes and labels
    for number, items in enumerate(rows):
        cells = [(starts[item] - LANE_CLEARANCE, starts[item] + widths[item] + LANE_CLEARANCE) for item in items]
        lanes.append([at(pixels) for pixels in range(0, int(max(band, *(right for _, right in cells))) + 1, LANE_PITCH)
                      if not any(left < pixels < right for left, right in cells)])
        for item in items:
            if isinstance(item, tuple) and isinstance(item[0], tuple):
                bends[item[0]][item[1]] = (at(starts[item] + GRAPH_BEND / 2), -float(number))
            else:
                positions[item] = (at(starts[item] + half), -float(number))
    layout.positions, layout.bends, layout.left, layout.depth = positions, bends, 0.0, len(lanes)
    router = RowRouter(lanes)
    drawn = [(tail, head) for tail, head, _ in picture.edges if tail in positions and head in positions]
    for tail, head in drawn:
        router.route(tail, layout.route(tail, head))
    for edge, route in zip(drawn, router.rerouted()):
        if len(route) > 2:
            layout.bends[edge] = route[1:-1]
    xs = [x for x, _ in positions.values()] + [x for route in layout.bends.values() for x, _ in route]
    layout.width = max(band / column - 0.5, max(xs) + 0.5)
