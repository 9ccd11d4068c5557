"""The schedule's strip of name scopes at any size: under each row, a grey bar per run of an outer group of
the graph that ran (ResNet-50's stages, each of a transformer's layers in its forward and gradient graphs, the
optimizer), so that a timeline of a few hundred bars says which part of the model ran when."""
import numpy as np

import popxl
import popxl.ops as ops
from real_programs import resnet50_session, transformer
from widget_programs import chain, trace
from workbench.widgets import ScheduleView
from workbench.widgets.figures.schedule_bins import BINNED_ABOVE


def strips(view):
    groups = trace(view.figure, "groups (name scopes)")
    return [(row, label, base, length, hover) for row, label, base, length, hover
            in zip(groups.y, groups.text, groups.base, groups.x, groups.hovertext)]


def test_resnets_stages_are_named_in_order_under_its_one_row_of_180_bars():
    view = ScheduleView(resnet50_session()._workbench_source(), live=False)
    assert len(view.events) < BINNED_ABOVE  # drawn bar by bar, not binned
    drawn = strips(view)
    assert [label for _, label, *_ in drawn] == ["res_conv1", "res2", "res3", "res4", "res5", "pred"]
    assert {row for row, *_ in drawn} == {"IPU 0"}
    spans = [(base, base + length) for _, _, base, length, _ in drawn]
    assert all(end <= following for (_, end), (following, _) in zip(spans, spans[1:]))  # one after another
    pred = [event for event in view.events if event.op.name.split("/")[0] in ("n174", "n175")]  # its fc, softmax
    assert len(pred) == 4 and spans[-1] == (pred[0].start_cycle, pred[-1].end_cycle)  # pred's ops, no more


def test_a_transformers_layers_show_in_its_forward_then_backwards_in_its_gradient_graph_on_each_ipu():
    view = ScheduleView(transformer()[0], live=False)
    drawn = strips(view)
    on_ipu1 = [label for row, label, *_ in drawn if row == "IPU 1"]
    assert {"layer3", "layer4", "layer5"} <= set(on_ipu1) and not {"layer0", "layer1", "layer2"} & set(on_ipu1)
    on_ipu0 = [(label, hover.rsplit("of graph ", 1)[1]) for row, label, *_, hover in drawn if row == "IPU 0"]
    forward = [label for label, graph in on_ipu0 if graph == "transformer.forward"]
    backward = [label for label, graph in on_ipu0 if graph == "transformer.forward_grad"]
    assert forward[:3] == ["layer0", "layer1", "layer2"] and backward[-3:] == ["layer2", "layer1", "layer0"]
    assert on_ipu0[-1] == ("optimizer", "main")  # the weight updates, last
    colours = trace(view.figure, "groups (name scopes)").marker.color
    rows = [row for row, *_ in drawn]
    for row in set(rows):  # neighbours on a row stand apart
        mine = [colour for colour, r in zip(colours, rows) if r == row]
        assert all(a != b for a, b in zip(mine, mine[1:]))


def test_a_program_without_name_scopes_has_no_strip_of_arbitrary_runs_of_its_ops_until_it_is_binned():
    ir, _, _ = chain(100)  # its Model tab cuts it in runs of 20 ops, which name no part of it
    view = ScheduleView(ir, live=False)
    assert "groups (name scopes)" not in [t.name for t in view.figure.data]
    long, _, _ = chain(BINNED_ABOVE + 10)  # binned, the runs are landmarks
    assert len(trace(ScheduleView(long, live=False).figure, "groups (name scopes)").x) > 1


def test_a_scope_interrupted_by_another_is_two_runs_not_one_span_over_both():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(4, np.float32), name="x")
        for scope in ("a", "b", "a"):
            with popxl.name_scope(scope):
                for _ in range(3):
                    x = ops.tanh(x)
    drawn = strips(ScheduleView(ir, live=False))
    assert [label for _, label, *_ in drawn] == ["a", "b", "a"]
    spans = [(base, base + length) for _, _, base, length, _ in drawn]
    assert all(end <= following for (_, end), (following, _) in zip(spans, spans[1:]))
