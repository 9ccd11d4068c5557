"""ReplicaGroupView: replicas coloured by group, the groups of each collective, values per group."""
import re
from types import SimpleNamespace

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from widget_programs import trace
from workbench.analysis.replica_groups import fold_uses, group_values
from workbench.widgets import ManualScheduler, ReplicaGroupView
from workbench.widgets.figures import replica_group_figure
from workbench.widgets.figures.replica_figure import ROW_LINES, ROW_NAME, row_labels
from workbench.widgets.style import group_color, group_tint


def grouped_program():
    """4 replicas; w has one value per group of replicas {0, 2} and {1, 3}; each replica's data is summed
    over the replicas {0, 1} and {2, 3} and added to w."""
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        by_parity = ir.replica_grouping(stride=2, group_size=2)
        w = popxl.variable(np.array([[1.0, 1.0], [10.0, 10.0]], np.float32), replica_grouping=by_parity, name="w")
        x_stream = popxl.h2d_stream([2], popxl.float32, name="x")
        x = ops.host_load(x_stream)
        pairs = ir.replica_grouping(stride=1, group_size=2)
        total = ops.collectives.replicated_all_reduce(x, group=pairs)
        ops.var_updates.accumulate_(w, total)
    return ir, w, x_stream, by_parity, pairs


def run_once(ir, x_stream, session=None):
    data = np.arange(8, dtype=np.float32).reshape(4, 2)
    with session or popxl.Session(ir, "ipu_model") as session:
        session.run({x_stream: data})
    return session, data


def test_each_group_adds_the_pair_sums_of_its_first_replica():
    ir, w, x_stream, _, _ = grouped_program()
    session, data = run_once(ir, x_stream)
    pair_sums = np.array([data[0] + data[1], data[0] + data[1], data[2] + data[3], data[2] + data[3]])
    # one_per_group reads replica 0 for group {0, 2} and replica 1 for group {1, 3}
    np.testing.assert_array_equal(session.get_tensor_data(w),
                                  np.array([[1.0, 1.0], [10.0, 10.0]]) + pair_sums[[0, 1]])


@pytest.mark.parametrize("stride, group_size", [(1, 4), (1, 2), (2, 2), (4, 1), (1, 1)])
def test_the_grid_colours_every_replica_by_its_group(stride, group_size):
    ir = popxl.Ir(replication=4)
    grouping = ir.replica_grouping(stride=stride, group_size=group_size)
    figure = replica_group_figure(grouping, [])
    grid = [t for t in figure.data if (t.meta or {}).get("panel") == "grid"]
    assert len(grid) == grouping.num_groups
    for group, drawn in enumerate(grid):
        assert list(drawn.customdata) == grouping.members(group)
        assert drawn.marker.color == group_color(group)
        assert drawn.name == f"group {group}: replicas {', '.join(map(str, grouping.members(group)))}"


def test_a_grouping_from_assignments_is_drawn_as_given():
    ir = popxl.Ir(replication=6)
    grouping = ir.replica_grouping_from_assignments([0, 1, 1, 0, 2, 2])
    figure = replica_group_figure(grouping, [])
    assert [list(t.customdata) for t in figure.data] == [[0, 3], [1, 2], [4, 5]]
    assert "assignment [0, 1, 1, 0, 2, 2]" in figure.layout.annotations[0].text


def test_a_program_of_one_replica_shows_the_replica_on_its_ipus_and_what_each_holds_in_a_short_picture():
    from real_programs import transformer

    ir, _ = transformer(replicas=1)
    figure = ReplicaGroupView(ir, live=False).figure
    heading = figure.layout.title.text
    assert heading.startswith("1 replica<br><sup>one replica: each collective and variable has one group")
    assert "popxl.Ir(replication=N)" in heading and "replicatedGraphCount" in heading  # how to get more
    replica = next(t for t in figure.data if t.meta["panel"] == "replica")
    assert list(replica.text) == ["IPU 0", "IPU 1"] and set(replica.y) == {"replica 0"}
    held = next(t for t in figure.data if t.meta["panel"] == "matrix")
    # one row per kind: the 24 all-reduces and the 24 variables, all on IPU 0 (the forward copies them to IPU 1)
    assert list(held.text) == ["24", "24"] and list(held.x) == [0, 0]
    assert list(held.y) == ["24 collectives: replicated_all_reduce of<br>∂\u00a0layer{0–5}.{qkv,proj,ff1,ff2} (main)",
                            "24 variables: layer{0–5}.{qkv,proj,ff1,ff2}"]
    variables = held.hovertext[1]
    assert variables.startswith("<b>24 variables on IPU 0</b>") and all(w.name in variables for w in ir.variables)
    assert len(figure.data) == 2 and figure.layout.height <= 240  # 368 px with an empty grid and matrix before
    assert not figure.layout.showlegend
    # several replicas keep the grid and the matrix
    four = replica_group_figure(popxl.Ir(replication=4).replica_grouping(group_size=2), [])
    assert "one replica" not in four.layout.title.text and four.data[0].meta["panel"] == "grid"


def test_one_replica_of_a_hundred_variables_is_one_row_as_tall_as_its_content():
    ir = popxl.Ir()
    with ir.main_graph:
        for block in range(100):
            with popxl.name_scope(f"block{block}"):
                popxl.variable(np.ones(2, np.float32), name="w")
    figure = ReplicaGroupView(ir, live=False).figure
    held = next(t for t in figure.data if t.meta["panel"] == "matrix")
    assert list(held.y) == ["100 variables: block{0–99}/w"] and list(held.text) == ["100"]
    assert figure.layout.height <= 200
    empty = replica_group_figure(popxl.Ir().replica_grouping(), [])
    assert [list(t.text) for t in empty.data] == [["IPU 0"], []]


def test_the_matrix_shows_the_groups_of_each_collective_and_variable():
    ir, w, _, by_parity, pairs = grouped_program()
    view = ReplicaGroupView(ir, live=False)
    assert view.shown_grouping == pairs  # the first collective's grouping fills the grid
    matrix = [t for t in view.figure.data if (t.meta or {}).get("panel") == "matrix"]
    collective = next(op for op in ir.main_graph.ops if op.type == "replicated_all_reduce")
    rows = {}
    for drawn in matrix:
        for replica, label in zip(drawn.x, drawn.y):
            rows.setdefault(label, {})[replica] = drawn.meta["group"]
    assert rows == {f"{collective.name} of x (main)": {0: 0, 1: 0, 2: 1, 3: 1}, "variable w": {0: 0, 1: 1, 2: 0, 3: 1}}
    assert [t.marker.color for t in matrix] == [group_color(0), group_color(1)]
    view.show(by_parity)
    assert [list(t.customdata) for t in view.figure.data if t.meta["panel"] == "grid"] == [[0, 2], [1, 3]]


def test_show_refuses_a_grouping_of_another_ir():
    ir, *_ = grouped_program()
    view = ReplicaGroupView(ir, live=False)
    with pytest.raises(ValueError, match="ReplicaGrouping of"):
        view.show(popxl.Ir(replication=4).replica_grouping(2, 2))


def test_after_a_run_the_table_holds_each_groups_value_in_its_colour():
    ir, w, x_stream, _, _ = grouped_program()
    session = popxl.Session(ir, "ipu_model")
    scheduler = ManualScheduler()
    view = ReplicaGroupView(session, scheduler=scheduler)
    assert view.values is None and view.details_html() == "" and view.widget.children[-1].value == ""
    run_once(ir, x_stream, session)
    scheduler.flush()
    expected = session.get_tensor_data(w)
    table = view.widget.children[-1].value
    assert table == view.details_html() and table in view.to_html()
    rows = re.findall(r'<tr style="background:([^"]+)">(.*?)</tr>', table)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for _, row in rows]
    assert [(variable, group, replicas) for variable, group, replicas, _ in cells] == [("w", "0", "0, 2"), ("w", "1", "1, 3")]
    assert cells[0][3] == np.array2string(expected[0], precision=4, separator=", ")
    assert cells[1][3] == np.array2string(expected[1], precision=4, separator=", ")
    assert [tint for tint, _ in rows] == [group_tint(0), group_tint(1)]


def test_the_table_shows_every_row_whole_and_names_as_text():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        for index in range(30):
            popxl.variable(np.full((4, 3), index, np.float32), name=f"<b>v{index}</b>",
                           replica_grouping=ir.replica_grouping(group_size=1))
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
    table = ReplicaGroupView(session, live=False).details_html()
    assert table.count("<tr style=") == 30 * 4
    assert "&lt;b&gt;v29&lt;/b&gt;" in table and "<b>v29</b>" not in table


def test_group_values_split_a_host_value_by_group_or_by_replica():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        grouping = ir.replica_grouping(stride=2, group_size=2)
        per_group = popxl.variable(np.zeros((2, 3), np.float32), replica_grouping=grouping, name="g")
        per_replica = popxl.variable(np.zeros((2, 3), np.float32), replica_grouping=grouping,
                                     retrieval_mode="all_replicas", name="r")
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    split = group_values(per_group, host)
    assert [(v.group, v.replicas) for v in split] == [(0, (0, 2)), (1, (1, 3))]
    np.testing.assert_array_equal(split[1].value, host[1])
    host = np.arange(12, dtype=np.float32).reshape(4, 3)
    split = group_values(per_replica, host)
    assert [(v.group, v.replicas) for v in split] == [(0, (0,)), (1, (1,)), (0, (2,)), (1, (3,))]
    np.testing.assert_array_equal(split[2].value, host[2])


def test_uses_of_one_grouping_fold_into_one_row_naming_what_they_reduce():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        weights = [popxl.variable(np.ones(2, np.float32), name=f"W{index}") for index in range(8)]
        for weight in weights:
            ops.var_updates.accumulate_(weight, ops.collectives.replicated_all_reduce(weight * 2, op="mean"))
    view = ReplicaGroupView(ir, live=False)
    reduces = [op for op in ir.main_graph.ops if op.type == "replicated_all_reduce"]
    assert [row.label for row in fold_uses(view.uses)] == [
        "8 collectives: replicated_all_reduce of mul, mul_{1–7} (main)", "8 variables: W{0–7}"]  # every one
    assert [op.inputs[0].name for op in reduces] == ["mul"] + [f"mul_{n}" for n in range(1, 8)]
    matrix = [t for t in view.figure.data if (t.meta or {}).get("panel") == "matrix"]
    drawn = {y for t in matrix for y in t.y}
    assert {label.replace("<br>", " ") for label in drawn} == {row.label for row in fold_uses(view.uses)}  # whole
    assert all(len(line) <= ROW_NAME for label in drawn for line in label.split("<br>"))  # wrapped
    hover = next(h for t in matrix for h in t.hovertext if h.startswith("<b>8 collectives</b>"))
    assert all(f"{op.name} of {op.inputs[0].name} (main)" in hover for op in reduces)  # each by its name


def test_the_transformers_collectives_row_says_in_two_lines_what_they_reduce_and_where():
    from real_programs import transformer

    view = ReplicaGroupView(transformer()[0], live=False)
    labels = row_labels(fold_uses(view.uses))
    # each gradient named by its variable, found through the forward call's binding of ws_0 .. ws_23
    assert labels == ["24 collectives: replicated_all_reduce of<br>∂\u00a0layer{0–5}.{qkv,proj,ff1,ff2} (main)",
                      "24 variables: layer{0–5}.{qkv,proj,ff1,ff2}"]
    hovers = [h for t in view.figure.data if (t.meta or {}).get("panel") == "matrix" for h in t.hovertext]
    assert any("replicated_all_reduce.508 of ∂\u00a0layer0.qkv (Gradient___ws_0) (main)" in h for h in hovers)
    assert {y for t in view.figure.data if (t.meta or {}).get("panel") == "matrix" for y in t.y} == set(labels)


def test_the_grid_menu_names_each_grouping_in_words():
    ir, w, _, by_parity, pairs = grouped_program()
    view = ReplicaGroupView(ir, live=False)
    (menu,) = [child for child in view.widget.children if hasattr(child, "options")]
    collective = next(op for op in ir.main_graph.ops if op.type == "replicated_all_reduce")
    assert [label for label, _ in menu.options] == [
        f"2 groups (stride 1, group size 2), used by {collective.name} of x (main)",
        "2 groups (stride 2, group size 2), used by variable w"]
    menu.value = 1
    assert view.grouping == by_parity


def test_a_grouping_of_many_users_is_named_in_the_menu_by_how_many_of_each_so_its_choice_is_not_cut():
    from real_programs import transformer

    ir, _ = transformer(layers=2)
    view = ReplicaGroupView(ir, live=False)
    # the first collective's name made this choice ~100 characters, cut in a 630-px output at about 80
    label = view.grouping_label(view.shown_grouping)
    assert label == "1 group (stride 1, group size 2), used by 8 collectives and 8 variables"
    assert view.figure.layout.annotations[0].text.endswith("<br>used by 8 collectives and 8 variables")  # as the grid says


def test_long_row_labels_keep_two_lines_and_their_start_and_end_so_the_matrix_keeps_its_width():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="a_rather_long_variable_name_" * 3)
        ops.collectives.replicated_all_reduce(x)
    figure = ReplicaGroupView(ir, live=False).figure
    rows = [t for t in figure.data if (t.meta or {}).get("panel") == "matrix"]
    labels = {y for t in rows for y in t.y}
    assert all(len(line) <= ROW_NAME for label in labels for line in label.split("<br>"))
    assert all(label.count("<br>") < ROW_LINES for label in labels)
    collective = next(label for label in labels if "replicated_all_reduce" in label)
    assert "…" in collective and collective.replace("<br>", " ").endswith(f"{x.name[-20:]} (main)")
    assert any(x.name in hover for t in rows for hover in t.hovertext)  # whole on hover


def test_rows_whose_shortened_labels_would_be_alike_stay_apart():
    long_label = "a" * 60 + "{}" + "b" * 60  # alike but for one character in the middle, which '…' leaves out
    labels = row_labels([SimpleNamespace(label=long_label.format(n)) for n in (1, 2)])
    assert len(set(labels)) == 2 and all(label.count("<br>") < ROW_LINES for label in labels)


def test_the_instances_of_a_popdist_job_are_parted_in_the_view(monkeypatch):
    """Instance 1 of a job of 2 instances x 2 replicas: dashed lines between replicas 1 and 2, and each
    instance named above its replicas."""
    for name, value in (("PMI_SIZE", "2"), ("PMI_RANK", "1"), ("POPDIST_NUM_TOTAL_REPLICAS", "4")):
        monkeypatch.setenv(name, value)
    ir = popxl.Ir(replication="popdist")
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        ops.collectives.replicated_all_reduce(x)
    assert ir.instances == [range(0, 2), range(2, 4)]
    figure = ReplicaGroupView(ir, live=False).figure
    boundaries = [shape for shape in figure.layout.shapes if shape.name == "instance boundary"]
    assert [shape.x0 for shape in boundaries] == [1.5, 1.5]  # in the grid and in the matrix
    assert [a.text for a in figure.layout.annotations if a.name == "instance"] == ["instance 0", "instance 1"]
    assert figure.layout.xaxis2.title.text == "replica (instance 0: 0–1 · instance 1: 2–3)"
    assert figure.layout.title.text.startswith("4 replicas in 2 instances")
    alone = ReplicaGroupView(popxl.Ir(replication=4), live=False).figure
    assert not [shape for shape in alone.layout.shapes if shape.name == "instance boundary"]


def test_every_variable_of_a_transformer_has_a_row_and_its_hover_names_them_all():
    from real_programs import transformer

    ir, _ = transformer()
    assert len(ir.variables) == 24
    view = ReplicaGroupView(ir, live=False)
    rows = [t for t in view.figure.data if (t.meta or {}).get("panel") == "matrix"]
    variable_rows = {y for t in rows for y in t.y if "variables" in y}
    assert variable_rows == {"24 variables: layer{0–5}.{qkv,proj,ff1,ff2}"}  # every one
    hover = next(h for t in rows for h in t.hovertext if h.startswith("<b>24 variables</b>"))
    assert all(variable.name in hover for variable in ir.variables)


def test_remote_and_replica_sharded_variables_get_rows_of_their_own_that_say_where_they_live():
    """As a phased or RTS program stores weights: some on the IPU, optimiser state in Streaming Memory,
    part of it sharded over the 4 replicas (each holds a quarter)."""
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        on_ipu = [popxl.variable(np.ones(8, np.float32), name=f"w{index}") for index in range(2)]
        buffer = popxl.remote_buffer((8,), popxl.float32, entries=2)
        remote = [popxl.remote_variable(np.ones(8, np.float32), buffer, row, name=f"state{row}") for row in (0, 1)]
        sharded = [popxl.replica_sharded_variable(np.ones(8, np.float32), name=f"moment{index}")[0]
                   for index in range(3)]
        ops.var_updates.accumulate_(on_ipu[0], ops.collectives.replicated_all_reduce(on_ipu[1]))
    assert [v.shard_count for v in sharded] == [4, 4, 4] and all(v.remote_buffer is not None for v in remote)
    view = ReplicaGroupView(ir, live=False)
    assert [row.label for row in fold_uses(view.uses)][1:] == [
        "2 variables: w0, w1", "2 remote variables: state0, state1", "3 RTS variables (4 shards each): moment{0–2}"]
    rows = [t for t in view.figure.data if (t.meta or {}).get("panel") == "matrix"]
    hovers = {y.split(":")[0]: hover for t in rows for y, hover in zip(t.y, t.hovertext)}
    assert "sharded over 4 replicas: each holds 1/4 of each variable" in hovers["3 RTS variables (4 shards each)"]
    assert "in Streaming Memory (remote buffers)" in hovers["2 remote variables"]
    assert "Streaming Memory" not in hovers["2 variables"]
    grid_title = view.figure.layout.annotations[0].text
    assert grid_title.endswith("used by 1 collective, 2 variables, 2 remote variables and 3 RTS variables")


def test_one_replica_is_said_in_the_singular():
    ir = popxl.Ir()
    with ir.main_graph:
        popxl.variable(np.ones(2, np.float32), name="w")
    assert ReplicaGroupView(ir, live=False).figure.layout.title.text.split("<br>")[0] == "1 replica"


def test_with_one_grouping_there_is_no_menu_to_choose_from():
    from real_programs import transformer

    single = popxl.Ir()
    with single.main_graph:
        popxl.variable(np.ones(2, np.float32), name="w")
    for ir in (single, transformer(layers=2)[0]):
        view = ReplicaGroupView(ir, live=False)
        assert not [child for child in view.widget.children if hasattr(child, "options")]
    ir, *_ = grouped_program()
    assert [child for child in ReplicaGroupView(ir, live=False).widget.children if hasattr(child, "options")]


def test_in_a_narrow_output_the_legend_goes_under_the_picture_so_the_replica_columns_keep_their_width():
    from real_programs import transformer

    view = ReplicaGroupView(transformer(layers=2)[0], live=False)
    wide = view.figure
    assert wide.layout.legend.orientation != "h"  # beside the picture
    view.fit(610)  # a 630-px notebook output
    narrow = view.figure
    assert (narrow.layout.legend.orientation, narrow.layout.legend.yref, narrow.layout.legend.y) == ("h", "container", 0)
    assert narrow.layout.height > wide.layout.height and narrow.layout.margin.b > wide.layout.margin.b
    view.fit(1200)
    assert view.figure.layout.legend.orientation != "h"
