"""Labels of crowded pictures kept whole: the nodes of a frame too wide for its output wrap into rows as the
picture's own nodes do, a group's label keeps the name that tells it from the groups beside it, and a group's
caption too long for its line goes on to a second."""
import html
from types import SimpleNamespace

import pytest

from picture_cases import OPTIMIZER_RUN, PICTURES, fit_630, open_path, transformer_main
from picture_pixels import Pixels
from workbench.widgets import GraphView
from workbench.widgets.figures.picture_labels import drawn_label


def written(view) -> dict:
    """Each node's label as the figure writes it, its lines joined by a space."""
    return {key: html.unescape(label.replace("<br>", " ")) for trace in view.figure.data
            if trace.text is not None and trace.customdata is not None
            for label, key in zip(trace.text, trace.customdata) if label}


def opened(name: str) -> GraphView:
    (ir, graph), detail, *openers = PICTURES[name]()
    view = GraphView(ir, graph=graph, detail=detail, live=False)
    for opens in openers:
        opens(view)
    return view


@pytest.mark.parametrize("name", ["the transformer's optimizer, a run of 8 of its units open",
                                  "the transformer's optimizer, a run of 8 of its units open in a 630-px output"])
def test_the_units_of_an_opened_run_are_each_named_whole(name):
    """The 8 units of a run (a weight's all-reduce and update each) side by side were cut to ``▸ layer…``; their
    frame's row now wraps where it is too wide, and each is named whole."""
    view = opened(name)
    (run,) = [box for box in view.picture.boxes if box.label.startswith(f"▾ {OPTIMIZER_RUN}")]
    units = [view.picture.nodes[key] for key in run.members]
    assert len(units) == 8
    labels = written(view)
    for unit in units:
        assert labels[unit.key].startswith(f"▸ {unit.item.label} (2 ops)"), labels[unit.key]
    assert len(Pixels(view.figure, view.width).labels) == len(view.picture.nodes)


def test_the_units_of_a_run_wrap_into_rows_in_a_narrow_output():
    view = opened("the transformer's optimizer, a run of 8 of its units open in a 630-px output")
    (run,) = [box for box in view.picture.boxes if box.label.startswith(f"▾ {OPTIMIZER_RUN}")]
    rows = {view.layout.positions[key][1] for key in run.members}
    assert 2 <= len(rows) <= 4


def test_an_expanded_call_in_a_narrow_output_wraps_its_rows_and_cuts_no_label():
    """The transformer's forward call expanded in a 630-px output cut 16 labels (``transpose…``) while its body's
    layers stayed one row each; bench_crowded_pictures measures the same."""
    view = opened("transformer main graph in a 630-px output, its forward call expanded")
    labels = written(view)
    cut = [text for key, text in labels.items() if not view.picture.nodes[key].caption.startswith(text)]
    assert cut == [] and len(labels) == len(view.picture.nodes)


def test_a_group_caption_too_long_for_its_line_goes_on_to_a_second():
    """At 630 px the optimizer's caption was cut after its name; it now takes two lines, each inside the width."""
    ir, graph = transformer_main()
    view = GraphView(ir, graph=graph, live=False)
    fit_630(view)
    (optimizer,) = [node for node in view.picture.nodes.values() if node.kind == "group"]
    label = next(text for trace in view.figure.data if trace.customdata is not None and trace.text is not None
                 for text, key in zip(trace.text, trace.customdata) if key == optimizer.key)
    assert label.split("<br>") == ["▸ optimizer (48 ops):", "24 × replicated_all_reduce → accumulate_"]
    pixels = Pixels(view.figure, view.width)
    assert all(0 <= left and right <= pixels.width for left, _, right, _, _ in pixels.labels)


def test_a_group_label_cut_keeps_the_end_of_its_name_never_a_shared_start():
    from workbench.widgets.figures.picture_labels import group_name

    unit = SimpleNamespace(kind="group", label="▸ layer0.qkv (2 ops)", item=SimpleNamespace(label="layer0.qkv"),
                           caption="▸ layer0.qkv (2 ops): replicated_all_reduce → accumulate_")
    assert drawn_label(unit, 20) == "▸ layer0.qkv (2 ops)"
    assert drawn_label(unit, 14) == "▸ layer0.qkv"
    assert drawn_label(unit, 10) == "layer0.qkv"
    assert drawn_label(unit, 8) == "…er0.qkv"
    assert drawn_label(unit, 40) == "▸ layer0.qkv (2 ops):\nreplicated_all_reduce → accumulate_"
    assert drawn_label(unit, 32) == unit.caption[:31] + "…"  # what it holds too long for a line
    assert group_name("block0 … block19", 15) == "block0…block19"


def test_the_picture_cases_open_a_run_of_units():
    ir, graph = transformer_main()
    view = GraphView(ir, graph=graph, live=False)
    open_path("optimizer", OPTIMIZER_RUN)(view)
    assert [box.label for box in view.picture.boxes] == ["▾ optimizer (48 ops)", f"▾ {OPTIMIZER_RUN} (16 ops)"]


def scaled_sixteen_ways():
    """main calls a body that scales its input by 16 weights side by side and joins the results."""
    import numpy as np

    import popxl
    import popxl.ops as ops

    ir = popxl.Ir()
    with ir.main_graph:
        weights = [popxl.variable(np.full((4, 4), index, np.float32), name=f"scale{index}") for index in range(16)]

        def body(x, *scales):
            return ops.concat([ops.mul(x, scale) for scale in scales], axis=0)

        graph = ir.create_graph(body, popxl.TensorSpec((4, 4), popxl.float32), *weights)
        (out,) = ops.call(graph, ops.host_load(popxl.h2d_stream([4, 4], popxl.float32, name="x")), *weights)
        ops.host_store(popxl.d2h_stream(out.shape, out.dtype, name="y"), out)
    return ir


@pytest.mark.parametrize("width", [960, 630])
def test_the_ops_of_a_layer_of_an_expanded_call_too_wide_for_the_output_wrap_into_rows_named_whole(width):
    """16 muls side by side in a call's body (their row about 1,000 px) wrap into rows, none of their labels cut."""
    from picture_pixels import overlap

    ir = scaled_sixteen_ways()
    view = GraphView(ir, live=False)
    view.fit(width)
    view.expand(next(op for op in ir.main_graph.ops if op.called_graphs))
    labels = written(view)
    scales = [key for key, node in view.picture.nodes.items() if node.caption == "mul"]
    assert len(scales) == 16 and all(labels[key] == "mul" for key in scales)
    assert len({view.layout.positions[key][1] for key in scales}) == 2
    pixels = Pixels(view.figure, view.width)
    assert len(pixels.labels) == len(pixels.nodes)
    assert all(0 <= left and right <= pixels.width for left, _, right, _, _ in pixels.labels)
    assert not any(overlap(first[:4], second[:4]) for index, first in enumerate(pixels.labels)
                   for second in pixels.labels[index + 1:])


def between_two_scopes():
    """main runs two scopes of five ops each from its input, and between them six ops of its own, each with a
    weight of a long name, whose results a chain of main's ops joins."""
    import numpy as np

    import popxl
    import popxl.ops as ops

    ir = popxl.Ir()
    with ir.main_graph:
        weights = [popxl.variable(np.full((4, 4), index + 1, np.float32), name=f"scaling_weight_{index}")
                   for index in range(6)]
        x = ops.host_load(popxl.h2d_stream([4, 4], popxl.float32, name="x"))
        with popxl.name_scope("left"):
            left = ops.gelu(ops.relu(ops.gelu(ops.relu(ops.gelu(x)))))
        kinds = (ops.mul, ops.add, ops.sub, ops.div, ops.matmul, ops.maximum)
        mixed = ops.relu(ops.gelu(ops.relu(ops.concat([kind(x, weight) for kind, weight in zip(kinds, weights)]))))
        with popxl.name_scope("right"):
            right = ops.gelu(ops.relu(ops.gelu(ops.relu(ops.gelu(x)))))
        out = ops.concat([left, mixed, right], axis=0)
        ops.host_store(popxl.d2h_stream(out.shape, out.dtype, name="y"), out)
    return ir


def test_the_pictures_own_nodes_between_two_frames_wrap_into_rows_where_too_wide():
    """Six ops of main's own between its two opened scopes in a 630-px output were cut to ``mul · s…`` in one
    row; they wrap into rows between the frames, as a frame's own nodes do, their weights named."""
    from picture_pixels import overlap

    view = GraphView(between_two_scopes(), grouped=True, live=False)
    view.fit(630)
    view.refresh()
    for group in view.groups.children:
        view.open_group(group.id)
    assert [box.label.split(" (")[0] for box in view.picture.boxes] == ["▾ left", "▾ right"]
    labels = written(view)
    between = [key for key, node in view.picture.nodes.items() if "scaling_weight" in node.caption]
    assert len(between) == 6 and all("scaling_" in labels[key] for key in between)
    assert len({view.layout.positions[key][1] for key in between}) >= 2
    pixels = Pixels(view.figure, view.width)
    assert len(pixels.labels) == len(pixels.nodes)
    assert all(0 <= left and right <= pixels.width for left, _, right, _, _ in pixels.labels)
    assert not any(overlap(first[:4], second[:4]) for index, first in enumerate(pixels.labels)
                   for second in pixels.labels[index + 1:])
