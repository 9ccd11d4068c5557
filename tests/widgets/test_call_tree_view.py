"""CallTreeView: graphs as nodes with op counts, call sites as labelled edges, clicks that open graphs."""
import numpy as np

import popxl
from widget_programs import call_tree_program, click, trace
from workbench.analysis import call_tree
from workbench.widgets import CallTreeView, GraphView, Selection
from workbench.widgets.figures import call_tree_figure
from workbench.widgets.figures.call_tree_figure import NODE_COLORS


def annotation_texts(figure, name):
    return [a.text for a in figure.layout.annotations if a.name == name]


def test_the_program_drawn_runs_as_its_call_tree_says():
    ir, graphs = call_tree_program(repeat_count=5)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    np.testing.assert_array_equal(outputs[graphs["z"]], np.full(2, 1.0 + 5 + 1, np.float32))


def test_every_graph_is_a_node_labelled_with_its_op_count_and_runs():
    ir, graphs = call_tree_program(repeat_count=5)
    figure = call_tree_figure(call_tree(ir))
    nodes = trace(figure, "graphs")
    assert list(nodes.customdata) == [graph.id for graph in ir.graphs]
    labels = annotation_texts(figure, "graph")
    assert labels[0] == f"<b>main</b><br>{len(ir.main_graph.ops)} ops · runs ×1"
    g_label = labels[list(ir.graphs).index(graphs["g"])]
    assert g_label == f"<b>{graphs['g'].label}</b><br>1 op · runs ×6"  # 5 in the loop, 1 in the branch


def test_call_sites_are_edges_labelled_call_repeat_and_branch():
    ir, graphs = call_tree_program(repeat_count=5)
    figure = call_tree_figure(call_tree(ir))
    assert sorted(annotation_texts(figure, "call site")) == ["branch (else)", "branch (then)", "call", "call",
                                                              "repeat ×5"]
    assert [t.name for t in figure.data if t.mode == "lines"] == ["call", "repeat", "branch"]
    # one line segment (3 points with the None separator) per caller-callee pair
    assert len(trace(figure, "repeat").x) == 3
    assert len(trace(figure, "branch").x) == 6
    assert len(trace(figure, "call").x) == 6


def test_node_colours_say_main_runs_branch_only_and_never_runs():
    ir, graphs = call_tree_program()
    figure = call_tree_figure(call_tree(ir))
    colour = dict(zip(trace(figure, "graphs").customdata, trace(figure, "graphs").marker.color))
    assert colour[ir.main_graph.id] == NODE_COLORS["main"]
    assert colour[graphs["body"].id] == NODE_COLORS["runs"]
    assert colour[graphs["then"].id] == NODE_COLORS["branch"]
    assert colour[graphs["unused"].id] == NODE_COLORS["unused"]


def test_callees_are_drawn_below_their_callers():
    ir, graphs = call_tree_program()
    figure = call_tree_figure(call_tree(ir))
    nodes = trace(figure, "graphs")
    height = dict(zip(nodes.customdata, nodes.y))
    for edge in call_tree(ir).edges:
        assert height[edge.caller.id] > height[edge.callee.id]


def test_clicking_a_graph_selects_it_and_a_graph_view_sharing_the_selection_follows():
    ir, graphs = call_tree_program()
    selection = Selection()
    tree = CallTreeView(ir, selection=selection, live=False)
    graph_view = GraphView(ir, selection=selection, live=False)
    assert graph_view.graph is ir.main_graph
    click(tree.widget.children[-1], "graphs", graphs["body"].id)
    assert selection.graph is graphs["body"]
    assert graph_view.graph is graphs["body"]
    assert graph_view.picture.op_count == len(graphs["body"].ops)
    assert list(trace(tree.figure, "selected").customdata) == [graphs["body"].id]


def test_without_a_graph_view_the_first_click_opens_one_under_the_tree():
    ir, graphs = call_tree_program()
    tree = CallTreeView(ir, live=False)
    children = len(tree.widget.children)
    click(tree.widget.children[-1], "graphs", graphs["g"].id)
    assert len(tree.widget.children) == children + 1
    assert tree.graph_view.graph is graphs["g"]
    click(tree.widget.children[0], "graphs", graphs["other"].id)
    assert len(tree.widget.children) == children + 1 and tree.graph_view.graph is graphs["other"]


def test_outside_a_kernel_the_view_renders_as_a_static_plotly_figure_and_html():
    ir, _ = call_tree_program()
    bundle, metadata = CallTreeView(ir, live=False)._repr_mimebundle_()
    assert bundle["application/vnd.plotly.v1+json"]["data"] and metadata == {}
    assert "plotly" in bundle["text/html"]
    assert bundle["text/plain"] == f"CallTreeView({ir!r}: 6 graphs, 5 call sites)"


def test_counts_say_one_graph_and_several_call_sites():
    ir = popxl.Ir()
    tree = CallTreeView(ir, live=False)
    assert repr(tree) == f"CallTreeView({ir!r}: 1 graph, 0 call sites)"
    assert tree.figure.layout.title.text == "Call tree: 1 graph, 0 call sites"
