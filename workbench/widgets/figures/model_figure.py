"""The grouped model picture as a plotly figure: exactly the boxes, frames and edges that
``workbench.export.compose`` places (the extension composes the same ones), one pixel of the picture per
pixel of the figure."""
from __future__ import annotations

from typing import Collection, Optional, Sequence

import plotly.graph_objects as go

from workbench.export.compose import HEADER, LINE_HEIGHT, PAD_X, PAD_Y, Scene

from .legend import LEGEND_ROW, legend_rows
from ..style import (CALL_OUTLINE, EDGE_COLOR, OP_OUTLINE, PICTURE_WIDTH, TEMPLATE, base_layout, ipu_color, text,
                     text_array)

GROUP_FILL = "#F2F2F2"
FRAME_FILL = "rgba(250,250,250,0.6)"
FRAME_OUTLINE = "#8C8C8C"
SELECTED = "#C00000"
TITLE_SPACE = 40
LEGEND_SPACE = 40  # pixels under the plot: at least this, and a row of the legend's entries each
MIN_HEIGHT = 120
MAX_HEIGHT = 900  # taller pictures open at their top (or around the op in view); drag to pan
ARROW_SIZE = 9
# What every box's rectangle and label share, said once in the figure's template instead of on each.
SHAPE = dict(type="rect", layer="below", line=dict(color=OP_OUTLINE, width=1.5))
ANNOTATION = dict(showarrow=False, xanchor="left", yanchor="middle", align="left",
                  font=dict(size=11, family="monospace", color="#262626"))


def model_figure(scene: Scene, title: str, selected: str = "", width: int = PICTURE_WIDTH,
                 focus: Optional[str] = None, max_height: int = MAX_HEIGHT, ipus: Sequence[int] = (0,),
                 kinds: Collection[str] = ("op", "call", "group", "frame")) -> go.Figure:
    """``scene`` is a composed group picture; boxes carry their key in ``customdata``; the box whose key
    is ``selected`` gets a red outline; the view opens around box ``focus`` when the picture is larger
    than the figure. The legend names the boxes of ``kinds`` (ops for each of ``ipus``) whether or not
    this picture holds any, so that every picture of a graph has the same traces: a step that moves the
    selection within a picture changes one trace and the axes, and crosses the comm as that patch."""
    boxes = scene.boxes
    template = dict(TEMPLATE, layout=dict(TEMPLATE["layout"], annotationdefaults=ANNOTATION, shapedefaults=SHAPE))
    figure = go.Figure(layout=dict(template=template))
    shapes, annotations = [], []
    for box in boxes:
        left, top = box["x"] - box["w"] / 2, box["y"]
        frame = box.get("expanded", False)
        shape = dict(x0=left, x1=left + box["w"], y0=top, y1=top + box["h"],
                     fillcolor=FRAME_FILL if frame else GROUP_FILL if box["kind"] == "group" else ipu_color(box["ipu"]))
        if frame or box["kind"] != "op":
            shape["line"] = dict(color=FRAME_OUTLINE if frame else CALL_OUTLINE, width=2.5 if box["kind"] == "call" else 1.5,
                                 dash="dash" if box["kind"] == "group" else "solid")
        shapes.append(shape)
        if frame:
            annotations.append(dict(x=left + PAD_X, y=top + HEADER / 2, text=f"<b>{text(box['lines'][0])}</b>",
                                    bgcolor="#FFFFFF"))
            continue
        lines = [f"<b>{text(box['lines'][0])}</b>"] + [f"<span style='color:#595959'>{text(line)}</span>"
                                                        for line in box["lines"][1:]]
        annotations.append(dict(x=left + PAD_X, y=top + PAD_Y + LINE_HEIGHT * len(lines) / 2, text="<br>".join(lines)))
    xs, ys, tips_x, tips_y, tips_size = [], [], [], [], []
    for edge in scene.edges:
        for x, y in edge["points"]:
            xs.append(x)
            ys.append(y)
        xs.append(None)
        ys.append(None)
        if edge["arrow"]:
            (x0, y0), (x1, y1) = edge["points"][-2], edge["points"][-1]
            tips_x += [x0, x1, None]
            tips_y += [y0, y1, None]
            tips_size += [0, ARROW_SIZE, 0]
    figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=EDGE_COLOR, width=1.3),
                                name="→ tensor (hover its middle: shape)", hoverinfo="skip"))
    figure.add_trace(go.Scatter(x=tips_x, y=tips_y, mode="markers", showlegend=False, hoverinfo="skip",
                                name="arrowheads", marker=dict(symbol="triangle-up", angleref="previous",
                                                               size=tips_size, color=EDGE_COLOR, line=dict(width=0))))
    middles = [_middle(edge["points"]) for edge in scene.edges]
    figure.add_trace(go.Scatter(x=[m[0] for m in middles], y=[m[1] for m in middles], mode="markers",
                                marker=dict(size=9, color="rgba(0,0,0,0)"), showlegend=False,
                                hovertext=text_array(text(edge["label"]) for edge in scene.edges),
                                hoverinfo="text", name="tensors"))
    chosen = next((box for box in boxes if box["key"] == selected), None)
    outline = [] if chosen is None else _outline(chosen)
    figure.add_trace(go.Scatter(x=[x for x, _ in outline], y=[y for _, y in outline], mode="lines",
                                line=dict(color=SELECTED, width=3), name="selected op", hoverinfo="skip",
                                showlegend=chosen is not None))
    _legend_and_hits(figure, boxes, ipus, kinds)
    # every entry counted, the selected op's too when none is: a step that selects one keeps the figure's height
    entries = [t.name for t in figure.data if t.name and (t.showlegend is not False or t.name == "selected op")]
    # the legend's rows under the plot (the stepper's 560-px picture takes six), and the gap above them: too
    # small a margin and plotly pushes the plot up, squashing its boxes under their text
    legend_space = max(LEGEND_SPACE, LEGEND_ROW * legend_rows(entries, plot_area(width)) + 16)
    plot_width = plot_area(width)
    plot_height = max(min(scene.height, max_height), MIN_HEIGHT)
    x_range, y_range = _view(scene, boxes, focus, plot_width, plot_height)
    notes = [] if scene.height <= plot_height and scene.width <= plot_width else ["drag to pan"]
    figure.update_layout(**base_layout(
        title=dict(text="<br>".join(part for part in (text(title), f"<sup>{'; '.join(notes)}</sup>" if notes else "")
                                    if part), x=0.01),
        shapes=shapes, annotations=annotations, showlegend=True,
        legend=dict(orientation="h", yanchor="top", y=-0.02, x=0.0, xanchor="left", itemclick=False),
        xaxis=dict(visible=False, range=x_range), yaxis=dict(visible=False, range=y_range),
        width=width, height=plot_height + TITLE_SPACE + legend_space,
        margin=dict(l=20, r=20, t=TITLE_SPACE, b=legend_space), dragmode="pan"))
    figure.layout.template = template
    return figure


def plot_area(width: int) -> int:
    """Pixels of the plot area of a figure ``width`` wide: one per pixel of the picture."""
    return width - 40


def _outline(box: dict) -> list[tuple[float, float]]:
    left, right, top, bottom = box["x"] - box["w"] / 2, box["x"] + box["w"] / 2, box["y"], box["y"] + box["h"]
    return [(left, top), (right, top), (right, bottom), (left, bottom), (left, top)]


def _legend_and_hits(figure: go.Figure, boxes: list[dict], ipus: Sequence[int], kinds: Collection[str]) -> None:
    """A legend swatch per kind of box in ``kinds`` (and per IPU for ops), and an invisible marker per box
    that carries its key for clicks and its lines for hover."""
    legend = (("op", "op: type, attribute, weights ⟨shape⟩"), ("call", "call: click opens its graph"),
              ("group", "▸ group: click to expand in place"), ("frame", "▾ expanded group: click its title to close"))
    for kind, name in legend:
        if kind not in kinds:
            continue
        for ipu in ipus if kind == "op" else [None]:
            fill = GROUP_FILL if kind == "group" else FRAME_FILL if kind == "frame" else ipu_color(ipu or 0)
            figure.add_trace(go.Scatter(  # the legend's swatch, drawn nowhere
                x=[None], y=[None], mode="markers", hoverinfo="skip",
                name=f"{name} (IPU {ipu})" if ipu is not None else name,
                marker=dict(symbol="square", size=12, color=fill,
                            line=dict(width=2, color=OP_OUTLINE if kind == "op" else
                                      FRAME_OUTLINE if kind == "frame" else CALL_OUTLINE))))
    for kind in ("op", "call", "group"):
        members = [box for box in boxes if box["kind"] == kind]
        ys = [box["y"] + (HEADER / 2 if box.get("expanded") else box["h"] / 2) for box in members]
        figure.add_trace(go.Scatter(
            x=[box["x"] for box in members], y=ys, mode="markers", name=f"{kind} boxes", showlegend=False,
            marker=dict(symbol="square", size=[max(8, min(box["h"], 40)) for box in members],
                        color="rgba(0,0,0,0)", line=dict(width=0)),
            customdata=text_array(box["key"] for box in members),
            hovertext=text_array("<br>".join(text(line) for line in box["lines"]) for box in members),
            hoverinfo="text"))


def _view(scene: Scene, boxes: list[dict], focus: Optional[str], plot_width: float, plot_height: float):
    """Axis ranges: the whole picture where it fits, else a window at its top left or around ``focus``."""
    x0 = y0 = 0.0
    target = next((box for box in boxes if box["key"] == focus), None)
    if target is not None:
        x0 = min(max(target["x"] - plot_width / 2, 0.0), max(scene.width - plot_width, 0.0))
        y0 = min(max(target["y"] + target["h"] / 2 - plot_height / 2, 0.0), max(scene.height - plot_height, 0.0))
    return [x0, x0 + plot_width], [y0 + plot_height, y0]


def _middle(points: list) -> tuple[float, float]:
    (x0, y0), (x1, y1) = points[len(points) // 2 - 1] if len(points) > 2 else points[0], points[len(points) // 2]
    return (x0 + x1) / 2, (y0 + y1) / 2
