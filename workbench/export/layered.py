"""Layered pictures of directed graphs (call trees, dataflow): every edge points down, long edges bend
around the nodes between their ends.

The layers are chosen here: longest path from the sources, then each op fed by sources alone (a
transpose of a weight, with its result tensor) and each source (a variable, a constant, a graph
input) moved down to just above its first consumer rather than left at the top. igraph's
Sugiyama layout does the rest: it orders each layer to remove crossings, places the nodes, and
routes an edge that spans several layers through bend points of its own, one per layer crossed,
placed like nodes so that no node sits on the edge's path. Where igraph's routes do not step through
the layers between their ends (igraph 1.0 gives some edges of some graphs the bends of others), the
layout is made again with a dummy vertex for each bend, ordered and placed like nodes. Where its placement
puts two nodes of a layer less than a column apart, or a bend less than half a column from its
neighbours (it sometimes puts two at one spot), they are moved apart.

A picture with frames (groups opened, calls expanded: ``groups``, sets of nodes nested or apart) is ordered
again from igraph's order by ``framed_order``, each frame a block in every layer it spans, as the packing of
such pictures draws them; igraph's order, blind to frames, would have the packing set out frames and their
nodes in an order whose edges cross far more. Each edge is then drawn straight, bent on each layer between.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Collection, Hashable, Iterable, Mapping, Optional, Sequence

from .framed_order import framed_columns

if TYPE_CHECKING:  # igraph (which loads plotly when present) loads with the first layout, not with popxl
    import igraph

SWEEPS = 30  # crossing-reduction sweeps; beyond a few tens they seldom change the picture
Point = tuple[float, float]


@dataclass(slots=True)
class Layout:
    """Positions (x in columns to the right, y in layers, downwards negative), the layer of every
    node, and the bend points of each edge (tail, head) between its two ends (none for an edge
    between neighbouring layers). ``left`` is the leftmost column and ``width`` the number of
    columns from there to the rightmost, both included, of nodes and bends alike."""

    positions: dict[Hashable, Point] = field(default_factory=dict)
    left: float = 0.0
    layers: dict[Hashable, int] = field(default_factory=dict)
    bends: dict[tuple[Hashable, Hashable], list[Point]] = field(default_factory=dict)
    depth: int = 0
    width: float = 0.0

    def route(self, tail: Hashable, head: Hashable) -> list[Point]:
        """The points an edge passes through: its tail, its bends, its head."""
        return [self.positions[tail], *self.bends.get((tail, head), ()), self.positions[head]]


def column_pixels(layout: Layout, width: int, least: float) -> float:
    """Pixels per column when the picture, with half a column to its left and one to its right (room
    for the labels of the rightmost nodes), spans ``width`` pixels; never fewer than ``least``."""
    return max(width / (layout.width + 0.5), least)


def layered_layout(nodes: Sequence[Hashable], edges: Iterable[tuple[Hashable, Hashable]],
                   first: Hashable = None, last: Hashable = None, late: bool = False,
                   given: Optional[Mapping[Hashable, int]] = None, groups: Sequence[Collection[Hashable]] = (),
                   widths: Optional[Mapping[Hashable, float]] = None) -> Layout:
    """Lay ``nodes`` out in layers so that each edge (tail, head) goes down; see the module docstring.
    Edges between unknown nodes, self-loops and repeated edges are ignored. Node ``first`` (if given)
    gets a layer above all others, ``last`` one below all others (where the edges leave no cycle). With
    ``late``, every node that feeds another goes to just above its first consumer (``_late_layers``). ``given``
    layers (every node's, each edge pointing down) are taken as they are: igraph orders and places them. With
    ``groups``, each group's nodes are kept together as a block (``framed_order``), nodes as many columns wide as
    ``widths`` gives (one where it gives none)."""
    import igraph

    index = {node: number for number, node in enumerate(nodes)}
    keys = list(index)
    pairs = list(dict.fromkeys((index[tail], index[head]) for tail, head in edges
                               if tail in index and head in index and tail != head))
    graph = igraph.Graph(n=len(index), edges=pairs, directed=True)
    layers: Optional[list[int]]
    if given is not None:
        layers = [given[node] for node in index]
    else:
        layers = (_late_layers if late else _layers)(graph) if graph.is_dag() else None
    if layers is not None and (first in index or last in index):
        layers = _pinned(layers, index.get(first), index.get(last))
    if not index:
        return Layout()
    if layers is None:  # a cycle (only a broken IR has one): igraph's layering, which reverses some edges
        picture = graph.layout_sugiyama(hgap=1, vgap=1, maxiter=SWEEPS)
        layers = [int(round(y)) for _, y in picture.coords[:len(index)]]
    else:
        picture = graph.layout_sugiyama(layers=layers, hgap=1, vgap=1, maxiter=SWEEPS)
    coords = picture.coords
    routes = [[[x, -y] for x, y in route] for route in picture.edge_routing]
    if not _routes_step_through(pairs, layers, picture.edge_routing):
        extended, dummies = _with_dummies(len(index), pairs, layers)
        picture = extended.layout_sugiyama(layers=layers + [layer for chain in dummies for _, layer in chain], hgap=1,
                                           vgap=1, maxiter=SWEEPS)
        coords = picture.coords
        routes = [[[coords[vertex][0], -coords[vertex][1]] for vertex, _ in chain] for chain in dummies]
    points = [[x, -y] for x, y in coords[:len(index)]]
    if groups:
        columns = framed_columns(dict(zip(keys, layers)), [(keys[tail], keys[head]) for tail, head in pairs], groups,
                                 {node: points[number][0] for node, number in index.items()}, widths)
        points = [[columns[node], -layers[number]] for node, number in index.items()]
        routes = [_straight(points[tail], points[head]) for tail, head in pairs]
    else:
        _keep_apart(points, [point for route in routes for point in route])
    positions = {node: (x, y) for node, (x, y) in zip(index, points)}
    bends = {(keys[tail], keys[head]): [(x, y) for x, y in route]
             for (tail, head), route in zip(pairs, routes) if route}
    xs = [x for x, _ in points] + [x for route in routes for x, _ in route]  # nodes and bends
    depth = max(layers) + 1
    return Layout(positions, min(xs), {node: layers[number] for number, node in enumerate(index)}, bends, depth,
                  max(xs) - min(xs) + 1)


def _straight(tail: list[float], head: list[float]) -> list[list[float]]:
    """The bends of an edge drawn straight from ``tail`` to ``head``, one on each layer between them."""
    (x0, y0), (x1, y1) = tail, head
    step = -1 if y1 < y0 else 1
    return [[x0 + (x1 - x0) * (y - y0) / (y1 - y0), float(y)] for y in range(int(y0) + step, int(y1), step)]


def _routes_step_through(pairs: list[tuple[int, int]], layers: list[int], routing) -> bool:
    """Whether igraph's route of every edge has a bend on each layer between its ends, in order (igraph 1.0
    gives some edges of some graphs, with many vertices and few edges, the bends of others)."""
    for (tail, head), route in zip(pairs, routing):
        step = 1 if layers[head] >= layers[tail] else -1
        if [round(y) for _, y in route] != list(range(layers[tail] + step, layers[head], step)):
            return False
    return len(routing) == len(pairs)


def _with_dummies(count: int, pairs: list[tuple[int, int]], layers: list[int]) -> tuple[igraph.Graph, list]:
    """The graph of ``count`` vertices and ``pairs`` with a dummy vertex on each layer an edge crosses (igraph's
    own routing of long edges gives some edges the bends of others), and each edge's dummies with their layers
    from its tail on."""
    import igraph

    edges: list[tuple[int, int]] = []
    dummies: list[list[tuple[int, int]]] = []
    next_vertex = count
    for tail, head in pairs:
        step = 1 if layers[head] >= layers[tail] else -1
        chain = [(next_vertex + number, layer) for number, layer in enumerate(range(layers[tail] + step, layers[head], step))]
        next_vertex += len(chain)
        path = [tail, *(vertex for vertex, _ in chain), head]
        edges.extend(zip(path, path[1:]))
        dummies.append(chain)
    return igraph.Graph(n=next_vertex, edges=edges, directed=True), dummies


def _keep_apart(nodes: list[list[float]], bends: list[list[float]]) -> None:
    """Move points (``[x, y]``) right where needed, keeping their order in each layer, so that two nodes
    of a layer are at least a column apart and a bend at least half a column from anything else:
    igraph's placement sometimes puts two at one spot."""
    layers: dict[float, list[tuple[list[float], bool]]] = {}
    for points, is_node in ((nodes, True), (bends, False)):
        for point in points:
            layers.setdefault(point[1], []).append((point, is_node))
    for row in layers.values():
        row.sort(key=lambda entry: entry[0][0])
        for (left, left_is_node), (right, right_is_node) in zip(row, row[1:]):
            right[0] = max(right[0], left[0] + (1.0 if left_is_node and right_is_node else 0.5))


def _layers(graph: igraph.Graph) -> list[int]:
    """Longest path from the sources; then each node fed by sources alone (a transpose of an input),
    and each node that follows one of those alone (the transpose's result), moved down to just above
    its first consumer, and each source likewise."""
    layer = [0] * graph.vcount()
    predecessors = graph.get_adjlist(mode="in")
    successors = graph.get_adjlist(mode="out")
    order = graph.topological_sorting()
    hanging = [False] * graph.vcount()  # fed by sources alone, or by one such node alone
    for vertex in order:
        before = predecessors[vertex]
        layer[vertex] = max((layer[p] + 1 for p in before), default=0)
        hanging[vertex] = bool(before) and (all(not predecessors[p] for p in before)
                                            or (len(before) == 1 and hanging[before[0]]))
    moved = [v for v in reversed(order) if hanging[v]] + [v for v in order if not predecessors[v]]
    for vertex in moved:
        if successors[vertex]:
            layer[vertex] = min(layer[s] for s in successors[vertex]) - 1
    lowest = min(layer, default=0)
    return [value - lowest for value in layer]


def _late_layers(graph: igraph.Graph) -> list[int]:
    """``_layers``, then every node that feeds another moved down to just above its first consumer, the last
    first: a chain that reads only a graph's inputs (a backward graph's gelu derivative, from the activations
    saved by the forward pass) sits beside the ops that use it, not at the top of the picture, so that the
    frame of a group holding it spans its own layers only."""
    layer = _layers(graph)
    successors = graph.get_adjlist(mode="out")
    for vertex in reversed(graph.topological_sorting()):
        if successors[vertex]:
            layer[vertex] = min(layer[s] for s in successors[vertex]) - 1
    lowest = min(layer, default=0)
    return [value - lowest for value in layer]


def _pinned(layers: list[int], first, last) -> list[int]:
    """``layers`` with vertex ``first`` above every other and ``last`` below (either may be None)."""
    others = [layer for vertex, layer in enumerate(layers) if vertex not in (first, last)]
    top, bottom = min(others, default=0), max(others, default=0)
    layers = list(layers)
    if first is not None:
        layers[first] = top - 1
    if last is not None:
        layers[last] = bottom + 1
    lowest = min(layers)
    return [value - lowest for value in layers]
