"""ModelView draws, in the notebook, the very pictures the extension draws (the export's grouped section):
one box per picture box with its lines, one arrow per edge; clicking a group opens it, the breadcrumb
goes back, a call opens the graph it calls, and an op click selects the op."""
import pytest

from real_programs import resnet50_session, transformer
from widget_programs import click
from workbench.export.group_layout import grouped_graph
from workbench.widgets import ModelView, Selection


@pytest.fixture(scope="module")
def resnet():
    return resnet50_session()._workbench_source()


def test_the_figure_is_the_exported_picture(resnet):
    view = ModelView(resnet, live=False)
    picture = grouped_graph(resnet.main_graph)["groups"][0]
    assert view.picture == picture
    layout = view.figure.layout
    boxes = [shape for shape in layout.shapes if shape.type == "rect"]
    assert [(s.x0, s.y0, s.x1 - s.x0, s.y1 - s.y0) for s in boxes] == \
        [(n["x"] - n["w"] / 2, n["y"], n["w"], n["h"]) for n in picture["nodes"]]
    texts = [a.text for a in layout.annotations if not a.showarrow]
    assert "<b>conv 7×7 /2</b>" in texts[[n["lines"][0] for n in picture["nodes"]].index("conv 7×7 /2")]
    arrows = [a for a in layout.annotations if a.showarrow]
    assert [(a.x, a.y) for a in arrows] == [tuple(e["points"][-1]) for e in picture["edges"]]
    assert layout.xaxis.range == (0, 920) and layout.yaxis.range[1] == 0  # a pixel of the picture per pixel
    legend = [trace.name for trace in view.figure.data if trace.showlegend is not False]
    assert legend[0].startswith("→ tensor") and "op: type, attribute, weights ⟨shape⟩ (IPU 0)" in legend
    assert "▸ group: click to open" in legend


def test_clicking_a_group_opens_it_and_the_breadcrumb_goes_back(resnet):
    view = ModelView(resnet, live=False)
    widget = view.widget
    res2 = next(n["key"] for n in view.picture["nodes"] if n["lines"][0] == "▸ res2")
    click(view._canvas, "group boxes", res2)
    assert view.shown == res2 and [p["label"] for p in view.path()] == ["main", "res2"]
    assert view.figure.layout.title.text.startswith("main (181 ops) › res2 (32 ops)")
    crumbs = view._crumbs.children
    assert [c.description for c in crumbs] == ["main (181 ops)"]
    crumbs[0].click()
    assert view.shown == "main_graph" and widget is view.widget
    with pytest.raises(ValueError, match="has no group 'nowhere'"):
        view.open("nowhere")


def test_a_call_opens_the_graph_it_calls_and_an_op_click_selects_it():
    ir, _ = transformer(layers=2)
    selection = Selection()
    view = ModelView(ir, selection=selection, live=False)
    view.widget
    call = next(op for op in ir.main_graph.ops if op.type == "call")
    click(view._canvas, "call boxes", call.id)
    assert view.graph is call.called_graphs[0] and view.shown == call.called_graphs[0].id
    assert [n["lines"][0] for n in view.picture["nodes"]] == ["▸ IPU 0", "▸ IPU 1"]
    view.open(view.picture["nodes"][0]["key"])
    layer = next(n["key"] for n in view.picture["nodes"] if n["kind"] == "group")
    view.open(layer)
    view.open(view.picture["nodes"][0]["key"])  # attention
    op_box = next(n for n in view.picture["nodes"] if n["kind"] == "op")
    click(view._canvas, "op boxes", op_box["key"])
    assert selection.op.id == op_box["key"]
    selected = [s for s in view.figure.layout.shapes if s.line.color == "#C00000"]
    assert len(selected) == 1
