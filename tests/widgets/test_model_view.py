"""ModelView draws, in the notebook, the very pictures the extension draws (the export's grouped section):
one box per picture box with its lines, one arrow per edge; clicking a group expands it in place (and
clicking its frame's title closes it), the breadcrumb names every level and shows any of them alone, a
call opens the graph it calls, an op click selects the op, and a selected op comes into view."""
import pytest

from support.scene_geometry import check_scene

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
    assert layout.template.layout.shapedefaults.type == "rect"  # said once for every box
    scene = view.scene
    assert [box["key"] for box in scene.boxes] == [node["key"] for node in picture["nodes"]]
    boxes = layout.shapes
    assert [(s.x0, s.y0, s.x1 - s.x0, s.y1 - s.y0) for s in boxes] == \
        [(n["x"] - n["w"] / 2, n["y"], n["w"], n["h"]) for n in scene.boxes]
    texts = [a.text for a in layout.annotations]
    assert "<b>conv 7×7 /2</b>" in texts[[n["lines"][0] for n in picture["nodes"]].index("conv 7×7 /2")]
    (tips,) = [trace for trace in view.figure.data if trace.name == "arrowheads"]
    drawn = [(x, y) for x, y, size in zip(tips.x, tips.y, tips.marker.size) if size]
    assert len(scene.edges) == len(picture["edges"])
    assert drawn == [tuple(e["points"][-1]) for e in scene.edges]  # an arrowhead at every edge's head
    assert tips.marker.angleref == "previous"  # pointing along the edge's last segment
    assert layout.xaxis.range == (0, 920) and layout.yaxis.range[1] == 0  # a pixel of the picture per pixel
    legend = [trace.name for trace in view.figure.data if trace.showlegend is not False]
    assert legend[0].startswith("→ tensor") and "op: type, attribute, weights ⟨shape⟩ (IPU 0)" in legend
    assert "▸ group: click to expand in place" in legend


def test_clicking_a_group_expands_it_in_place_and_the_breadcrumb_reaches_every_level(resnet):
    view = ModelView(resnet, live=False)
    widget = view.widget
    top = [n["key"] for n in view.picture["nodes"]]
    res2 = next(n["key"] for n in view.picture["nodes"] if n["lines"][0] == "▸ res2")
    click(view._canvas, "group boxes", res2)
    assert view.shown == "main_graph" and view.expanded == {res2}
    scene = view.scene
    keys = [box["key"] for box in scene.boxes]
    assert keys[:len(top)] == top  # the other groups stay where they were, as boxes
    frame = scene.boxes[keys.index(res2)]
    assert frame["expanded"] and frame["lines"] == ["▾ res2 · 32 ops"]
    inside = [box for box in scene.boxes[len(top):]]
    assert [box["lines"][0] for box in inside] == ["▸ res2_0", "▸ res2_1", "▸ res2_2"]
    check_scene(scene)
    # the edges into and out of the frame reach the ops inside it, with arrowheads
    into = [e for e in scene.edges if e["head"] == inside[0]["key"]]
    assert into and all(e["arrow"] for e in into) and into[0]["points"][0][1] == frame["y"]
    assert any(e["tail"] == res2 and e["head"] != res2 for e in scene.edges)
    block = inside[0]["key"]
    click(view._canvas, "group boxes", block)
    assert view.expanded == {res2, block}
    check_scene(view.scene)
    assert [c.description for c in view._crumbs.children] == ["main (181 ops)", "res2 (32 ops)", "res2_0 (12 ops)"]
    assert "main (181 ops)" not in (view.figure.layout.title.text or "")  # said once, by the breadcrumb
    static = view.static_bundle()[0]["application/vnd.plotly.v1+json"]["layout"]["title"]["text"]
    assert static.startswith("main (181 ops) › res2 (32 ops) › res2_0 (12 ops)")  # no breadcrumb there
    view._crumbs.children[1].click()  # res2 alone, its block still expanded
    assert view.shown == res2 and [box["key"] for box in view.scene.boxes][:3] == [b["key"] for b in inside]
    view._crumbs.children[0].click()
    assert view.shown == "main_graph" and view.expanded == {res2, block} and widget is view.widget
    click(view._canvas, "group boxes", res2)  # the frame's title closes it, and what it holds
    assert view.expanded == set() and [box["key"] for box in view.scene.boxes] == top
    with pytest.raises(ValueError, match="has no group 'nowhere'"):
        view.expand("nowhere")


def test_an_edge_from_an_op_inside_an_expanded_group_to_a_collapsed_group_shows_with_its_arrowhead():
    ir, _ = transformer(layers=2)
    forward = next(g for g in ir.graphs if g.name.endswith("forward"))
    view = ModelView(ir, graph=forward, live=False)
    first_ipu, second_ipu = (n["key"] for n in view.picture["nodes"][:2])
    view.expand(first_ipu)
    scene = view.scene
    check_scene(scene)
    leaving = [e for e in scene.edges if e["tail"] == first_ipu and e["head"] == second_ipu]
    assert len(leaving) == 1 and leaving[0]["arrow"]
    frame = next(box for box in scene.boxes if box["key"] == first_ipu)
    assert leaving[0]["points"][0][1] == frame["y"] + frame["h"]  # it leaves from the frame's border ...
    out_port = [e for e in scene.edges if e["head"] == first_ipu and not e["arrow"]]
    assert out_port and all(e["points"][-1] == leaving[0]["points"][0] for e in out_port)  # ... where the inner ends


def test_a_selected_op_expands_the_groups_holding_it_and_comes_into_view():
    ir, _ = transformer()
    grad = next(g for g in ir.graphs if g.name.endswith("forward_grad"))
    selection = Selection(graph=grad)
    view = ModelView(ir, selection=selection, live=False, max_height=300)
    op = next(op for op in grad.ops if op.name.startswith("layer0/attention/"))
    selection.op = op
    scene = view.scene
    check_scene(scene)
    box = next(b for b in scene.boxes if b["key"] == op.id)
    x_range, y_range = view.figure.layout.xaxis.range, view.figure.layout.yaxis.range
    assert x_range[0] <= box["x"] <= x_range[1] and y_range[1] <= box["y"] <= y_range[0]
    assert scene.height > 300 and y_range[1] > 0  # the picture is taller than the view, which scrolled to it


def test_a_call_opens_the_graph_it_calls_and_an_op_click_selects_it():
    ir, _ = transformer(layers=2)
    selection = Selection()
    view = ModelView(ir, selection=selection, live=False)
    view.widget
    call = next(op for op in ir.main_graph.ops if op.type == "call")
    click(view._canvas, "call boxes", call.id)
    assert view.graph is call.called_graphs[0] and view.shown == call.called_graphs[0].id
    assert [n["lines"][0] for n in view.picture["nodes"]] == ["▸ IPU 0", "▸ IPU 1"]
    view.expand(view.picture["nodes"][0]["key"])
    layer = next(b["key"] for b in view.scene.boxes if b["kind"] == "group" and not b["expanded"])
    view.expand(layer)
    attention = next(b["key"] for b in view.scene.boxes if b["kind"] == "group" and not b["expanded"])
    view.expand(attention)
    op_box = next(b for b in view.scene.boxes if b["kind"] == "op")
    click(view._canvas, "op boxes", op_box["key"])
    assert selection.op.id == op_box["key"]
    (selected,) = [t for t in view.figure.data if t.name == "selected op"]
    box = next(b for b in view.scene.boxes if b["key"] == op_box["key"])
    assert min(selected.x) == box["x"] - box["w"] / 2 and min(selected.y) == box["y"]  # a red outline round it


def test_a_narrow_model_view_folds_a_tall_picture_only_as_far_as_its_own_width():
    """The stepper's 560-px picture of the 10,003-op program with its first group open stays within the 520 px
    of its plot area (two bands would not fit), where the notebook's 960-px view folds it into bands up to 920."""
    from real_programs import wide_program

    ir = wide_program()
    wide, narrow = ModelView(ir, live=False), ModelView(ir, width=560, live=False)
    for view in (wide, narrow):
        view.expand(next(node["key"] for node in view.picture["nodes"] if node["kind"] == "group"))
    assert 520 < wide.scene.width <= 920 and narrow.scene.width <= 520
    assert narrow.figure.layout.xaxis.range[1] - narrow.figure.layout.xaxis.range[0] == 520


def test_the_transformers_optimizer_opened_two_deep_fits_a_630_px_model_tab():
    """The optimizer's first run (8 units, an all-reduce and its update for each of 8 weights) opened inside the
    optimizer: in a 630-px Model tab the picture stays within the figure's plot area, its units in rows."""
    from real_programs import transformer
    from workbench.widgets.figures.model_figure import plot_area

    ir, _ = transformer()
    view = ModelView(ir, width=630, live=False)
    optimizer = next(node["key"] for node in view.picture["nodes"] if node["kind"] == "group")
    run = next(node["key"] for node in view.groups.picture(optimizer)["nodes"] if node["kind"] == "group")
    view.expand(run)
    assert view.expanded == {optimizer, run}
    assert view.scene.width <= plot_area(630) < view.scene.height
    units = [box for box in view.scene.boxes if box["lines"][-1].endswith("ops: replicated_all_reduce → accumulate_")]
    assert len(units) == 8 and len({box["y"] for box in units}) == 8  # one under another


def test_the_live_model_names_the_graph_once_in_its_breadcrumb_and_the_static_picture_in_its_title():
    ir = transformer()[0]
    view = ModelView(ir, live=False)
    assert view.figure.layout.title.text.startswith("main (53 ops)")  # no widget: the title says it
    view.widget
    view.fit(1280)
    assert [crumb.description for crumb in view._crumbs.children] == ["main (53 ops)"]
    assert "main (53 ops)" not in (view.figure.layout.title.text or "")
    drawn = view._canvas.figure["layout"].get("title", {}).get("text", "")  # what the page draws
    assert "main (53 ops)" not in drawn
