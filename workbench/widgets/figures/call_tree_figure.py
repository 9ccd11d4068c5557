"""The call tree figure: graphs as nodes (sized by op count), call sites as labelled edges."""
from __future__ import annotations

from collections import defaultdict
from math import sqrt
from typing import Optional

import plotly.graph_objects as go

from workbench.analysis.call_tree import CallTree, CallTreeEdge, CallTreeNode

from ..layout import layered_layout
from ..style import HIGHLIGHT, base_layout, count_of, text

NODE_COLORS = {"main": "#1F4E79", "runs": "#4C78A8", "branch": "#72B7B2", "unused": "#BFBFBF"}
EDGE_LOOKS = {  # trace name -> line style; call-site kinds map onto these names
    "call": dict(color="#595959", width=1.5),
    "repeat": dict(color="#B45F06", width=2.5),
    "branch": dict(color="#7030A0", width=1.5, dash="dash"),
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
    """Graphs carry their id in ``customdata``; the node of ``selected_graph`` is ringed."""
    keys = [node.graph.id for node in tree.nodes]
    layout = layered_layout(keys, ((e.caller.id, e.callee.id) for e in tree.edges), x_gap=1.0, y_gap=1.0)
    position = layout.positions
    figure = go.Figure()
    pairs: dict[tuple[str, str], list[CallTreeEdge]] = defaultdict(list)
    for edge in tree.edges:
        pairs[edge.caller.id, edge.callee.id].append(edge)
    for name, line in EDGE_LOOKS.items():
        xs, ys = [], []
        for (caller, callee), edges in pairs.items():
            if any(edge_label(e).split(" ")[0] == name for e in edges):
                xs += [position[caller][0], position[callee][0], None]
                ys += [position[caller][1], position[callee][1], None]
        if xs:
            figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name, line=line, hoverinfo="skip"))
    for (caller, callee), edges in pairs.items():
        (x0, y0), (x1, y1) = position[caller], position[callee]
        look = EDGE_LOOKS[edge_label(edges[0]).split(" ")[0]]
        figure.add_annotation(x=(x0 + x1) / 2, y=(y0 + y1) / 2, text=_pair_label(edges), showarrow=False,
                              font=dict(size=11, color=look["color"]), bgcolor="rgba(255,255,255,0.9)",
                              hovertext=_pair_hover(edges), name="call site")
    statuses = [node_status(tree, node) for node in tree.nodes]
    biggest = max((node.op_count for node in tree.nodes), default=1) or 1
    sizes = [14 + 26 * sqrt(node.op_count / biggest) for node in tree.nodes]
    figure.add_trace(go.Scatter(
        x=[position[k][0] for k in keys], y=[position[k][1] for k in keys], mode="markers",
        name="graphs", customdata=keys,
        marker=dict(symbol="square", size=sizes, color=[NODE_COLORS[s] for s in statuses],
                    line=dict(width=1, color="white")),
        hovertext=[_node_hover(tree, node) for node in tree.nodes], hoverinfo="text"))
    for key, node, size in zip(keys, tree.nodes, sizes):
        figure.add_annotation(x=position[key][0], y=position[key][1], text=_node_label(node), showarrow=False,
                              yanchor="top", yshift=-size / 2 - 2, font=dict(size=11),
                              bgcolor="rgba(255,255,255,0.85)", name="graph")
    if selected_graph is not None and selected_graph.id in position:
        x, y = position[selected_graph.id]
        figure.add_trace(go.Scatter(x=[x], y=[y], mode="markers", name="selected", customdata=[selected_graph.id],
                                    marker=dict(symbol="square-open", size=48, color=HIGHLIGHT, line=dict(width=3)),
                                    hoverinfo="skip"))
    xs = [p[0] for p in position.values()] or [0]
    figure.update_layout(**base_layout(
        title=dict(text=title or f"Call tree: {count_of(len(tree.nodes), 'graph')}, {count_of(len(tree.edges), 'call site')}",
                   x=0.01),
        showlegend=True, legend=dict(orientation="h", yanchor="bottom", y=1.0, x=1.0, xanchor="right"),
        xaxis=dict(visible=False, range=[min(xs) - 0.8, max(xs) + 0.8]),
        yaxis=dict(visible=False, range=[-layout.depth + 0.35, 0.4]),
        width=int(min(max(170 * layout.width + 160, 420), 1100)),
        height=int(min(max(130 * layout.depth + 90, 280), 900)), margin=dict(l=20, r=20, t=70, b=20)))
    return figure


def _pair_label(edges: list[CallTreeEdge]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for edge in edges:
        counts[edge_label(edge)] += 1
    return ", ".join(label if n == 1 else f"{label} ({n} sites)" for label, n in counts.items())


def _pair_hover(edges: list[CallTreeEdge]) -> str:
    return "<br>".join(f"{text(e.op.name)} in {text(e.caller.label)}: {edge_label(e)} {text(e.callee.label)}"
                       for e in edges)


def _node_label(node: CallTreeNode) -> str:
    runs = node.runs_per_session_run
    return f"<b>{text(node.label)}</b><br>{node.op_count} ops · runs ×{runs}"


def _node_hover(tree: CallTree, node: CallTreeNode) -> str:
    lines = [f"<b>{text(node.label)}</b>", f"{node.op_count} ops",
             f"runs {node.runs_per_session_run}× per session run"
             + (" (if its branches are taken)" if node.through_branch else "")]
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
