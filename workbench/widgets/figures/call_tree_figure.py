"""The call tree figure: graphs as nodes (sized by op count), call sites as labelled edges."""
from __future__ import annotations

from collections import defaultdict
from math import sqrt
from typing import Optional

import plotly.graph_objects as go

from workbench.analysis.call_tree import CallTree, CallTreeEdge, CallTreeNode

from workbench.export.layered import Layout, column_pixels, layered_layout
from ..style import CALL_SITE_COLORS, GRAPH_STATUS_COLORS, HIGHLIGHT, PICTURE_WIDTH, TEMPLATE, base_layout, count_of, text

MIN_COLUMN = 160  # pixels per column at least; wider trees widen the picture, then open around the main graph
WIDEST_PICTURE = 1280  # pixels: the widest call tree picture, as wide as a notebook's output area
LAYER_HEIGHT = 130  # pixels per level of calls
RING = 12  # pixels the selection ring adds around a graph's square
HOVER_INPUTS = 4  # graph inputs a hover lists: what tells apart graphs one module made for other shapes
CARD_WIDTH, CARD_HEIGHT = 480, 170  # pixels: the picture of a program of one graph, a card, not a tree's canvas
CARD_SQUARE = 34  # pixels: the one graph's square on the card
NOTE_LINE = 18  # pixels more for the note under the title of graphs built but never called
NO_CALLS_NOTE = "the main graph calls none of the {others} built: ops.call or ops.repeat would show the calls here"

NODE_COLORS = GRAPH_STATUS_COLORS
EDGE_LOOKS = {  # trace name -> line style; call-site kinds map onto these names
    "call": dict(color=CALL_SITE_COLORS["call"], width=1.5),
    "repeat": dict(color=CALL_SITE_COLORS["repeat"], width=2.5),
    "branch": dict(color=CALL_SITE_COLORS["branch"], width=1.5, dash="dash"),
}


def edge_label(edge: CallTreeEdge) -> str:
    """'call', 'repeat ×N', 'branch (then)' or 'branch (else)'."""
    if edge.kind == "repeat":
        return f"repeat ×{edge.repeat_count}"
    if edge.kind.startswith("conditional"):
        return f"branch ({edge.kind.split('-')[1]})"
    return "call"


def node_status(tree: CallTree, node: CallTreeNode) -> str:
    """'main', 'runs', 'branch' (runs only if a branch is taken) or 'unused' (never runs)."""
    if node is tree.nodes[0]:
        return "main"
    if node.runs_per_session_run == 0:
        return "unused"
    return "branch" if node.through_branch else "runs"


def call_tree_figure(tree: CallTree, selected_graph=None, title: Optional[str] = None) -> go.Figure:
    """Graphs carry their id in ``customdata``; the node of ``selected_graph`` is ringed. Each graph's
    name sits to the right of its square; each call-site edge leaves its caller's square at the
    bottom, enters its callee's at the top, and has its label beside it. A program of one graph is a
    card (``one_graph_card``)."""
    if len(tree.nodes) == 1 and not tree.edges:
        return one_graph_card(tree, selected_graph, title)
    keys = [node.graph.id for node in tree.nodes]
    layout = layered_layout(keys, ((e.caller.id, e.callee.id) for e in tree.edges))
    position = layout.positions
    biggest = max((node.op_count for node in tree.nodes), default=1) or 1
    sizes = dict(zip(keys, (14 + 26 * sqrt(node.op_count / biggest) for node in tree.nodes)))
    figure = go.Figure(layout=dict(template=TEMPLATE))
    pairs: dict[tuple[str, str], list[CallTreeEdge]] = defaultdict(list)
    for edge in tree.edges:
        pairs[edge.caller.id, edge.callee.id].append(edge)
    paths = {pair: _edge_path(layout, *pair, sizes) for pair in pairs}
    for name, line in EDGE_LOOKS.items():
        xs, ys = [], []
        for pair, edges in pairs.items():
            if any(_look(e) == name for e in edges):
                xs += [x for x, _ in paths[pair]] + [None]
                ys += [y for _, y in paths[pair]] + [None]
        if xs:
            figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name, line=line, hoverinfo="skip"))
    # A tree wider than the usual picture gets a wider one, up to WIDEST_PICTURE; beyond that it pans.
    width = int(min(max(PICTURE_WIDTH, (layout.width + 0.5) * MIN_COLUMN + 40), WIDEST_PICTURE))
    column = column_pixels(layout, width - 40, MIN_COLUMN)
    room = int((column - 50) // 7)
    several_ipus = len({ipu for node in tree.nodes for ipu in node.ipus}) > 1
    for pair, edges in pairs.items():
        (x0, y0), (x1, y1) = paths[pair][:2]
        # beside the line, on the side it leaves free: below it where it runs down to the left
        figure.add_annotation(x=(x0 + x1) / 2, y=(y0 + y1) / 2, text=_pair_label(edges), showarrow=False,
                              xanchor="left", yanchor="top" if x1 < x0 else "bottom", xshift=6, font=dict(size=11, color=EDGE_LOOKS[_look(edges[0])]["color"]),
                              bgcolor="rgba(255,255,255,0.9)", hovertext=_pair_hover(edges), name="call site")
    statuses = [node_status(tree, node) for node in tree.nodes]
    figure.add_trace(go.Scatter(
        x=[position[k][0] for k in keys], y=[position[k][1] for k in keys], mode="markers",
        name="graphs", customdata=keys,
        marker=dict(symbol="square", size=[sizes[k] for k in keys], color=[NODE_COLORS[s] for s in statuses],
                    line=dict(width=1, color="white")),
        hovertext=[_node_hover(tree, node) for node in tree.nodes], hoverinfo="text"))
    for key, node in zip(keys, tree.nodes):
        figure.add_annotation(x=position[key][0], y=position[key][1], text=_node_label(node, room, several_ipus),
                              showarrow=False, xanchor="left", xshift=sizes[key] / 2 + RING / 2 + 4, align="left",
                              font=dict(size=11), bgcolor="rgba(255,255,255,0.85)", name="graph")
    if selected_graph is not None and selected_graph.id in position:
        x, y = position[selected_graph.id]
        size = sizes[selected_graph.id] + RING
        figure.add_trace(go.Scatter(x=[x], y=[y], mode="markers", name="selected", customdata=[selected_graph.id],
                                    marker=dict(symbol="square-open", size=size, color=HIGHLIGHT, line=dict(width=3)),
                                    hoverinfo="skip"))
    shown = (width - 40) / column  # columns the picture holds
    left = _opening_left(layout, position[keys[0]][0] if keys else 0.0, shown)
    wider = layout.width + 0.5 > shown + 1e-9
    note = "" if tree.edges else f"<br><sup>{NO_CALLS_NOTE.format(others=count_of(len(tree.nodes) - 1, 'other graph'))}</sup>"
    figure.update_layout(**base_layout(
        title=dict(text=title or f"Call tree: {count_of(len(tree.nodes), 'graph')}, {_calls_text(tree)}"
                                 + (" · drag to pan" if wider else "") + note, x=0.01),
        showlegend=True, legend=dict(orientation="h", yanchor="bottom", y=1.0, x=1.0, xanchor="right"),
        dragmode="pan" if wider else None, width=width if width > PICTURE_WIDTH else None,
        xaxis=dict(visible=False, range=[left, left + shown]),
        yaxis=dict(visible=False, range=[-layout.depth + 0.5, 0.5]),
        height=LAYER_HEIGHT * layout.depth + 90 + (NOTE_LINE if note else 0),
        margin=dict(l=20, r=20, t=70 + (NOTE_LINE if note else 0), b=20)))
    return figure


def _calls_text(tree: CallTree) -> str:
    """'3 call sites', or 'no subgraph calls' for a program whose main graph calls no graph."""
    return count_of(len(tree.edges), "call site") if tree.edges else "no subgraph calls"


def one_graph_card(tree: CallTree, selected_graph=None, title: Optional[str] = None) -> go.Figure:
    """The call tree of a program of one graph: that graph's square with its name, op count, runs and IPUs
    beside it, the legend just above them saying it calls no other graph, all in a small picture (a tree's
    canvas put the one square in a far corner from its legend)."""
    (node,) = tree.nodes
    key = node.graph.id
    figure = go.Figure(layout=dict(template=TEMPLATE))
    figure.add_trace(go.Scatter(
        x=[0], y=[0], mode="markers", name="the main graph, calling no other graph", customdata=[key],
        marker=dict(symbol="square", size=CARD_SQUARE, color=NODE_COLORS["main"], line=dict(width=1, color="white")),
        hovertext=[_node_hover(tree, node)], hoverinfo="text"))
    label = _node_label(node, (CARD_WIDTH - 2 * CARD_SQUARE - 60) // 7, with_ipus=bool(node.ipus))
    figure.add_annotation(x=0, y=0, text=label, showarrow=False, xanchor="left", align="left",
                          xshift=CARD_SQUARE / 2 + RING / 2 + 4, font=dict(size=11), name="graph")
    if selected_graph is not None and selected_graph.id == key:
        figure.add_trace(go.Scatter(x=[0], y=[0], mode="markers", name="selected", customdata=[key], showlegend=False,
                                    marker=dict(symbol="square-open", size=CARD_SQUARE + RING, color=HIGHLIGHT,
                                                line=dict(width=3)), hoverinfo="skip"))
    plot_width = CARD_WIDTH - 40
    figure.update_layout(**base_layout(
        title=dict(text=title or "Call tree: 1 graph, no subgraph calls", x=0.01),
        showlegend=True, legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, xanchor="left"),
        width=CARD_WIDTH, height=CARD_HEIGHT,
        xaxis=dict(visible=False, range=[-CARD_SQUARE / plot_width, 1 - CARD_SQUARE / plot_width]),
        yaxis=dict(visible=False, range=[-1, 1]), margin=dict(l=20, r=20, t=70, b=20)))
    return figure


def _look(edge: CallTreeEdge) -> str:
    """The EDGE_LOOKS entry of an edge: 'call', 'repeat' or 'branch'."""
    return edge_label(edge).split(" ")[0]


def _edge_path(layout: Layout, caller: str, callee: str, sizes: dict) -> list[tuple[float, float]]:
    """From the bottom of the caller's square through the edge's bends to the top of the callee's."""
    (x0, y0), *middle, (x1, y1) = layout.route(caller, callee)
    below, above = (sizes[caller] + RING) / 2, (sizes[callee] + RING) / 2
    return [(x0, y0 - below / LAYER_HEIGHT), *middle, (x1, y1 + above / LAYER_HEIGHT)]


def _pair_label(edges: list[CallTreeEdge]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for edge in edges:
        counts[edge_label(edge)] += 1
    return ", ".join(label if n == 1 else f"{label} ({n} sites)" for label, n in counts.items())


def _pair_hover(edges: list[CallTreeEdge]) -> str:
    return "<br>".join(f"{text(e.op.name)} in {text(e.caller.label)}: {edge_label(e)} {text(e.callee.label)}"
                       for e in edges)


def _opening_left(layout: Layout, main_x: float, shown: float) -> float:
    """The left end of the x range the picture opens on: the whole tree where it fits, else a window
    around the main graph (the root every call starts from), kept within the tree."""
    left, right = layout.left - 0.5, layout.left + layout.width
    if right - left <= shown:
        return left
    return min(max(main_x - shown / 2, left), right - shown)


def ipus_text(ipus: tuple[int, ...]) -> str:
    """'IPU 1' or 'IPUs 0, 1': where a graph's ops run."""
    return f"IPU {ipus[0]}" if len(ipus) == 1 else "IPUs " + ", ".join(map(str, ipus))


def _node_label(node: CallTreeNode, room: int, with_ipus: bool = False) -> str:
    """The graph's name (cut to ``room`` characters: the hover has it whole), its size and runs, and
    with ``with_ipus`` (a program on several IPUs: pipeline stages) the IPUs it runs on."""
    runs = node.runs_per_session_run
    where = f"<br>{ipus_text(node.ipus)}" if with_ipus and node.ipus else ""
    return f"<b>{text(ends_kept(node.label, room))}</b><br>{count_of(node.op_count, 'op')} · runs ×{runs}{where}"


def ends_kept(label: str, room: int) -> str:
    """``label`` cut to ``room`` characters in its middle: graphs a library or pass makes share long
    prefixes and differ at their ends ('..._grad', '..._1', '...__loop_wrapper')."""
    if len(label) <= room:
        return label
    tail = (room - 1) * 3 // 5
    return label[:room - 1 - tail] + "…" + (label[-tail:] if tail else "")


def _node_hover(tree: CallTree, node: CallTreeNode) -> str:
    lines = [f"<b>{text(node.label)}</b>", f"{node.op_count} ops" + (f" on {ipus_text(node.ipus)}" if node.ipus else ""),
             f"runs {node.runs_per_session_run}× per session run"
             + (" (if its branches are taken)" if node.through_branch else "")]
    if node is not tree.nodes[0] and node.graph.inputs:
        specs = [f"{text(t.dtype.name)}{list(t.shape)}" for t in node.graph.inputs[:HOVER_INPUTS]]
        more = f" and {len(node.graph.inputs) - HOVER_INPUTS} more" if len(node.graph.inputs) > HOVER_INPUTS else ""
        lines.append("takes " + ", ".join(specs) + more)
    callers = [e for e in tree.edges if e.callee is node.graph]
    callees = [e for e in tree.edges if e.caller is node.graph]
    if callers:
        lines.append("called from " + ", ".join(f"{text(e.caller.label)} ({edge_label(e)})" for e in callers))
    if callees:
        lines.append("calls " + ", ".join(f"{text(e.callee.label)} ({edge_label(e)})" for e in callees))
    if node is not tree.nodes[0] and node.runs_per_session_run == 0:
        lines.append("never runs: the main graph does not reach it")
    lines.append("<i>click to open in the graph view</i>")
    return "<br>".join(lines)
