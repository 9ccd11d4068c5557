"""DiffView: two versions of a graph side by side. Training ops added after autodiff show as added, an op
whose attribute changed as changed, runs of unchanged ops fold, and the figure marks each side. How runs fold: test_diff_folds.py."""
import numpy as np

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff
from workbench.export import to_json
from workbench.export.graph_diff import graph_diff
from workbench.widgets import DiffView


def model(axis: int = 1, layers: int = 8):
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((4, 4), np.float32), name="x")
        w = popxl.variable(np.eye(4, dtype=np.float32), name="w")
        for _ in range(layers):
            x = ops.relu(x @ w)
        ops.softmax(x, axis=axis)
    return ir


def test_the_ops_training_adds_after_autodiff_show_as_added_and_unchanged_runs_fold():
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.ones(3, np.float32), name="w")
        forward = ir.create_graph(lambda a: ops.sin(a) * a, w)
        before = to_json(ir)
        grads = autodiff(forward)
        site = ops.call_with_info(forward, w)
        (dw,) = ops.call(grads.graph, popxl.constant(np.ones(3, np.float32)), inputs_dict=grads.inputs_dict(site))
        ops.var_updates.accumulate_(w, dw, -0.1)
    view = DiffView(before, ir)
    statuses = [row.status for row in view.diff.rows]
    assert statuses == ["added", "added", "added"]
    assert [row.after["type"] for row in view.diff.rows] == ["call", "call", "accumulate_"]
    assert view.summary() == "main → main: 3 ops added, 0 removed, 0 changed (+1 accumulate_, +2 call)"
    added = [t for t in view.figure.data if t.meta["status"] == "added"]
    assert len(added) == 1 and list(added[0].x) == [1, 1, 1]  # on the right


def test_an_op_whose_attribute_changed_is_marked_and_says_what_changed():
    diff = graph_diff(to_json(model(axis=1))["graphs"][0], to_json(model(axis=0))["graphs"][0])
    assert [row.status for row in diff.rows] == ["same"] * 16 + ["changed"]
    (change,) = diff.rows[-1].changes
    assert change == "axis: 1 → 0"
    view = DiffView(model(axis=1), model(axis=0))
    assert [getattr(item, "status", "fold") for item in view.shown] == ["fold", "same", "same", "changed"]
    figure = view.figure
    changed = [t for t in figure.data if t.meta["status"] == "changed"]
    assert {t.meta["side"] for t in changed} == {"before", "after"}
    assert "axis: 1 → 0" in changed[0].hovertext[0]
    (folded,) = [t for t in figure.data if t.meta == dict(status="folded", side="both")]
    assert list(folded.text) == ["⋯ 14 unchanged ops ⋯"]  # the 16 matmuls and relus less two of context


def test_removed_ops_are_on_the_left_and_a_missing_graph_is_a_clear_error():
    diff = graph_diff(to_json(model(layers=3))["graphs"][0], to_json(model(layers=2))["graphs"][0])
    assert sorted(row.before["type"] for row in diff.rows if row.status == "removed") == ["matmul", "relu"]
    try:
        DiffView(model(), model(), graph="nowhere")
    except ValueError as error:
        assert "no graph 'nowhere'" in str(error) and "'main'" in str(error)
    else:
        raise AssertionError("expected a ValueError")


def test_the_diff_is_laid_out_again_for_a_narrow_output_with_every_label_inside_its_side():
    from workbench.widgets.figures.diff_figure import LABEL_CHAR_WIDTH, LABEL_OFFSET, SIDE_MARGIN, X_RANGE
    from workbench.widgets.style import PICTURE_WIDTH

    def scoped(axis):
        ir = popxl.Ir()
        with ir.main_graph, popxl.name_scope("encoder_layer_with_a_long_descriptive_scope_name"):
            x = popxl.variable(np.ones((4, 4), np.float32), name="x")
            ops.softmax(ops.relu(x), axis=axis)
        return ir

    view = DiffView(scoped(1), scoped(0))
    (canvas,) = view.widget.children
    canvas._message(canvas, {"kind": "room", "width": 630}, [])  # as the page tells it
    figure = view.figure
    assert figure.layout.width == 630 and canvas.figure["layout"]["width"] == 630
    plot = 630 - 2 * SIDE_MARGIN
    pixel = lambda x: SIDE_MARGIN + (x - X_RANGE[0]) / (X_RANGE[1] - X_RANGE[0]) * plot
    labels = [(x, label) for trace in figure.data if trace.type == "scatter" for x, label in zip(trace.x, trace.text)]
    assert any(label.endswith("…") for _, label in labels)  # the long names are shortened, whole on hover
    for x, label in labels:
        end = pixel(x) + LABEL_OFFSET + len(label) * LABEL_CHAR_WIDTH
        assert end <= (pixel(1) - LABEL_OFFSET if x == 0 else 630 - SIDE_MARGIN), label
    from workbench.widgets.figures.diff_figure import TITLE_CHAR_WIDTH, diff_figure

    title = diff_figure(view.diff, view.shown, 400).layout.title.text  # a title too long for its line wraps
    assert "<br>" in title and all(len(line.replace("<b>", "").replace("</b>", "")) * TITLE_CHAR_WIDTH <= 360
                                   for line in title.split("<br>"))
    canvas.room = 1400
    assert view.figure.layout.width == PICTURE_WIDTH and canvas.figure["layout"]["width"] == PICTURE_WIDTH
