"""Figures that sit in a notebook tab or a report page fit it: no fixed width where the container
decides, and titles that start inside the figure instead of being centred off its edges."""
import numpy as np

import popxl
import popxl.ops as ops
from widget_programs import call_tree_program
from workbench.widgets import LivenessView, ReplicaGroupView
from workbench.widgets.figures import replica_group_figure


def collectives(count, replicas=8, scope="decoder_layer_12/attention"):
    """``count`` all-reduces over pairs of replicas, named inside ``scope``."""
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        pairs = ir.replica_grouping(stride=1, group_size=2)
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        with popxl.name_scope(scope):
            for _ in range(count):
                x = ops.collectives.replicated_all_reduce(x, group=pairs)
    return ir, pairs


def test_the_liveness_figure_takes_the_width_of_its_container():
    ir, _ = call_tree_program()
    figure = LivenessView(ir, live=False).figure
    assert figure.layout.width is None and figure.layout.autosize is not False


def test_the_replica_group_figure_takes_the_width_of_its_container_and_its_titles_start_at_the_left():
    ir, pairs = collectives(1)
    figure = ReplicaGroupView(ir, live=False).figure
    assert figure.layout.width is None
    grid_title, matrix_title = figure.layout.annotations
    assert (grid_title.x, grid_title.xanchor) == (0, "left") and (matrix_title.x, matrix_title.xanchor) == (0, "left")
    # The user on a line of its own, with the room above the grid that two lines need.
    assert grid_title.text == "4 groups (stride 1, group size 2)<br>used by decoder_layer_12/attention/replicated_all_reduce.3 of x (main)"
    assert figure.layout.margin.t == 110


def test_several_users_of_the_grid_grouping_are_counted_and_a_long_name_wraps_whole():
    ir, pairs = collectives(3)
    figure = ReplicaGroupView(ir, live=False).figure
    assert figure.layout.annotations[0].text.endswith("<br>used by 3 collectives")
    ir, pairs = collectives(1, scope="y" * 30 + "/" + "x" * 100)
    figure = ReplicaGroupView(ir, live=False).figure
    used_by = figure.layout.annotations[0].text.split("<br>")[1:]
    assert used_by == ["used by " + "y" * 30 + "/", "x" * 80, "x" * 20 + "/replicated_all_reduce.3 of x (main)"]
    assert figure.layout.margin.t == 70 + 20 * 4  # room above the grid for every line


def test_a_few_replicas_stay_together_and_the_grid_lines_up_with_the_matrix():
    ir, pairs = collectives(1, replicas=2)
    figure = ReplicaGroupView(ir, live=False).figure
    assert list(figure.layout.xaxis.range) == list(figure.layout.xaxis2.range) == [-0.6, 7.6]
    assert list(figure.layout.xaxis2.tickvals) == [0, 1]  # no ticks for replicas that do not exist


def test_panels_are_a_fixed_number_of_pixels_apart():
    ir = popxl.Ir(replication=4)
    grouping = ir.replica_grouping(stride=1, group_size=2)
    alone = replica_group_figure(grouping, [])
    assert alone.layout.height == 20 + 46 + 90 + 20
    ir, pairs = collectives(2, replicas=4)
    figure = ReplicaGroupView(ir, live=False).figure
    plot = figure.layout.height - figure.layout.margin.t - figure.layout.margin.b
    gap = (figure.layout.yaxis.domain[0] - figure.layout.yaxis2.domain[1]) * plot
    np.testing.assert_allclose(gap, 72, atol=1)


def test_the_graph_figure_takes_the_width_of_its_container():
    from support.programs import mlp_training
    from workbench.widgets import GraphView

    ir, _ = mlp_training()
    figure = GraphView(ir, live=False).figure
    assert figure.layout.width is None and figure.layout.autosize is not False


def test_every_figure_carries_the_small_template_with_the_look_of_plotlys_default():
    """Saved outputs stay small: a figure holds the views' template (under 1.5 KB), not plotly's default one
    merged under it (about 7 KB in every figure), and looks as the default would draw its bars and lines."""
    import json

    import plotly.io as pio

    from workbench.widgets import CallTreeView, DiffView, GraphView, ModelView, ScheduleView

    ir, _ = call_tree_program()
    default = pio.templates["plotly"]
    views = [view(ir, live=False) for view in (CallTreeView, GraphView, ModelView, ScheduleView, LivenessView,
                                               ReplicaGroupView)] + [DiffView(ir, ir)]
    for view in views:
        template = view.figure.layout.template
        assert len(json.dumps(template.to_plotly_json())) < 1500, type(view).__name__
        assert template.layout.autotypenumbers == default.layout.autotypenumbers
        assert template.layout.xaxis.zerolinewidth == default.layout.xaxis.zerolinewidth
        assert template.data.bar[0].marker.line == default.data.bar[0].marker.line
