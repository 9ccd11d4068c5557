"""How a diff folds: unchanged runs beyond a little context become one row named by their scope, big runs of
added or removed ops fold by scope when the diff would not fit one screen, changed ops never fold, and
opening every fold gives back every op in order."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff
from workbench.export import to_json
from workbench.export.diff_folds import FIRST_VIEW_ROWS, DiffFold, DiffFolding, OpenFold
from workbench.export.graph_diff import graph_diff
from workbench.widgets import DiffView


def stack(layers: int, axis: int = 1, ops_per_layer: int = 6) -> popxl.Ir:
    """``layers`` name-scoped layers of ``ops_per_layer`` ops, then a softmax over ``axis``."""
    ir = popxl.Ir()
    with ir.main_graph:
        h = popxl.variable(np.ones((4, 4), np.float32), name="h")
        for layer in range(layers):
            with popxl.name_scope(f"layer{layer}"):
                for _ in range(ops_per_layer):
                    h = ops.relu(h)
        ops.softmax(h, axis=axis)
    return ir


def rows_of(shown):
    """The diff rows a view holds, each fold's rows in its place (an open fold's heading holds none)."""
    return [row for item in shown if not isinstance(item, OpenFold)
            for row in (item.rows if isinstance(item, DiffFold) else [item])]


def kinds(shown):
    return ["fold" if isinstance(item, DiffFold) else "open" if isinstance(item, OpenFold) else item.status
            for item in shown]


def test_unchanged_runs_fold_by_scope_keeping_two_ops_of_context_before_the_change():
    view = DiffView(stack(4, axis=1), stack(4, axis=0))
    labels = [item.describe("same") if isinstance(item, DiffFold) else item.status for item in view.shown]
    assert labels == ["⋯ 6 unchanged ops in layer0 ⋯", "⋯ 6 unchanged ops in layer1 ⋯", "⋯ 6 unchanged ops in layer2 ⋯",
                      "⋯ 4 unchanged ops in layer3 ⋯", "same", "same", "changed"]
    assert rows_of(view.shown) == view.diff.rows


def test_opening_a_fold_puts_its_ops_in_its_place_and_opening_all_restores_every_op():
    view = DiffView(stack(4, axis=1), stack(4, axis=0))
    first = view.folds()[1]
    view.unfold(first)
    assert kinds(view.shown) == ["fold", "open"] + ["same"] * 6 + ["fold", "fold", "same", "same", "changed"]
    assert rows_of(view.shown) == view.diff.rows
    view.fold(first)
    assert len(view.shown) == 7
    view.unfold_all()
    assert rows_of(view.shown) == view.diff.rows and view.folds() == []
    assert kinds(view.shown).count("open") == 4
    with pytest.raises(ValueError, match="no fold 'nowhere' in this diff"):
        view.unfold("nowhere")


def test_changed_ops_are_never_folded_even_when_they_do_not_fit_one_screen():
    changes = FIRST_VIEW_ROWS + 10

    def softmaxes(axis):
        ir = popxl.Ir()
        with ir.main_graph:
            h = popxl.variable(np.ones((4, 4), np.float32), name="h")
            for _ in range(changes):
                h = ops.relu(ops.relu(ops.softmax(h, axis=axis)))
        return ir

    folding = DiffFolding(graph_diff(to_json(softmaxes(1))["graphs"][0], to_json(softmaxes(0))["graphs"][0]).rows)
    shown = folding.shown()
    assert sum(1 for item in shown if not isinstance(item, DiffFold) and item.status == "changed") == changes
    assert all(row.status != "changed" for item in shown if isinstance(item, DiffFold) for row in item.rows)


def scoped_training() -> tuple[popxl.Ir, popxl.Graph, popxl.Graph]:
    """A forward graph of 6 name-scoped layers and its gradient graph."""
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.ones((4, 4), np.float32), name="w")

        def forward(x, w):
            for layer in range(6):
                with popxl.name_scope(f"layer{layer}"), popxl.name_scope("mlp"):
                    x = ops.gelu(x @ w) + x
                with popxl.name_scope(f"layer{layer}"), popxl.name_scope("norm"):
                    x = x * ops.tanh(x)
            return ops.mean(x)

        graph = ir.create_graph(forward, w, w)
        grads = autodiff(graph)
    return ir, graph, grads.graph


def test_a_transform_too_big_for_one_screen_folds_its_added_and_removed_runs_by_scope_and_opens_a_level_at_a_time():
    ir, forward, gradient = scoped_training()
    view = DiffView(ir, ir, graph=forward, after_graph=gradient)
    assert len(view.diff.rows) > FIRST_VIEW_ROWS and len(view.shown) <= FIRST_VIEW_ROWS
    added = [item for item in view.shown if isinstance(item, DiffFold) and item.counts()["added"]]
    assert any(fold.describe("added").endswith("added ops in layer3 ⋯") for fold in added)
    layer3 = next(fold for fold in added if fold.scope == ("layer3",))
    view.unfold(layer3.key)
    inner = view.folding.children(layer3)
    assert {item.scope for item in inner if isinstance(item, DiffFold)} == {("layer3", "mlp"), ("layer3", "norm")}
    assert rows_of(view.shown) == view.diff.rows
    assert {key for key in view.folds()} >= {item.key for item in inner if isinstance(item, DiffFold)}


def test_an_op_that_kept_its_name_but_changed_its_type_is_one_changed_op():
    ir = stack(2)
    before = to_json(ir)
    ir._pb_ir.applyInplacePattern(ir._pb_ir.getMainGraph())
    view = DiffView(before, ir)
    changed = [row for row in view.diff.rows if row.status == "changed"]
    assert changed and view.diff.count("added") == view.diff.count("removed") == 0
    assert changed[0].changes[0] == f"type: relu → {changed[0].after['type']}" and changed[0].after["type"] != "relu"


def test_the_figure_draws_each_fold_as_a_clickable_row_a_click_opens_it_in_place_and_one_on_its_heading_closes_it():
    view = DiffView(stack(4, axis=1), stack(4, axis=0))
    (canvas,) = view.widget.children
    (band,) = [t for t in view.figure.data if t.meta == dict(status="folded", side="band")]
    assert list(band.customdata) == view.folds() and list(band.y) == [0, -1, -2, -3]
    height = view.figure.layout.height
    first = view.folds()[0]
    canvas._message(canvas, {"kind": "click", "keys": [first]}, [])  # as the page tells it
    assert kinds(view.shown)[:2] == ["open", "same"] and view.figure.layout.height == height + 6 * 20
    assert canvas.figure["layout"]["height"] == view.figure.layout.height
    (heading,) = [t for t in view.figure.data if t.meta == dict(status="open", side="both")]
    assert list(heading.text) == ["6 unchanged ops in layer0 (click ▾ to fold)"] and list(heading.customdata) == [first]
    canvas._message(canvas, {"kind": "click", "keys": [first]}, [])
    assert len(view.shown) == 7 and canvas.figure["layout"]["height"] == height


def test_the_summary_on_top_counts_the_changes_per_scope_and_per_type():
    ir, forward, gradient = scoped_training()
    annotation = DiffView(ir, ir, graph=forward, after_graph=gradient).figure.layout.annotations[0].text
    by_scope, *rest = annotation.split("<br>")
    counts = graph_diff(*(g for g in to_json(ir)["graphs"] if g["id"] in (forward.id, gradient.id))).scope_changes()
    layer0 = counts["layer0"]
    assert by_scope.startswith("by scope: ") and f"layer0 −{layer0['removed']} +{layer0['added']}" in by_scope
    assert any(line.startswith("by type:") and "gelu" in line for line in rest)


def test_a_session_stands_for_its_ir():
    ir = stack(1)
    assert DiffView(popxl.Session(ir, "ipu_model"), ir).diff.count("same") == len(ir.main_graph.ops)


def test_diffing_what_is_not_a_graph_is_a_clear_error():
    ir = stack(1)
    with pytest.raises(TypeError, match="compares popxl.Irs, Graphs, Sessions or .*exports, got int"):
        DiffView(3, ir)
    with pytest.raises(ValueError, match="has no 'graphs' list"):
        DiffView({"ops": []}, ir)
    with pytest.raises(ValueError, match="before side of a diff must be one graph"):
        graph_diff(to_json(ir), to_json(ir)["graphs"][0])
    with pytest.raises(TypeError, match="graph names a graph by its id or label"):
        DiffView(ir, ir, graph=3)


def test_scopes_too_small_to_fold_alone_fold_together_named_by_the_first_and_last():
    view = DiffView(stack(3, ops_per_layer=3), stack(4, axis=0, ops_per_layer=3))
    first = view.shown[0]
    assert isinstance(first, DiffFold) and first.describe("same") == "⋯ 7 unchanged ops in layer0 … layer2 ⋯"
    assert kinds(view.shown) == ["fold", "same", "same"] + ["added"] * 3 + ["changed"]
    view.unfold(first.key)
    assert kinds(view.shown) == ["open"] + ["same"] * 9 + ["added"] * 3 + ["changed"]
    assert rows_of(view.shown) == view.diff.rows


def test_an_unchanged_graph_of_more_scopes_than_fit_one_screen_is_one_fold_that_opens_into_its_scopes():
    ir = stack(FIRST_VIEW_ROWS + 20)
    view = DiffView(ir, ir)
    (whole,) = view.shown
    assert whole.describe("same") == f"⋯ {6 * (FIRST_VIEW_ROWS + 20) + 1} unchanged ops in layer0 … layer{FIRST_VIEW_ROWS + 19} and the top level ⋯"
    view.unfold(whole.key)
    assert len(view.folds()) == FIRST_VIEW_ROWS + 20 and view.shown[-1].after["type"] == "softmax"
