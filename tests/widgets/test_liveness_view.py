"""LivenessView: memory per IPU over the schedule (stacked by kind, with capacity) and code liveness."""
import json
import re

import numpy as np

import popxl
import popxl.ops as ops
from widget_programs import add_one, chain, trace
from workbench.analysis import code_liveness, flattened_schedule, tensor_liveness
from workbench.analysis.code_size import graph_code_bytes
from workbench.analysis.gradient_names import gradient_label, gradient_sources
from workbench.ir.device import device_for
from workbench.widgets import LivenessView
from workbench.widgets.figures import liveness_figure
from workbench.widgets.figures.liveness_hover import point_hover
from workbench.widgets.style import KIND_COLORS, KIND_LABELS, binary_ticks, format_bytes


def two_ipu_program():
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([64], popxl.float32, name="x")
        x = ops.host_load(x_stream, name="x")
        w = popxl.variable(np.full(64, 2.0, np.float32), name="w")
        y = ops.ipu_copy(x * w, 1)
        with popxl.ipu(1):
            z = ops.tanh(y) + popxl.constant(np.ones(64, np.float32), name="one")
            z_stream = popxl.d2h_stream(z.shape, z.dtype, name="z")
            ops.host_store(z_stream, z)
    return ir, x_stream, z_stream


def loaded_code_program():
    """main: load g's code, call g, call g again: code live from the load to the end of the last call."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.0, 2.0], np.float32), name="x")
        g = ir.create_graph(add_one, x)
        with popxl.in_sequence():
            ops.remote_code_load(g, destination="executable")
            (y,) = ops.call(g, x)
            (z,) = ops.call(g, y)
        stream = popxl.d2h_stream(z.shape, z.dtype, name="z")
        ops.host_store(stream, z)
    return ir, g, stream


def test_the_drawn_programs_compute_what_they_say():
    ir, x_stream, z_stream = two_ipu_program()
    data = np.linspace(-1, 1, 64, dtype=np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run({x_stream: data})
    np.testing.assert_allclose(outputs[z_stream], np.tanh(data * 2) + 1, rtol=1e-6)
    ir, g, stream = loaded_code_program()
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[stream], np.array([3.0, 4.0], np.float32))


def test_each_ipu_has_memory_stacked_by_kind_in_the_liveness_numbers():
    ir, _, _ = two_ipu_program()
    liveness = tensor_liveness(ir)
    figure = liveness_figure(liveness, {0: 1000, 1: 2000}, include_code=True)
    for ipu in (0, 1):
        for kind in ("variables", "constants", "intermediates", "code"):
            drawn = trace(figure, kind, ipu=ipu)
            values = [getattr(record, kind) for record in liveness.steps[ipu]]
            # a point at each step where the panel changes, and one at each end so the area spans the steps'
            # whole slots: between two points the line is flat (shape "hvh"), so every step reads its bytes
            x, y = list(drawn.x), list(drawn.y)
            assert x[0] == -0.5 and x[-1] == len(values) - 0.5 and y[0] == y[1] and y[-1] == y[-2]
            assert x[1] == 0 and x[-2] == len(values) - 1
            for step, value in enumerate(values):
                left = max(index for index, at in enumerate(x) if at <= step)
                assert y[left] == value, (kind, ipu, step)
            assert drawn.stackgroup == f"ipu{ipu}"
        assert trace(figure, "intermediates", ipu=ipu).line.color == KIND_COLORS["intermediate"]
    assert trace(figure, "variables", ipu=0).y[0] == 64 * 4  # w lives on IPU 0
    assert trace(figure, "constants", ipu=1).y[0] == 64 * 4  # one lives on IPU 1
    assert list(trace(figure, "device capacity", ipu=1).y) == [2000, 2000]


def test_hovering_a_step_lists_its_op_and_live_tensors():
    ir, _, _ = two_ipu_program()
    liveness = tensor_liveness(ir)
    figure = liveness_figure(liveness, {0: 10**9, 1: 10**9})
    flat = flattened_schedule(ir)
    drawn = trace(figure, "intermediates", ipu=0)
    mul_step = next(step.index for step in flat if step.op.type == "mul")
    hover = point_hover(drawn, list(drawn.x).index(mul_step))
    assert f"step {mul_step}: mul " in hover
    live_names = {allocation.tensor.name for allocation in liveness.steps[0][mul_step].live}
    assert live_names and all(f"<br>{name}: 256 B" in hover for name in live_names)  # of the step's graph


def test_a_steps_hover_lists_its_largest_live_tensors_naming_the_graph_of_those_of_another():
    from real_programs import transformer
    from workbench.widgets.figures.liveness_hover import HOVER_TENSORS

    ir, _ = transformer()
    view = LivenessView(ir, live=False)
    drawn = trace(view.figure, "intermediates", ipu=0)
    points = list(drawn.x)
    step = next(s for s in view.liveness.flat if s.graph.name.endswith("forward_grad") and s.op.type == "reshape"
                and s.index in points and any(a.tensor.graph is not s.graph for a in view.liveness.steps[0][s.index].live))
    hover, live = point_hover(drawn, points.index(step.index)), view.liveness.steps[0][step.index].live
    assert f"in {step.graph.label}</b>" in hover and len(live) > HOVER_TENSORS
    listed = hover.split("</b>")[1].split("<br>intermediates: ")[1].split("<br>")[1:-1]
    assert len(listed) == HOVER_TENSORS and hover.endswith(f"... and {len(live) - HOVER_TENSORS} more")
    largest = sorted(live, key=lambda a: -a.nbytes)[:HOVER_TENSORS]
    sources = gradient_sources(ir)
    for line, allocation in zip(listed, largest):
        assert line.startswith(gradient_label(allocation.tensor, sources))
        assert (f" ({allocation.tensor.graph.label}):" in line) == (allocation.tensor.graph is not step.graph)


def test_a_gradient_in_a_hover_says_which_variable_it_is_the_gradient_of():
    from real_programs import transformer

    ir, _ = transformer()
    view = LivenessView(ir, live=False)
    drawn = trace(view.figure, "intermediates", ipu=0)
    hovers = [point_hover(drawn, index) for index in range(len(drawn.x))]
    assert any("<br>∂\u00a0layer5.ff2 (Gradient___ws_23): 16 KiB" in hover for hover in hovers)
    assert not any("<br>Gradient___ws_" in hover for hover in hovers)  # every weight's gradient is named


def test_the_transformers_memory_crosses_the_comm_in_under_140_kb_with_every_steps_hover_intact():
    """427 KB when each point carried its whole hover (440 KB over the comm in show()): now each run of lines
    of live tensors that points share is written once and named by index (a line of one point only is written
    in its template), a kind's bytes that never change are said once, and steps where nothing changes have no
    point (127 KB, gradients named by their variables)."""
    from real_programs import transformer
    from workbench.widgets.figure_canvas import figure_json
    from workbench.widgets.figures.liveness_hover import intermediates_block

    ir, _ = transformer()
    view = LivenessView(ir, live=False)
    assert len(json.dumps(figure_json(view.figure))) < 140_000
    sources = gradient_sources(ir)
    for ipu in (0, 1):
        drawn = trace(view.figure, "intermediates", ipu=ipu)
        points = list(drawn.x)
        assert len(points) < 0.6 * len(view.liveness.flat)  # 547 steps
        for step in range(len(view.liveness.flat)):  # the hover nearest a step says what is live at it
            nearest = min(range(1, len(points) - 1), key=lambda index: abs(points[index] - step))
            hover = point_hover(drawn, nearest)
            assert hover.endswith(intermediates_block(view.liveness, view.liveness.steps[ipu][step], sources))
            if points[nearest] != step:  # a step left out lies in a run that its neighbour's hover spans
                low, high = sorted((int(points[nearest]), int(points[nearest + (1 if points[nearest] < step else -1)])))
                assert low < step < high
                assert f"the same through step {high}" in hover or f"the same since step {low}" in hover
        assert trace(view.figure, "variables", ipu=ipu).hovertext == \
            f"{KIND_LABELS['variable']}: {format_bytes(view.liveness.steps[ipu][0].variables)}"


def test_the_capacity_line_is_in_range_only_when_memory_comes_near_it():
    ir, _, _ = two_ipu_program()
    liveness = tensor_liveness(ir)
    peak = max(liveness.totals(0))
    near = liveness_figure(liveness, {0: 2 * peak, 1: 10**9}, include_code=True)
    assert near.layout.yaxis.range[1] >= 2 * peak
    far = liveness_figure(liveness, {0: 100 * peak, 1: 10**9}, include_code=True)
    assert far.layout.yaxis.range[1] == peak * 1.25
    assert "% of" in far.layout.annotations[0].text  # the panel title gives the share of capacity


def test_a_program_above_the_capacity_is_warned_of_in_its_panel_title_by_how_much():
    ir, _, _ = two_ipu_program()
    liveness = tensor_liveness(ir)
    peak = max(liveness.totals(0))
    over = liveness_figure(liveness, {0: peak // 2, 1: 10**9}, include_code=True)
    title, roomy = over.layout.annotations[0].text, over.layout.annotations[1].text
    assert f"⚠ {format_bytes(peak - peak // 2)} over its memory: the program does not fit" in title
    assert "⚠" not in roomy  # IPU 1 holds its part
    assert all(len(re.sub("<[^>]+>", "", line)) <= 60 for line in title.split("<br>"))  # fits a 630-px output


def test_code_bars_run_from_the_load_to_the_end_of_the_last_call_with_markers():
    ir, g, _ = loaded_code_program()
    liveness = tensor_liveness(ir)
    record = code_liveness(ir)[g]
    figure = liveness_figure(liveness, {0: 10**9})
    loaded = trace(figure, "code loaded")
    (start, end), = record.intervals
    assert list(loaded.y) == [g.label] and list(loaded.base) == [start - 0.5] and list(loaded.x) == [end - start + 1]
    assert start == record.load_steps[0]
    assert list(trace(figure, "remote_code_load").x) == record.load_steps
    assert sorted(trace(figure, "call").x) == sorted(
        step for r in liveness.code.values() for step in r.call_steps)
    # Only graphs whose code is loaded get a row; the always-live main graph is counted in the title.
    assert not [t for t in figure.data if t.name == "code always live"]
    assert figure.layout.annotations[-1].text == "Code loaded and freed per graph (1 more always live)"


def test_the_view_uses_the_device_capacity_and_a_sessions_own_report():
    ir, _, _ = two_ipu_program()
    view = LivenessView(ir, live=False)
    capacity = device_for("ipu_model").bytes_per_ipu
    assert list(trace(view.figure, "device capacity", ipu=0).y) == [capacity, capacity]
    session = popxl.Session(ir, "ipu_model")
    bound = LivenessView(session, live=False)
    assert bound.report is session.memory_report


def test_clicking_a_step_selects_its_op_and_marks_its_steps():
    ir, g, _ = loaded_code_program()
    view = LivenessView(ir, live=False)
    flat = view.liveness.flat
    add_step = next(step for step in flat if step.op.type == "add")
    view._click(add_step.index)
    assert view.selection.step == add_step.index and view.selection.op is add_step.op
    # g is called twice, so its add runs at two steps of the flattened schedule
    marked = [shape.x0 for shape in view.figure.layout.shapes if shape.name == "selected step"]
    assert marked == [step.index for step in flat if step.op is add_step.op] and len(marked) == 2


def test_a_graph_of_as_many_steps_as_a_panel_draws_has_one_point_per_step():
    from workbench.widgets.figures.liveness_figure import DRAWN_STEPS

    ir, _, _ = chain(DRAWN_STEPS)
    view = LivenessView(ir, live=False)
    assert len(view.liveness.flat) == DRAWN_STEPS
    assert len(trace(view.figure, "intermediates", ipu=0).x) == DRAWN_STEPS + 2  # each step changes; one at each end


def test_more_steps_than_a_panel_can_show_are_drawn_by_the_peak_of_each_span_so_the_figure_stays_small():
    from workbench.widgets.figures.liveness_figure import DRAWN_STEPS, peak_steps

    assert list(peak_steps([1, 5, 2, 0, 9, 3, 7], 3)) == [1, 4, 6]  # the last span is short
    ir, _, _ = chain(3 * DRAWN_STEPS)
    view = LivenessView(ir, live=False, include_code=True)
    figure = view.figure
    totals = view.liveness.totals(0)
    for kind in ("variables", "constants", "intermediates", "code"):
        drawn = trace(figure, kind, ipu=0)
        assert len(drawn.x) <= DRAWN_STEPS + 2  # and one at each end
    drawn = trace(figure, "intermediates", ipu=0)
    steps = list(drawn.customdata[1:-1])
    assert max(totals[s] for s in steps) == max(totals)  # the peak is drawn
    assert all(totals[s] == max(totals[s - s % 3:s - s % 3 + 3]) for s in steps)  # each span's largest step
    assert point_hover(drawn, 1).startswith(f"<b>step {steps[0]}:")  # its hover is that step's
    assert "each point is the step of most memory of its span of 3 steps" in figure.layout.title.text
    assert len(figure.to_json()) < 1_500_000


def spiked_chain(count: int, spike: int):
    """``count`` tanhs of float32[4], but the one at ``spike`` is 64 copies of its input concatenated (1 KiB,
    live for two steps), of which it keeps the first: a spike of memory a span's other steps do not have."""
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([4], popxl.float32, name="x")
        x = ops.host_load(x_stream)
        for index in range(count):
            x = ops.concat([x] * 64, axis=0)[:4] if index == spike else ops.tanh(x)
        y_stream = popxl.d2h_stream(x.shape, x.dtype, name="y")
        ops.host_store(y_stream, x)
    return ir, x_stream, y_stream


def assert_the_peak_is_drawn_and_marked(view) -> int:
    """The star on each panel stands at the step and bytes of the analysis's largest stack of what is drawn
    (code left out here), the stacked areas reach those bytes at a point of that step, and the title names it.
    Returns IPU 0's peak step."""
    kinds = [kind for kind in ("variables", "constants", "intermediates", "code")
             if [t for t in view.figure.data if t.name == kind and (t.meta or {}).get("ipu") == 0]]
    for row, ipu in enumerate(view.liveness.ipus):
        stacked = [sum(getattr(record, kind) for kind in kinds) for record in view.liveness.steps[ipu]]
        step = max(range(len(stacked)), key=stacked.__getitem__)
        (star,) = [t for t in view.figure.data if t.name == "peak" and t.xaxis == ("x" if row == 0 else f"x{row + 1}")]
        assert (list(star.x), list(star.y), list(star.customdata)) == ([step], [stacked[step]], [step])
        drawn = trace(view.figure, "intermediates", ipu=ipu)
        point = list(drawn.customdata[1:-1]).index(step) + 1  # past the point at -0.5, which repeats the first
        assert drawn.x[point] == step
        assert sum(trace(view.figure, kind, ipu=ipu).y[point] for kind in kinds) == stacked[step]
        assert f" at step {view.report.ipu(ipu).peak_step} " in view.figure.layout.annotations[row].text
    return max(range(len(view.liveness.steps[0])), key=lambda s: view.liveness.steps[0][s].total)


def test_the_peak_of_a_span_of_steps_drawn_as_one_point_is_drawn_exactly_and_marked():
    from workbench.widgets.figures.liveness_figure import DRAWN_STEPS

    count = 3 * DRAWN_STEPS
    ir, x_stream, y_stream = spiked_chain(count, spike=count // 2)
    data = np.linspace(-1, 1, 4, dtype=np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        expected = data
        for _ in range(count - 1):
            expected = np.tanh(expected)
        np.testing.assert_allclose(session.run({x_stream: data})[y_stream], expected, rtol=1e-5)
    view = LivenessView(ir, live=False)
    span = -(-len(view.liveness.flat) // DRAWN_STEPS)
    peak = assert_the_peak_is_drawn_and_marked(view)
    assert span == 4 and peak % span != 0  # not the first step of its span, which a stride would draw
    assert view.liveness.steps[0][peak].intermediates > 64 * 16  # the concatenation's KiB
    star = trace(view.figure, "peak")
    assert star.hovertext[0].startswith(f"<b>step {peak}: concat ") and star.hovertext[0].endswith(
        f"<br>peak of the tensors: {format_bytes(star.y[0])}")


def test_the_memory_of_a_10003_op_program_crosses_the_comm_in_under_150_kb_with_its_peak_intact():
    """476 KB when every fifth step of its 10,003 was drawn, each line of its hover named by index: now at most
    DRAWN_STEPS points (more than a panel has pixels), each about 130 B of hover (its step, op and the 3 tensors
    live there, a line no other point shows written in place) and 20 B of x, y and click key in three traces,
    under 3 KB of layout: 138 KB."""
    from real_programs import wide_program
    from workbench.widgets.figure_canvas import figure_json
    from workbench.widgets.figures.liveness_figure import DRAWN_STEPS

    view = LivenessView(wide_program(), live=False)
    assert len(view.liveness.flat) == 10_003
    assert len(json.dumps(figure_json(view.figure))) < 150_000
    assert len(trace(view.figure, "intermediates", ipu=0).x) <= DRAWN_STEPS + 2
    assert_the_peak_is_drawn_and_marked(view)


def test_memory_ticks_are_binary_like_the_titles():
    ticks = binary_ticks(5 * 1024 * 1024)
    assert ticks["tickvals"] == [index * 1024 * 1024 for index in range(6)]
    assert ticks["ticktext"] == ["0 B", "1 MiB", "2 MiB", "3 MiB", "4 MiB", "5 MiB"]
    assert binary_ticks(3000)["ticktext"] == ["0 B", "512 B", "1 KiB", "1.5 KiB", "2 KiB", "2.5 KiB"]
    ir, *_ = chain(20)
    figure = LivenessView(ir, live=False).figure
    memory_axis = figure.layout.yaxis
    assert memory_axis.tickmode == "array" and memory_axis.ticktext
    assert all(label.endswith(("B", "KiB", "MiB")) for label in memory_axis.ticktext)


def test_code_can_be_left_out_so_the_tensors_fill_the_scale():
    ir, *_ = chain(20)
    view = LivenessView(ir, include_code=True, live=False)
    kinds = {t.meta["kind"] for t in view.figure.data if (t.meta or {}).get("ipu") == 0}
    with_code = view.figure.layout.yaxis.range[1]
    (toggle,) = [child for child in view.widget.children if hasattr(child, "description")]
    toggle.value = False
    assert not view.include_code
    without = {t.meta["kind"] for t in view.figure.data if (t.meta or {}).get("ipu") == 0}
    assert "code" in kinds and without == kinds - {"code"}
    assert view.figure.layout.yaxis.range[1] < with_code


def test_a_capacity_far_above_the_peak_is_said_to_be_off_the_scale():
    ir, *_ = chain(20)
    title = LivenessView(ir, live=False, include_code=True).figure.layout.annotations[0].text
    assert title.endswith("<br>capacity far above, off the scale")  # on its own line
    view = LivenessView(ir, live=False)  # code left out: the scale is the tensors', below the peak in the title
    assert view.figure.layout.annotations[0].text.endswith("<br>capacity far above the tensors shown, off the scale")
    peak = max(record.total for record in view.liveness.steps[0])
    figure = liveness_figure(view.liveness, {0: peak * 2}, include_code=True)
    assert "off the scale" not in figure.layout.annotations[0].text


def test_with_code_left_out_the_title_gives_the_peak_of_the_tensors_drawn_as_well():
    ir, *_ = chain(20)
    view = LivenessView(ir, live=False)  # code dwarfs these tensors: left out
    records = view.liveness.steps[0]
    drawn = [record.total - record.code for record in records]
    top = max(range(len(drawn)), key=drawn.__getitem__)
    lines = view.figure.layout.annotations[0].text.split("<br>")
    assert " with code at step " in lines[0]  # the peak with code: far above the panel's scale
    assert lines[1].startswith(f"tensors: peak {format_bytes(drawn[top])} at step {records[top].step}")
    assert view.figure.layout.yaxis.range[1] >= drawn[top]  # the number read on the title is on the scale
    with_code = LivenessView(ir, live=False, include_code=True).figure.layout.annotations[0].text
    assert "tensors: peak" not in with_code and "with code" not in with_code


def test_by_default_code_that_would_dwarf_the_tensors_is_left_out_and_all_code_always_live_is_one_line():
    ir, *_ = chain(20)
    liveness = tensor_liveness(ir)
    record = liveness.steps[0][0]
    assert record.code > 2 * (record.total - record.code)  # code dwarfs these few small tensors
    view = LivenessView(ir, live=False)
    figure = view.figure
    assert "code" not in {t.meta["kind"] for t in figure.data if (t.meta or {}).get("ipu") == 0}
    title = figure.layout.title.text
    assert "code left out of the memory panels: it would dwarf the tensors" in title
    (graph,) = ir.graphs
    size = format_bytes(sum(graph_code_bytes(graph).values()))
    assert f"all code is always live, none loaded with remote_code_load: main {size}" in title
    assert [a.text for a in figure.layout.annotations if a.text.startswith("Code")] == []  # no code panel
    (toggle,) = [child for child in view.widget.children if hasattr(child, "description")]
    assert toggle.value is False
    toggle.value = True
    assert "code" in {t.meta["kind"] for t in view.figure.data if (t.meta or {}).get("ipu") == 0}


def phased_program():
    """Two layers whose weights live in Streaming Memory, run one phase each as a phased program does:
    a graph loads the layer's weights, the layer runs, a graph stores the weights back."""
    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((16, 16), popxl.float32, entries=2)
        for layer in (0, 1):
            popxl.remote_variable(np.eye(16, dtype=np.float32) * (layer + 2), buffer, layer, name=f"layer{layer}.w")

        def load(index: popxl.Tensor):
            return ops.remote_load(buffer, index, name="w")

        def store(index: popxl.Tensor, w: popxl.Tensor):
            ops.remote_store(buffer, index, w)

        def layer(x: popxl.Tensor, w: popxl.Tensor):
            return ops.gelu(x @ w)

        load_graph = ir.create_graph(load, popxl.constant(0, popxl.int32))
        store_graph = ir.create_graph(store, popxl.constant(0, popxl.int32), popxl.TensorSpec((16, 16), popxl.float32))
        x_stream = popxl.h2d_stream((4, 16), popxl.float32, name="x")
        x = ops.host_load(x_stream)
        layer_graph = ir.create_graph(layer, x, popxl.TensorSpec((16, 16), popxl.float32))
        with popxl.in_sequence(True):
            for row in (0, 1):
                index = popxl.constant(row, popxl.int32)
                (w,) = ops.call(load_graph, index)
                (x,) = ops.call(layer_graph, x, w)
                ops.call(store_graph, index, w)
        out = popxl.d2h_stream((4, 16), popxl.float32, name="out")
        ops.host_store(out, x)
    return ir


def test_a_phased_program_shows_its_streaming_memory_and_where_each_phase_loads_and_stores_weights():
    from workbench.analysis.memory import streaming_transfers

    ir = phased_program()
    flat = flattened_schedule(ir)
    transfers = streaming_transfers(flat)
    assert [(t.direction, flat.steps[t.step].op.type, flat.steps[t.step].graph.label) for t in transfers] == [
        ("load", "remote_load", "phased_program.load"), ("store", "remote_store", "phased_program.store")] * 2
    assert all(t.nbytes == 16 * 16 * 4 and t.ipu == 0 for t in transfers)
    figure = LivenessView(ir, live=False).figure
    assert figure.layout.annotations[0].text.endswith(
        " · Streaming Memory 2 KiB<br>capacity far above the tensors shown, off the scale")
    marks = {t.meta["kind"]: t for t in figure.data if (t.meta or {}).get("kind", "").startswith("remote_")}
    assert list(marks) == ["remote_load", "remote_store"]
    assert list(marks["remote_load"].x) == [t.step for t in transfers if t.direction == "load"]
    assert marks["remote_load"].name == "loaded from Streaming Memory"
    assert "loaded from Streaming Memory: w (1 KiB)" in marks["remote_load"].hovertext[0]
    stacked = [r.variables + r.constants + r.intermediates for r in tensor_liveness(ir).steps[0]]
    assert list(marks["remote_store"].y) == [stacked[t.step] for t in transfers if t.direction == "store"]


def test_a_program_without_streaming_memory_has_no_transfer_marks_and_says_nothing_of_it():
    ir, _, _ = two_ipu_program()
    figure = LivenessView(ir, live=False).figure
    assert not [t for t in figure.data if (t.meta or {}).get("kind", "").startswith("remote_")]
    assert not any("Streaming Memory" in (a.text or "") for a in figure.layout.annotations)


def test_an_ir_whose_main_graph_calls_nothing_says_why_its_memory_is_empty():
    """As a tutorial's first cells build module graphs without calling them."""
    ir = popxl.Ir()
    with ir.main_graph:
        for n in range(2):
            ir.create_graph(lambda x: x * 2.0, popxl.TensorSpec((2,), popxl.float32))
    title = LivenessView(ir, live=False).figure.layout.title.text
    assert "<sup>the main graph has no ops, so nothing runs: 2 graphs built, none called from it</sup>" in title


def test_a_replicated_program_says_its_memory_is_each_replicas():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        popxl.variable(np.ones(8, np.float32), name="w") + 1.0
    title = LivenessView(ir, live=False).figure.layout.title.text
    assert "<sup>per replica: each of the 4 replicas has these IPUs and this memory</sup>" in title
    alone, _, _ = two_ipu_program()
    assert "per replica" not in LivenessView(alone, live=False).figure.layout.title.text


def test_panel_titles_start_at_their_panels_left_edge_with_each_line_short_enough_for_a_630_px_output():
    """Centred, a title longer than its panel ran off a narrow output's left edge: each starts at its
    panel's left edge instead, its parts after the peak on the lines below, and the gap above each panel
    grows by those lines."""
    from workbench.widgets.figures.liveness_figure import PANEL_GAP, PANEL_TITLE_CHARS, PANEL_TITLE_LINE, PANEL_TITLE_SIZE

    ir = phased_program()
    figure = LivenessView(ir, live=False).figure
    ir2, _, _ = two_ipu_program()
    two = LivenessView(ir2, live=False).figure
    for title in [*figure.layout.annotations, *two.layout.annotations]:
        assert (title.x, title.xanchor, title.xref, title.font.size) == (0.0, "left", "paper", PANEL_TITLE_SIZE)
        # at 13 px a character takes at most 8 px: 60 of them fit beside the y axis (70 px) in 630 px
        assert all(len(line) <= PANEL_TITLE_CHARS == 60 for line in title.text.split("<br>")), title.text
    assert figure.layout.annotations[0].text.count("<br>") == 2  # the peak; Streaming Memory; the capacity
    (upper, lower) = two.layout.yaxis.domain, two.layout.yaxis2.domain
    plot_height = two.layout.height - two.layout.margin.t - two.layout.margin.b
    extra_lines = max(title.text.count("<br>") for title in two.layout.annotations)
    assert extra_lines == 2  # the peak with code; the tensors' peak; the capacity
    assert round((upper[0] - lower[1]) * plot_height) == PANEL_GAP + extra_lines * PANEL_TITLE_LINE


def test_without_code_loading_one_line_names_the_graphs_whose_code_costs_most_largest_first():
    from real_programs import transformer

    ir, _ = transformer(layers=2)
    title = LivenessView(ir, live=False).figure.layout.title.text
    sizes = {graph.label: sum(graph_code_bytes(graph).values()) for graph in ir.graphs}
    order = sorted(sizes, key=lambda label: -sizes[label])
    assert order == ["transformer.forward_grad", "transformer.forward", "main"]
    first, second, third = (f"{label} {format_bytes(sizes[label])}" for label in order)
    # lines of at most 100 characters: within a 630-px output
    assert (f"<sup>all code is always live, none loaded with remote_code_load: {first},</sup>"
            f"<br><sup>{second}, {third}</sup>") in title


def test_a_long_schedule_counts_its_steps_with_thousands_separated():
    ir, _, _ = chain(1205)
    assert LivenessView(ir, live=False).figure.layout.title.text.startswith("Memory over 1,205 schedule steps")


def test_intermediates_thin_on_a_scale_of_weights_get_their_peak_in_the_panels_title():
    from real_programs import resnet50_session

    view = LivenessView(resnet50_session()._workbench_source(), live=False)
    records = view.liveness.steps[0]
    busiest = max(records, key=lambda record: record.intermediates)
    assert busiest.intermediates < 0.1 * max(record.total for record in records)  # 9 MiB on 143 MiB
    lines = view.figure.layout.annotations[0].text.split("<br>")
    assert lines[1] == f"intermediates: peak {format_bytes(busiest.intermediates)} at step {busiest.step}"
    from real_programs import transformer

    ipu1 = LivenessView(transformer(layers=2)[0], live=False).figure.layout.annotations[1].text
    assert ipu1.startswith("IPU 1") and "intermediates: peak" not in ipu1  # its intermediates fill its scale


def gradient_store_program():
    """A training step that stores the gradient of its weight to Streaming Memory: the stored tensor is the
    gradient graph's output, which popxl names after the forward graph's input ('Gradient___ws_0')."""
    from popxl.transforms import autodiff

    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.ones((4, 4), np.float32), name="layer0.w")
        x_stream = popxl.h2d_stream((2, 4), popxl.float32, name="x")
        x = ops.host_load(x_stream)
        forward = ir.create_graph(lambda x, *ws: ops.mean(ops.gelu(x @ ws[0])), x, w)
        info = autodiff(forward, grads_required=forward.inputs[1:])
        site = ops.call_with_info(forward, x, w)
        (gradient,) = ops.call(info.graph, popxl.constant(1.0, popxl.float32), inputs_dict=info.inputs_dict(site))
        buffer = popxl.remote_buffer((4, 4), popxl.float32, entries=1)
        ops.remote_store(buffer, 0, gradient)
    return ir


def test_a_stored_gradients_transfer_mark_says_whose_gradient_it_is():
    ir = gradient_store_program()
    figure = LivenessView(ir, live=False).figure
    (mark,) = [t for t in figure.data if (t.meta or {}).get("kind") == "remote_store"]
    assert mark.hovertext[0].endswith("<br>stored to Streaming Memory: ∂\u00a0layer0.w (Gradient___ws_0) (64 B)")


def test_lines_that_neighbouring_hovers_show_side_by_side_are_named_as_one_run():
    from workbench.widgets.figures.liveness_hover import shared_runs

    blocks = [["64 B", "a", "b", "c"], ["64 B", "a", "b", "d"], ["96 B", "a", "b", "d"], ["96 B", "e"]]
    # a pair stays together where the blocks on both sides have it side by side too
    assert shared_runs(blocks) == [["64 B<br>a<br>b", "c"], ["64 B", "a<br>b", "d"], ["96 B", "a", "b", "d"],
                                   ["96 B", "e"]]
    assert ["<br>".join(runs) for runs in shared_runs(blocks)] == ["<br>".join(block) for block in blocks]
