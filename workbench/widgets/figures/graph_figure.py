"""The dataflow figure of one graph: ops as squares, tensors as circles, layered top to bottom."""
from __future__ import annotations

from typing import Iterable, Optional

import numpy as np
import plotly.graph_objects as go

from ..dataflow import DataflowPicture
from ..layout import Layout, layered_layout
from ..style import (CALL_OUTLINE, EDGE_COLOR, HIGHLIGHT, KIND_COLORS, OP_OUTLINE, base_layout,
                     ipu_color, text, text_array)

LABEL_LIMIT = 300  # above this many nodes only call sites keep a text label...
NARROW = 6  # ...unless no layer is wider than this, so labels cannot collide
VISIBLE_LAYERS = 40  # taller pictures open showing the top layers; pan or double-click for all
EDGE_STYLES = {  # edge kind -> trace name and line style
    "data": ("data flow", dict(color=EDGE_COLOR, width=1)),
    "after": ("in_sequence order", dict(color="#7F7F7F", width=1, dash="dot")),
    "enter": ("call inputs", dict(color=CALL_OUTLINE, width=1, dash="dash")),
    "exit": ("call outputs", dict(color=CALL_OUTLINE, width=1, dash="dash")),
}
TENSOR_TRACES = {"variable": "variables", "constant": "constants", "input": "graph inputs",
                 "intermediate": "intermediates"}


def picture_layout(picture: DataflowPicture) -> Layout:
    """The layered layout of a picture's nodes and edges."""
    return layered_layout(list(picture.nodes), ((tail, head) for tail, head, _ in picture.edges),
                          x_gap=1.0, y_gap=1.0)


def graph_figure(picture: DataflowPicture, layout: Optional[Layout] = None, highlight: Iterable[str] = (),
                 selected: Iterable[str] = ()) -> go.Figure:
    """Nodes carry their picture key in ``customdata``; ``highlight`` keys (search matches) get a
    ring, ``selected`` keys a filled red marker."""
    layout = layout or picture_layout(picture)
    position = layout.positions
    figure = go.Figure()
    for kind, (name, line) in EDGE_STYLES.items():
        edges = [(tail, head) for tail, head, edge_kind in picture.edges if edge_kind == kind]
        if edges:
            figure.add_trace(_edge_trace(edges, position, name, line))
    many = len(picture.nodes) > LABEL_LIMIT
    op_size, tensor_size = (10, 7) if many else (16, 11)
    if layout.width <= NARROW:
        many = False
    ops = [node for node in picture.nodes.values() if node.kind == "op" and node.category == "op"]
    calls = [node for node in picture.nodes.values() if node.kind == "op" and node.category == "call"]
    if ops:
        figure.add_trace(_node_trace(ops, position, "ops", "square", op_size, _ipu_colors(ops), OP_OUTLINE,
                                     not many))
    if calls:
        figure.add_trace(_node_trace(calls, position, "call sites (click to expand)", "diamond",
                                     op_size + 4, _ipu_colors(calls), CALL_OUTLINE, True))
    for category, name in TENSOR_TRACES.items():
        tensors = [node for node in picture.nodes.values() if node.kind == "tensor" and node.category == category]
        if tensors:
            outline = ["#262626" if n.is_graph_output else "white" for n in tensors]
            figure.add_trace(_node_trace(tensors, position, name, "circle", tensor_size,
                                         KIND_COLORS[category], outline, not many, text_color="#595959"))
    for keys, name, marker in (
            (highlight, "search matches", dict(symbol="circle-open", size=op_size + 12, color=HIGHLIGHT,
                                               line=dict(width=3, color=HIGHLIGHT))),
            (selected, "selected", dict(symbol="square", size=op_size + 4, color=HIGHLIGHT))):
        keys = [key for key in keys if key in position]
        if keys:
            figure.add_trace(go.Scatter(x=[position[k][0] for k in keys], y=[position[k][1] for k in keys],
                                        mode="markers", name=name, marker=marker, customdata=keys,
                                        hovertext=[picture.nodes[k].hover for k in keys], hoverinfo="text"))
    _add_boxes(figure, picture, position)
    figure.update_layout(**_figure_layout(picture, layout))
    return figure


def _ipu_colors(nodes):
    """One colour when every node is on one IPU (plotly checks a colour list item by item)."""
    colors = [ipu_color(n.ipu) for n in nodes]
    return colors[0] if len(set(colors)) == 1 else colors


def _edge_trace(edges, position, name: str, line: dict) -> go.Scatter:
    """All edges of one kind as one line trace: tail, head, gap (NaN), tail, head, gap..."""
    points = np.full((len(edges), 3, 2), np.nan)
    points[:, 0] = [position[tail] for tail, _ in edges]
    points[:, 1] = [position[head] for _, head in edges]
    return go.Scatter(x=points[:, :, 0].ravel(), y=points[:, :, 1].ravel(), mode="lines", name=name, line=line,
                      hoverinfo="skip")


def _node_trace(nodes, position, name: str, symbol: str, size: int, color, outline, labelled: bool,
                text_color: str = "#262626") -> go.Scatter:
    xy = np.array([position[n.key] for n in nodes], dtype=float)
    return go.Scatter(
        x=xy[:, 0], y=xy[:, 1], mode="markers+text" if labelled else "markers", name=name,
        text=text_array(text(n.label) for n in nodes), textposition="middle right",
        textfont=dict(size=10, color=text_color),
        marker=dict(symbol=symbol, size=size, color=color if isinstance(color, str) else text_array(color),
                    line=dict(width=1.5, color=outline if isinstance(outline, str) else text_array(outline))),
        customdata=text_array(n.key for n in nodes), hovertext=text_array(n.hover for n in nodes), hoverinfo="text")


def _add_boxes(figure: go.Figure, picture: DataflowPicture, position) -> None:
    deepest = max((len(box.frame) for box in picture.boxes), default=0)
    for box in picture.boxes:
        points = [position[key] for key in box.members if key in position]
        if not points:
            continue
        pad = 0.3 + 0.15 * (deepest - len(box.frame))
        x0, x1 = min(p[0] for p in points) - pad, max(p[0] for p in points) + pad + 0.6
        y0, y1 = min(p[1] for p in points) - pad, max(p[1] for p in points) + pad
        figure.add_shape(type="rect", x0=x0, x1=x1, y0=y0, y1=y1, layer="below",
                         line=dict(color=CALL_OUTLINE, width=1, dash="dash"), fillcolor="rgba(252,229,205,0.25)")
        figure.add_annotation(x=x0, y=y1, text=text(box.label), showarrow=False, xanchor="left", yanchor="bottom",
                              font=dict(size=10, color=CALL_OUTLINE))


def _figure_layout(picture: DataflowPicture, layout: Layout) -> dict:
    tensors = len(picture.graph.tensors)
    title = f"{text(picture.graph.label)}: {len(picture.graph.ops)} ops, {tensors} tensors"
    notes = []
    if picture.detail == "ops":
        notes.append("ops only: tensors are listed in the hover")
    shown = min(layout.depth, VISIBLE_LAYERS)
    xs = [x for x, _ in layout.positions.values()] or [0.0]
    yaxis = dict(visible=False)
    if layout.depth > VISIBLE_LAYERS:
        yaxis["range"] = [-(VISIBLE_LAYERS - 0.5), 0.8]
        notes.append(f"top {VISIBLE_LAYERS} of {layout.depth} layers: drag to pan, double-click for all")
    if notes:
        title += f"<br><sup>{'; '.join(notes)}</sup>"
    return base_layout(title=dict(text=title, x=0.01), showlegend=True,
                       legend=dict(orientation="h", yanchor="top", y=-0.01, x=0.0, xanchor="left"),
                       xaxis=dict(visible=False, range=[min(xs) - 0.6, max(xs) + 1.6]), yaxis=yaxis, dragmode="pan",
                       height=int(min(max(55 * shown + 140, 360), 1000)),
                       margin=dict(l=20, r=20, t=60, b=70))
