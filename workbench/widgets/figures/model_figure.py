"""The grouped model picture as a plotly figure: exactly the boxes and edges of one group's picture from
the JSON export's ``grouped`` section (the extension draws the same one), one pixel of the picture per
pixel of the figure."""
from __future__ import annotations

import plotly.graph_objects as go

from workbench.export.group_layout import LINE_HEIGHT, PAD_X, PAD_Y

from ..style import CALL_OUTLINE, EDGE_COLOR, OP_OUTLINE, PICTURE_WIDTH, base_layout, ipu_color, text, text_array

GROUP_FILL = "#F2F2F2"
TITLE_SPACE = 40
LEGEND_SPACE = 40
MIN_HEIGHT = 120
MAX_HEIGHT = 900  # taller pictures open at their top; drag to pan


def model_figure(picture: dict, title: str, selected: str = "", width: int = PICTURE_WIDTH) -> go.Figure:
    """``picture`` is one group of the ``grouped`` section; boxes carry their key in ``customdata``;
    the box whose key is ``selected`` gets a red outline."""
    figure = go.Figure()
    nodes = picture["nodes"]
    shapes, annotations = [], []
    for box in nodes:
        left, top = box["x"] - box["w"] / 2, box["y"]
        is_group = box["kind"] == "group"
        outline = "#C00000" if box["key"] == selected else CALL_OUTLINE if box["kind"] != "op" else OP_OUTLINE
        shapes.append(dict(type="rect", x0=left, x1=left + box["w"], y0=top, y1=top + box["h"], layer="below",
                           fillcolor=GROUP_FILL if is_group else ipu_color(box["ipu"]),
                           line=dict(color=outline, width=2.5 if box["kind"] == "call" else 1.5,
                                     dash="dash" if is_group else "solid")))
        lines = [f"<b>{text(box['lines'][0])}</b>"] + [f"<span style='color:#595959'>{text(line)}</span>"
                                                        for line in box["lines"][1:]]
        annotations.append(dict(x=left + PAD_X, y=top + PAD_Y + LINE_HEIGHT * len(lines) / 2, text="<br>".join(lines),
                                showarrow=False, xanchor="left", yanchor="middle", align="left",
                                font=dict(size=11, family="monospace", color="#262626")))
    for edge in picture["edges"]:
        points = edge["points"]
        (x0, y0), (x1, y1) = points[-2], points[-1]
        annotations.append(dict(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                                showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=1.3, arrowcolor=EDGE_COLOR,
                                standoff=1))
    xs, ys = [], []
    for edge in picture["edges"]:
        for x, y in edge["points"][:-1]:
            xs.append(x)
            ys.append(y)
        xs.append(None)
        ys.append(None)
    if xs:
        figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=EDGE_COLOR, width=1.3),
                                    name="→ tensor (hover its middle: shape)", hoverinfo="skip"))
        middles = [_middle(edge["points"]) for edge in picture["edges"]]
        figure.add_trace(go.Scatter(x=[m[0] for m in middles], y=[m[1] for m in middles], mode="markers",
                                    marker=dict(size=9, color="rgba(0,0,0,0)"), showlegend=False,
                                    hovertext=text_array(text(edge["label"]) for edge in picture["edges"]),
                                    hoverinfo="text", name="tensors"))
    for kind, name in (("op", "op: type, attribute, weights ⟨shape⟩"),
                       ("call", "call: click opens its graph"), ("group", "▸ group: click to open")):
        members = [box for box in nodes if box["kind"] == kind]
        if not members:
            continue
        for ipu in sorted({box["ipu"] for box in members}) if kind == "op" else [None]:
            figure.add_trace(go.Scatter(  # the legend's swatch, drawn nowhere
                x=[None], y=[None], mode="markers", hoverinfo="skip",
                name=f"{name} (IPU {ipu})" if ipu is not None else name,
                marker=dict(symbol="square", size=12, color=GROUP_FILL if kind == "group" else ipu_color(ipu or 0),
                            line=dict(width=2, color=OP_OUTLINE if kind == "op" else CALL_OUTLINE))))
        figure.add_trace(go.Scatter(
            x=[box["x"] for box in members], y=[box["y"] + box["h"] / 2 for box in members], mode="markers",
            name=f"{kind} boxes", showlegend=False,
            marker=dict(symbol="square", size=[max(8, min(box["h"], 40)) for box in members],
                        color="rgba(0,0,0,0)" if kind != "group" else "rgba(0,0,0,0)",
                        line=dict(width=0)),
            customdata=text_array(box["key"] for box in members),
            hovertext=text_array("<br>".join(text(line) for line in box["lines"]) for box in members),
            hoverinfo="text"))
    plot_width = width - 40  # pixels of the plot area: one per pixel of the picture
    plot_height = max(min(picture["height"], MAX_HEIGHT), MIN_HEIGHT)
    notes = [] if picture["height"] <= MAX_HEIGHT and picture["width"] <= plot_width else ["drag to pan"]
    figure.update_layout(**base_layout(
        title=dict(text=text(title) + (f"<br><sup>{'; '.join(notes)}</sup>" if notes else ""), x=0.01),
        shapes=shapes, annotations=annotations, showlegend=True,
        legend=dict(orientation="h", yanchor="top", y=-0.02, x=0.0, xanchor="left", itemclick=False),
        xaxis=dict(visible=False, range=[0, plot_width]), yaxis=dict(visible=False, range=[plot_height, 0]),
        width=width, height=plot_height + TITLE_SPACE + LEGEND_SPACE,
        margin=dict(l=20, r=20, t=TITLE_SPACE, b=LEGEND_SPACE), dragmode="pan"))
    return figure


def _middle(points: list) -> tuple[float, float]:
    (x0, y0), (x1, y1) = points[len(points) // 2 - 1] if len(points) > 2 else points[0], points[len(points) // 2]
    return (x0 + x1) / 2, (y0 + y1) / 2
