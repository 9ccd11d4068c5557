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
    assert tree.figure.layout.title.text == "Call tree: 1 graph, no subgraph calls"


class Module:
    """A small stand-in for a layer library's module: an instance is the function ``ir.create_graph``
    builds (so the graph takes the class's name), and a shared cache reuses the graph built for the
    same input specs, as a graph cache does."""

    cache: dict = {}

    def graph(self, *specs):
        key = (type(self).__qualname__, tuple((tuple(s.shape), s.dtype) for s in specs))
        if key not in self.cache:
            self.cache[key] = popxl.gir().create_graph(self, *specs)
        graph = self.cache[key]
        # as a layer library finds a graph again: through the IR's own list of graphs
        assert any(pb.id == graph._pb_graph.id for pb in popxl.gir()._pb_ir.getAllGraphs())
        return graph


class Linear(Module):
    def __call__(self, x: popxl.Tensor, w: popxl.Tensor) -> popxl.Tensor:
        return x @ w


class Sgd(Module):
    def __call__(self, w: popxl.TensorByRef, g: popxl.Tensor):
        popxl.ops.scaled_add_(w, g, b=-0.1)


def module_program():
    """Two linear layers of one shape share one graph; the optimiser module's graph is built once per
    weight shape and called once per weight."""
    import popxl.ops as ops

    Module.cache = {}
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((2, 4), np.float32), name="x")
        weights = [popxl.variable(np.ones((4, 4), np.float32), name=f"fc{n}.w") for n in range(2)]
        head = popxl.variable(np.ones((4, 2), np.float32), name="head.w")
        for w in weights + [head]:
            (x,) = ops.call(Linear().graph(x.spec, w.spec), x, w)
        for w in weights + [head]:
            ops.call(Sgd().graph(w.spec, w.spec), w, popxl.constant(np.ones(w.shape, np.float32)))
    return ir, weights + [head]


def test_module_graphs_take_the_modules_names_and_a_cached_graph_is_one_node_with_its_call_sites_counted():
    ir, weights = module_program()
    tree = call_tree(ir)
    assert [(n.label, n.runs_per_session_run) for n in tree.nodes] == [
        ("main", 1), ("Linear", 2), ("Linear_1", 1), ("Sgd", 2), ("Sgd_1", 1)]
    figure = call_tree_figure(tree)
    assert sorted(annotation_texts(figure, "call site")) == ["call", "call", "call (2 sites)", "call (2 sites)"]
    hovers = dict(zip(trace(figure, "graphs").customdata, trace(figure, "graphs").hovertext))
    assert "takes float32[4, 4], float32[4, 4]" in hovers["Sgd"] and "takes float32[4, 2]" in hovers["Sgd_1"]
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        # every weight had the update of its own call: ones less 0.1
        for w in weights:
            np.testing.assert_allclose(session.get_tensor_data(w), np.full(w.shape, 0.9), rtol=1e-6)


def pipelined_program():
    """Two stages on IPUs 0 and 1, called from a graph that a repeat runs 3 times, as a pipeline is."""
    import popxl.ops as ops

    ir = popxl.Ir()
    with ir.main_graph:
        w0 = popxl.variable(np.ones(4, np.float32), name="w0")
        with popxl.ipu(1):
            w1 = popxl.variable(np.full(4, 2.0, np.float32), name="w1")

        def stage_0(x: popxl.Tensor):
            return x * 3.0

        def stage_1(x: popxl.Tensor):
            return x + 1.0

        def step(a: popxl.Tensor, b: popxl.Tensor):
            with popxl.ipu(0):
                (y,) = ops.call(first, a)
            y = ops.ipu_copy(y, 1)
            with popxl.ipu(1):
                (z,) = ops.call(second, y)
            return z

        first = ir.create_graph(stage_0, w0)
        with popxl.ipu(1):
            second = ir.create_graph(stage_1, w1)
        body = ir.create_graph(step, w0, w1)
        ops.repeat(body, 3, w0, w1)
    return ir, first, second, body


def test_each_graph_names_the_ipus_it_runs_on_so_pipeline_stages_show():
    ir, first, second, body = pipelined_program()
    tree = call_tree(ir)
    assert {n.graph: n.ipus for n in tree.nodes} == {ir.main_graph: (0, 1), first: (0,), second: (1,), body: (0, 1)}
    labels = dict(zip(trace(call_tree_figure(tree), "graphs").customdata,
                      annotation_texts(call_tree_figure(tree), "graph")))
    assert labels[first.id].endswith("<br>IPU 0") and labels[second.id].endswith("<br>IPU 1")
    assert labels[body.id].endswith("<br>IPUs 0, 1")
    one_ipu, _ = call_tree_program()
    assert not any("IPU" in label for label in annotation_texts(call_tree_figure(call_tree(one_ipu)), "graph"))


def fan_out(children: int):
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        for n in range(children):
            popxl.ops.call(ir.create_graph(lambda t: t + n, x), x)
    return ir


def test_a_wide_tree_widens_its_picture_and_a_wider_one_opens_around_the_main_graph():
    from workbench.widgets.figures.call_tree_figure import WIDEST_PICTURE
    from workbench.widgets.style import PICTURE_WIDTH

    small = call_tree_figure(call_tree(fan_out(3)))
    assert small.layout.width is None and not small.layout.title.text.endswith("drag to pan")
    seven = call_tree_figure(call_tree(fan_out(7)))  # 7 columns: every graph in the picture, wider than usual
    nodes = trace(seven, "graphs")
    low, high = seven.layout.xaxis.range
    assert PICTURE_WIDTH < seven.layout.width <= WIDEST_PICTURE and all(low < x < high for x in nodes.x)
    wide = call_tree_figure(call_tree(fan_out(30)))
    low, high = wide.layout.xaxis.range
    main_x = trace(wide, "graphs").x[0]
    assert wide.layout.width == WIDEST_PICTURE and wide.layout.dragmode == "pan"
    assert wide.layout.title.text.endswith("· drag to pan") and low < main_x < high
    assert abs((low + high) / 2 - main_x) < 1e-6  # centred on the main graph


def test_long_graph_names_are_cut_in_the_middle_so_those_sharing_a_prefix_stay_apart():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        graphs = []
        for suffix in ("", "_1", "__loop_wrapper"):
            graph = ir.create_empty_graph("batch_serialise_non_overlapped.micro_graph_fn" + suffix)
            with graph:
                popxl.graph_input((2,), popxl.float32, "t")
            graphs.append(graph)
    names = [label.split("<br>")[0] for label in annotation_texts(call_tree_figure(call_tree(ir)), "graph")][1:]
    assert len(set(names)) == 3 and all(name.startswith("<b>batch") and "…" in name for name in names)
    assert names[1].endswith("_fn_1</b>") and names[2].endswith("_wrapper</b>")


def test_a_program_of_one_graph_is_a_small_card_with_its_legend_just_above_it():
    ir = popxl.Ir()
    with ir.main_graph, popxl.ipu(1):
        x = popxl.variable(np.ones(2, np.float32))
        popxl.ops.relu(x * 2)
    view = CallTreeView(ir, live=False)
    figure = view.figure
    (square,) = [t for t in figure.data if t.customdata is not None and t.name != "selected"]
    assert list(square.customdata) == [ir.main_graph.id] and square.name == "the main graph, calling no other graph"
    assert annotation_texts(figure, "graph") == ["<b>main</b><br>2 ops · runs ×1<br>IPU 1"]
    layout = figure.layout
    assert layout.width <= 480 and layout.height <= 180  # a card, not a tree's canvas
    assert (layout.legend.x, layout.legend.xanchor, layout.legend.orientation) == (0, "left", "h")
    plot_width = layout.width - layout.margin.l - layout.margin.r
    start, end = layout.xaxis.range
    assert (0 - start) / (end - start) * plot_width <= 40  # the square at the left, under the legend's start
    assert figure.layout.title.text == "Call tree: 1 graph, no subgraph calls"  # says so in a line
    view.open(ir.main_graph)
    assert any(t.name == "selected" for t in view.figure.data)  # selecting it still rings it


def test_graphs_built_but_never_called_are_said_in_a_line_under_the_title():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        ir.create_graph(lambda t: t + 1, x)
        popxl.ops.relu(x)
    figure = CallTreeView(ir, live=False).figure
    assert figure.layout.title.text == (
        "Call tree: 2 graphs, no subgraph calls<br><sup>the main graph calls none of the 1 other graph built: "
        "ops.call or ops.repeat would show the calls here</sup>")
    assert figure.layout.margin.t == 70 + 18 and figure.layout.height == 130 + 90 + 18  # one level, and the note
    called = CallTreeView(module_program()[0], live=False).figure
    assert "<sup>" not in called.layout.title.text and "call sites" in called.layout.title.text
