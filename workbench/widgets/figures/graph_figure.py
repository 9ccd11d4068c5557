"""The dataflow figure of one graph: ops as squares, tensors as circles, layered top to bottom."""
from __future__ import annotations

from typing import Hashable, Iterable, Optional

import numpy as np
import plotly.graph_objects as go

from ..dataflow import DataflowPicture, node_key
from workbench.export.layered import Layout, layered_layout
from workbench.export.opening import SCREEN_ROWS

from .picture_frames import FramePlan, frame_plan, layer_pixels
from .picture_folding import fold_wide_layers
from .picture_nesting import nested_layers
from .picture_packing import COLUMN, HALF, pack_frames
from .picture_labels import CHAR_WIDTH, LABEL_GAP, MARGIN, Sizes, drawn_label, label_markup
from ..style import (CALL_OUTLINE, EDGE_COLOR, HIGHLIGHT, IN_SEQUENCE_COLOR, KIND_COLORS, OP_OUTLINE, PICTURE_WIDTH, TEMPLATE,
                     base_layout, count_of, ipu_color, text, text_array)

VISIBLE_LAYERS = SCREEN_ROWS  # taller pictures open showing the top layers; pan or double-click for all
ARROW_SIZE = 12  # plotly marker size (a triangle about 8 px wide): the arrowhead at the end of each edge, where it enters its head node
ARROW_TRACE = "arrowheads"
STUB = 0.25  # layers: an edge leaves and enters a node vertically over this height, clear of labels
EDGE_STYLES = {  # edge kind -> trace name and line style
    "data": ("data flow", dict(color=EDGE_COLOR, width=1)),
    "after": ("in_sequence order", dict(color=IN_SEQUENCE_COLOR, width=1, dash="dot")),
    "enter": ("call inputs", dict(color=CALL_OUTLINE, width=1, dash="dash")),
    "exit": ("call outputs", dict(color=CALL_OUTLINE, width=1, dash="dash")),
}
GROUP_TRACE = "groups (click to open)"
OPENED_TRACE = "opened groups (click ▾ to close)"
GROUP_FILL = "#F2F2F2"
GROUP_OUTLINE = "#595959"
TENSOR_TRACES = {"variable": "variables", "constant": "constants", "input": "graph inputs",
                 "intermediate": "intermediates"}


def picture_layout(picture: DataflowPicture, width: int = PICTURE_WIDTH) -> Layout:
    """The layered layout of a picture's nodes and edges, with no node inside a box it is not drawn in;
    without boxes, layers too wide for their labels at ``width`` pixels are folded into more rows."""
    edges = [(tail, head) for tail, head, _ in picture.edges]
    below = _below_their_calls(picture, edges)
    grouped = any(box.key for box in picture.boxes)  # groups open: layered frame by frame, else late (see layered)
    given = nested_layers(picture, edges) if grouped else None
    layout = layered_layout(list(picture.nodes), edges + below, late=grouped, given=given,
                            groups=[box.members for box in picture.boxes],
                            widths=_cell_columns(picture))
    for edge in set(below) - set(edges):
        layout.bends.pop(edge, None)
    if picture.boxes:
        return pack_frames(layout, picture, width)
    fold_wide_layers(layout, picture, width)
    return layout


def _cell_columns(picture: DataflowPicture) -> dict[Hashable, float]:
    """The columns each node of a picture with frames takes in its row with its whole label, as the packing sets
    it out (``picture_packing``): where the layout orders nodes, it can tell which edges will cross."""
    return {key: (2 * HALF + 2 * LABEL_GAP + 3 + len(node.caption) * CHAR_WIDTH) / COLUMN
            for key, node in picture.nodes.items()} if picture.boxes else {}


def _below_their_calls(picture: DataflowPicture, edges: list) -> list[tuple[str, str]]:
    """Edges that only place the ops of an expanded body that read nothing made in it (an op of constants
    alone, a body's first ops) below the call site: they would go to the top layer, pulling the body's frame
    up over the caller's ops."""
    fed = {head for tail, head in edges}
    below = []
    for box in picture.boxes:
        if box.key or not box.frame:
            continue
        call = node_key(box.frame[:-1], box.frame[-1][0])
        below += [(call, key) for key in box.members if key not in fed and call in picture.nodes]
    return below


def graph_figure(picture: DataflowPicture, layout: Optional[Layout] = None, highlight: Iterable[str] = (),
                 selected: Iterable[str] = (), breakpoints: Iterable[str] = (),
                 width: int = PICTURE_WIDTH) -> go.Figure:
    """Nodes carry their picture key in ``customdata``; ``highlight`` keys (search matches) get a
    ring, ``selected`` keys a filled red marker, ``breakpoints`` keys a red dot on their left. Node
    sizes and label cuts fit a figure ``width`` pixels wide."""
    layout = layout or picture_layout(picture)
    position = layout.positions
    figure = go.Figure(layout=dict(template=TEMPLATE))
    for kind, (name, line) in EDGE_STYLES.items():
        edges = [(tail, head) for tail, head, edge_kind in picture.edges if edge_kind == kind]
        if edges:
            figure.add_trace(_edge_trace(edges, layout, name, line))
    plan = frame_plan(picture, layout, width)
    sizes, rooms = plan.sizes, plan.places
    figure.add_trace(_arrow_trace(picture, layout, sizes))
    ops = [node for node in picture.nodes.values() if node.kind == "op" and node.category == "op"]
    calls = [node for node in picture.nodes.values() if node.kind == "op" and node.category == "call"]
    groups = [node for node in picture.nodes.values() if node.kind == "group"]
    if groups:
        figure.add_trace(_node_trace(groups, position, GROUP_TRACE, "square", sizes.call + 4, GROUP_FILL,
                                     GROUP_OUTLINE, rooms))
    if ops:
        figure.add_trace(_node_trace(ops, position, "ops", "square", sizes.op, _ipu_colors(ops), OP_OUTLINE,
                                     rooms))
    if calls:
        figure.add_trace(_node_trace(calls, position, "call sites (click to expand)", "diamond",
                                     sizes.call, _ipu_colors(calls), CALL_OUTLINE, rooms))
    for category, name in TENSOR_TRACES.items():
        tensors = [node for node in picture.nodes.values() if node.kind == "tensor" and node.category == category]
        if tensors:
            outline = ["#262626" if n.is_graph_output else "white" for n in tensors]
            figure.add_trace(_node_trace(tensors, position, name, "circle", sizes.tensor,
                                         KIND_COLORS[category], outline, rooms, text_color="#595959"))
    for keys, name, marker in (
            (highlight, "search matches", dict(symbol="circle-open", size=sizes.op + 8, color=HIGHLIGHT,
                                               line=dict(width=3, color=HIGHLIGHT))),
            (selected, "selected", dict(symbol="square", size=sizes.op + 4, color=HIGHLIGHT))):
        keys = [key for key in keys if key in position]
        if keys:
            figure.add_trace(go.Scatter(x=[position[k][0] for k in keys], y=[position[k][1] for k in keys],
                                        mode="markers", name=name, marker=marker, customdata=keys,
                                        hovertext=[picture.nodes[k].hover for k in keys], hoverinfo="text"))
    stops = [key for key in breakpoints if key in position]
    if stops:
        left = (sizes.op / 2 + 6) / sizes.column  # columns from a node's centre to its dot
        figure.add_trace(go.Scatter(x=[position[k][0] - left for k in stops], y=[position[k][1] for k in stops],
                                    mode="markers", name="breakpoints", customdata=stops,
                                    marker=dict(symbol="circle", size=8, color=HIGHLIGHT),
                                    hovertext=[picture.nodes[k].hover for k in stops], hoverinfo="text"))
    _add_boxes(figure, plan)
    figure.update_layout(**_figure_layout(picture, layout, any(room for room, _ in rooms.values())))
    return figure


def _ipu_colors(nodes):
    """One colour when every node is on one IPU (plotly checks a colour list item by item)."""
    colors = [ipu_color(n.ipu) for n in nodes]
    return colors[0] if len(set(colors)) == 1 else colors


def edge_path(layout: Layout, tail, head) -> list[tuple[float, float]]:
    """The polyline drawn for an edge: between each two layers it leaves its upper point straight
    down, crosses the gap between the layers, and enters its lower point straight from above, so
    it meets the layers (where nodes and labels are) only at its own points."""
    route = layout.route(tail, head)
    path = [route[0]]
    for (x0, y0), (x1, y1) in zip(route, route[1:]):
        path += [(x0, y0 - STUB), (x1, y1 + STUB), (x1, y1)]
    return path


def _edge_trace(edges, layout: Layout, name: str, line: dict) -> go.Scatter:
    """All edges of one kind as one line trace, the edges' paths separated by gaps (NaN)."""
    points = []
    for tail, head in edges:
        points += edge_path(layout, tail, head)
        points.append((np.nan, np.nan))
    xy = np.array(points, dtype=float)
    return go.Scatter(x=xy[:, 0], y=xy[:, 1], mode="lines", name=name, line=line, hoverinfo="skip")


def _marker_size(node, sizes: Sizes) -> int:
    """Pixels of the marker drawn for ``node``, as ``graph_figure`` draws each kind."""
    if node.kind == "group":
        return sizes.call + 4
    if node.kind == "tensor":
        return sizes.tensor
    return sizes.call if node.category == "call" else sizes.op


def _arrow_trace(picture: DataflowPicture, layout: Layout, sizes: Sizes) -> go.Scatter:
    """An arrowhead on each edge where it enters its head node: one marker trace for all edges, each head a
    triangle pointing along the edge's last segment and moved back from the node's centre to its outline
    (``standoff``, in pixels, so it touches the node at any zoom)."""
    xs: list[float] = []
    ys: list[float] = []
    sizes_px: list[int] = []
    standoffs: list[float] = []
    colors: list[str] = []
    for tail, head, kind in dict.fromkeys(picture.edges):
        if tail not in layout.positions or head not in layout.positions:
            continue
        (x0, y0), (x1, y1) = edge_path(layout, tail, head)[-2:]
        xs += [x0, x1]  # an unseen marker where the last segment starts, then the head: it points along the segment
        ys += [y0, y1]
        sizes_px += [0, ARROW_SIZE]
        standoffs += [0, _marker_size(picture.nodes[head], sizes) / 2 + 1]
        colors += [EDGE_STYLES[kind][1]["color"]] * 2
    return go.Scatter(x=np.array(xs, dtype=float), y=np.array(ys, dtype=float), mode="markers", name=ARROW_TRACE,
                      showlegend=False, hoverinfo="skip",
                      marker=dict(symbol="triangle-up", angleref="previous", size=np.array(sizes_px),
                                  standoff=np.array(standoffs), line=dict(width=0),
                                  color=colors[0] if len(set(colors)) == 1 else text_array(colors)))


def _node_trace(nodes, position, name: str, symbol: str, size: int, color, outline, places: dict,
                text_color: str = "#262626") -> go.Scatter:
    """One kind of node as one marker trace, each labelled on the side ``places`` gives it."""
    xy = np.array([position[n.key] for n in nodes], dtype=float)
    sides = [places[n.key][1] for n in nodes]
    return go.Scatter(
        x=xy[:, 0], y=xy[:, 1], mode="markers+text" if any(places[n.key][0] for n in nodes) else "markers",
        name=name,
        text=text_array(label_markup(drawn_label(n, places[n.key][0])) if places[n.key][0] else "" for n in nodes),
        textposition="middle right" if "left" not in sides else text_array(f"middle {side}" for side in sides),
        textfont=dict(size=10, color=text_color),
        marker=dict(symbol=symbol, size=size, color=color if isinstance(color, str) else text_array(color),
                    line=dict(width=1.5, color=outline if isinstance(outline, str) else text_array(outline))),
        customdata=text_array(n.key for n in nodes), hovertext=text_array(n.hover for n in nodes), hoverinfo="text")


def _add_boxes(figure: go.Figure, plan: FramePlan) -> None:
    """Each frame as a dashed rectangle with its title above its top left corner, all set at once (plotly checks
    each shape added on its own, a second for 44 frames)."""
    titles, shapes, notes = [], [], []
    for box, (x0, x1, y0, y1) in plan.frames:
        color = GROUP_OUTLINE if box.key else CALL_OUTLINE
        shapes.append(dict(type="rect", x0=x0, x1=x1, y0=y0, y1=y1, layer="below", line=dict(color=color, width=1, dash="dash"),
                           fillcolor="rgba(242,242,242,0.35)" if box.key else "rgba(252,229,205,0.25)"))
        notes.append(dict(x=x0, y=y1, text=text(box.label), showarrow=False, xanchor="left", yanchor="bottom",
                          font=dict(size=10, color=color)))
        if box.key:
            titles.append((x0, y1, box))
    if shapes:
        figure.update_layout(shapes=shapes, annotations=notes)
    if titles:  # a marker on each opened group's title: clicking it closes the group
        figure.add_trace(go.Scatter(
            x=[x for x, _, _ in titles], y=[y for _, y, _ in titles], mode="markers", name=OPENED_TRACE,
            marker=dict(symbol="triangle-down", size=10, color=GROUP_OUTLINE), customdata=[b.key for _, _, b in titles],
            hovertext=text_array(f"{text(b.label)}: click to close" for _, _, b in titles), hoverinfo="text"))


def _figure_layout(picture: DataflowPicture, layout: Layout, labelled: bool) -> dict:
    tensors = len(picture.graph.device_tensors)
    title = f"{text(picture.graph.label)}: {count_of(len(picture.graph.ops), 'op')}, {count_of(tensors, 'tensor')}"
    notes = []
    if any(node.kind == "group" for node in picture.nodes.values()) or picture.homes:
        notes.append("grouped by name scope: click a group to open it")
    if picture.detail == "ops":
        notes.append("ops only: tensors are listed in the hover")
    shown = min(layout.depth, VISIBLE_LAYERS)
    left = layout.left - 0.5
    yaxis = dict(visible=False, range=[-(shown - 0.5), 0.5])
    if layout.depth > VISIBLE_LAYERS:
        notes.append(f"top {VISIBLE_LAYERS} of {layout.depth} layers: drag to pan, double-click for all")
    if not labelled:
        notes.append("names in the hover")
    if notes:
        title += f"<br><sup>{'; '.join(notes)}</sup>"
    return base_layout(title=dict(text=title, x=0.01), showlegend=True,
                       legend=dict(orientation="h", yanchor="top", y=-0.01, x=0.0, xanchor="left"),
                       xaxis=dict(visible=False, range=[left, left + layout.width + 0.5]), yaxis=yaxis, dragmode="pan",
                       height=max(layer_pixels(picture) * shown + 130, 300),
                       margin=dict(l=MARGIN, r=MARGIN, t=60, b=70))
