"""The graph figure in pixels, as a notebook of the assumed width shows it: on realistic graphs no two
nodes or labels overlap, no edge runs through a node or label that is not one of its ends, and the
whole picture lies inside the width; every label lies whole inside the frames (expanded calls, opened
groups) of its node and outside the others, and no frame's title covers a label; and the edges of each
cross no more often than measured (the transformer's main graph, its optimizer's 48 ops wrapped into
rows, not at all)."""
import html
import math

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from real_programs import resnet50_session, transformer, wide_program
from support.programs import mlp_training
from workbench.widgets import GraphView
from workbench.widgets.figures.graph_figure import ARROW_TRACE, OPENED_TRACE
from workbench.widgets.figures.picture_labels import CHAR_WIDTH, MARGIN
from workbench.widgets.style import PICTURE_WIDTH

LABEL_HEIGHT = 12  # pixels a 10 px label takes vertically
LABEL_GAP = 2  # pixels between a marker's edge and its label, as plotly draws "middle right" text


def gradient_graph(layers: int):
    ir, _ = mlp_training(layers=layers)
    return ir, next(graph for graph in ir.graphs if graph.name.endswith("forward_grad"))


def step_graph():
    ir, _ = mlp_training()
    return ir, next(graph for graph in ir.graphs if graph.name.endswith(".step"))


class Pixels:
    """Maps a figure's data coordinates to pixels of its plot area, and lists its nodes, labels and
    edge paths there."""

    def __init__(self, figure, width: int = PICTURE_WIDTH):
        layout = figure.layout
        self.width = width - 2 * MARGIN
        self.height = layout.height - layout.margin.t - layout.margin.b
        self.x_range, self.y_range = layout.xaxis.range, layout.yaxis.range
        self.nodes, self.labels, self.paths = [], [], []
        self.arrows = []  # (the point before the edge's end, its end, the arrowhead's size, its standoff)
        self.frames = [(*self.point(shape.x0, shape.y1), *self.point(shape.x1, shape.y0))
                       for shape in layout.shapes if shape.type == "rect"]
        self.titles = []  # frames' titles: (left, top, right, bottom), written above a frame's top left corner
        for note in layout.annotations:
            left, bottom = self.point(note.x, note.y)
            self.titles.append((left, bottom - LABEL_HEIGHT, left + len(html.unescape(note.text)) * CHAR_WIDTH, bottom))
        for trace in figure.data:
            if trace.mode == "lines":
                self.paths += self._paths(trace)
            elif trace.name == ARROW_TRACE:
                points = [self.point(x, y) for x, y in zip(trace.x, trace.y)]  # per edge: where its last
                self.arrows += list(zip(points[::2], points[1::2],  # segment starts, and its end
                                        trace.marker.size[1::2], trace.marker.standoff[1::2]))
                assert not any(trace.marker.size[::2])  # the starts unseen
            elif trace.name not in ("search matches", "selected", OPENED_TRACE):  # rings, and boxes' title marks
                self._add_nodes(trace)
        self.centres = np.array([(x, y) for x, y, _ in self.nodes])
        self.radii = np.array([size / 2 for _, _, size in self.nodes])

    def point(self, x, y):
        (x0, x1), (y0, y1) = self.x_range, self.y_range
        return (x - x0) / (x1 - x0) * self.width, (y1 - y) / (y1 - y0) * self.height

    def _add_nodes(self, trace):
        sizes = np.broadcast_to(trace.marker.size, len(trace.x))
        position = "middle right" if trace.textposition is None else trace.textposition
        sides = np.broadcast_to(np.asarray(position, dtype=object), len(trace.x))
        for x, y, size, label, side in zip(trace.x, trace.y, sizes, trace.text, sides):
            x, y = self.point(x, y)
            self.nodes.append((x, y, size))
            if "text" in trace.mode and label:
                width = len(label) * CHAR_WIDTH
                left = x + size / 2 + LABEL_GAP if side == "middle right" else x - size / 2 - LABEL_GAP - width
                self.labels.append((left, y - LABEL_HEIGHT / 2, left + width, y + LABEL_HEIGHT / 2,
                                    len(self.nodes) - 1))

    def _paths(self, trace):
        paths, current = [], []
        for x, y in zip(trace.x, trace.y):
            if x is None or (isinstance(x, float) and math.isnan(x)):
                paths.append(current)
                current = []
            else:
                current.append(self.point(x, y))
        return paths + ([current] if current else [])

    def node_at(self, point) -> int:
        return int(np.argmin(np.hypot(*(self.centres - point).T)))


def segment_distances(points: np.ndarray, start, end) -> np.ndarray:
    """Distance from each of ``points`` to the segment from ``start`` to ``end``."""
    start, end = np.asarray(start), np.asarray(end)
    along = end - start
    t = np.clip(((points - start) @ along) / max(along @ along, 1e-12), 0, 1)
    return np.hypot(*(points - (start + t[:, None] * along)).T)


SAMPLES = np.linspace(0, 1, 64)


def segment_crosses_boxes(start, end, boxes: np.ndarray) -> bool:
    """Whether the segment passes through any of the rectangles (rows of left, top, right, bottom), by
    sampling it."""
    xs = (start[0] + SAMPLES * (end[0] - start[0]))[:, None]
    ys = (start[1] + SAMPLES * (end[1] - start[1]))[:, None]
    left, top, right, bottom = boxes.T
    return bool(np.any((left < xs) & (xs < right) & (top < ys) & (ys < bottom)))


PICTURES = {
    "MLP backward graph, ops only": lambda: (gradient_graph(4), "auto"),
    "MLP backward graph, every tensor": lambda: (gradient_graph(4), "full"),
    "MLP training step": lambda: (step_graph(), "auto"),
    "300-op backward graph": lambda: (gradient_graph(49), "auto"),
    "transformer main graph, its 48 optimizer ops folded into rows": lambda: (transformer_main(), "auto"),
    "transformer main graph as it opens, its optimizer one group": lambda: (transformer_main(), "auto"),
    "10,003-op program grouped, a group open in an open group": lambda: (wide(), "auto", open_first_groups),
    "transformer main graph in a 630-px output": lambda: (transformer_main(), "auto", fit_630),
    "ResNet-50 op by op": lambda: (resnet_main(), "auto"),
    "transformer forward graph in a 630-px output": lambda: (transformer_forward(), "auto", fit_630),
    "transformer main graph, its forward call expanded": lambda: (transformer_main(), "auto", expand_forward_call),
    "transformer main graph in a 630-px output, its forward call expanded":
        lambda: (transformer_main(), "auto", fit_630, expand_forward_call),
    "transformer backward graph grouped": lambda: (transformer_backward(), "auto"),
    "transformer backward graph grouped, a layer open in its IPU's group":
        lambda: (transformer_backward(), "auto", open_path("IPU 0", "layer2")),
    "ResNet-50 grouped, a stage and a block in it open": lambda: (resnet_main(), "auto", open_resnet_block),
    "a call inside a call, both expanded": lambda: (nested_calls(), "auto", expand_both_calls),
    "a call inside a call, both expanded, every tensor": lambda: (nested_calls(), "full", expand_both_calls),
}


def transformer_backward():
    ir = transformer()[0]
    return ir, next(graph for graph in ir.graphs if graph.name.endswith("forward_grad"))


def open_path(*labels: str):
    """Opens the group of each label in turn, each a child of the one before (the first of the top level)."""
    def opens(view):
        view.grouped = True
        view.refresh()
        group = view.groups
        for label in labels:
            group = next(child for child in group.children if child.label == label)
            view.open_group(group.id)
        assert len(view.picture.boxes) == len(labels)
    return opens


def open_resnet_block(view):
    stage = next(child for child in view.groups.children if child.label == "res2")
    view.open_group(stage.id)
    view.open_group(stage.children[0].id)
    assert len(view.picture.boxes) == 2


def nested_calls():
    """main loads tokens and calls an encoder block, which normalises them and calls an attention graph."""
    ir = popxl.Ir()
    rng = np.random.default_rng(1)
    with ir.main_graph:
        tokens = popxl.h2d_stream([8, 16], popxl.float32, name="tokens")
        weights = [popxl.variable(rng.normal(size=(16, 16)).astype(np.float32), name=f"attention.{name}")
                   for name in ("query", "key", "value")]

        def attention(x, query, key, value):
            scores = ops.softmax((x @ query) @ ops.transpose(x @ key, (1, 0)) * 0.25, axis=1)
            return scores @ (x @ value)

        attention_graph = ir.create_graph(attention, popxl.TensorSpec((8, 16), popxl.float32), *weights)

        def encoder_block(x, query, key, value):
            centred = x - ops.mean(x, axis=1, keepdims=True)
            (mixed,) = ops.call(attention_graph, centred, query, key, value)
            return ops.gelu(mixed) + x

        block = ir.create_graph(encoder_block, popxl.TensorSpec((8, 16), popxl.float32), *weights)
        (out,) = ops.call(block, ops.host_load(tokens), *weights)
        ops.host_store(popxl.d2h_stream(out.shape, out.dtype, name="encoded"), out)
    return ir, ir.main_graph


def expand_both_calls(view):
    outer = next(op for op in view.graph.ops if op.type == "call")
    inner = next(op for op in outer.called_graphs[0].ops if op.type == "call")
    view.expand(outer)
    view.expand(outer, inner)
    assert len(view.picture.boxes) == 2


def expand_forward_call(view):
    view.expand(next(op for op in view.graph.ops if op.type == "call" and op.called_graphs[0].name.endswith("forward")))


def transformer_forward():
    ir = transformer()[0]
    return ir, next(graph for graph in ir.graphs if graph.name.endswith("forward"))


def fit_630(view):
    view.fit(630)
    assert view.width == 630


def resnet_main():
    ir = resnet50_session()._workbench_source()
    return ir, ir.main_graph


def transformer_main():
    ir = transformer()[0]
    return ir, ir.main_graph


def wide():
    ir = wide_program()
    return ir, ir.main_graph


def open_first_groups(view):
    """Opens the first run of scopes, and in it the first scope."""
    run = view.groups.children[0]
    view.open_group(run.id)
    view.open_group(run.children[0].id)
    assert len(view.picture.boxes) == 2


@pytest.fixture(params=list(PICTURES), scope="module")
def pixels(request):
    return drawn(request.param)


def drawn(name: str) -> Pixels:
    """The picture ``name`` of ``PICTURES`` in pixels."""
    (ir, graph), detail, *opener = PICTURES[name]()
    op_by_op = name.startswith(("300", "ResNet-50 op", "transformer main graph,", "transformer main graph in",
                                "transformer forward graph in"))  # their ops, not the groups they open as
    view = GraphView(ir, graph=graph, detail=detail, grouped=False if op_by_op else "auto", live=False)
    for opens in opener:
        opens(view)
    if name.startswith("300"):
        assert 290 <= len(graph.ops) <= 320
    return Pixels(view.figure, view.width)


def test_no_two_nodes_overlap(pixels):
    centres, radii = pixels.centres, pixels.radii
    for index in range(len(centres)):
        apart = np.hypot(*(centres[index + 1:] - centres[index]).T)
        assert np.all(apart >= radii[index + 1:] + radii[index]), "two nodes overlap"


def test_no_two_labels_overlap_and_no_label_covers_a_node(pixels):
    for index, (left, top, right, bottom, owner) in enumerate(pixels.labels):
        for other_left, other_top, other_right, other_bottom, _ in pixels.labels[index + 1:]:
            assert right <= other_left or other_right <= left or bottom <= other_top or other_bottom <= top
        near_x = np.clip(pixels.centres[:, 0], left, right)
        near_y = np.clip(pixels.centres[:, 1], top, bottom)
        inside = np.hypot(pixels.centres[:, 0] - near_x, pixels.centres[:, 1] - near_y) < pixels.radii
        inside[owner] = False
        assert not inside.any(), "a label covers a node"


def test_every_node_and_label_lies_inside_the_width(pixels):
    assert np.all(pixels.centres[:, 0] - pixels.radii >= 0)
    assert np.all(pixels.centres[:, 0] + pixels.radii <= pixels.width)
    assert all(right <= pixels.width for _, _, right, _, _ in pixels.labels)
    assert all(left >= 0 for left, _, _, _, _ in pixels.labels)


def test_no_edge_passes_through_a_node_or_label_that_is_not_its_end(pixels):
    assert pixels.paths
    boxes = np.array([box[:4] for box in pixels.labels], float).reshape(-1, 4)
    owners = np.array([box[4] for box in pixels.labels], int)
    for path in pixels.paths:
        ends = {pixels.node_at(path[0]), pixels.node_at(path[-1])}
        others = np.array([index not in ends for index in range(len(pixels.nodes))])
        strangers = boxes[~np.isin(owners, list(ends))]
        for start, end in zip(path, path[1:]):
            distances = segment_distances(pixels.centres, start, end)
            assert not np.any((distances < pixels.radii) & others), "an edge runs through a node"
            assert not segment_crosses_boxes(start, end, strangers), "an edge runs through a label"


def test_every_edge_ends_in_an_arrowhead_on_its_head_node_outline(pixels):
    """Each edge's last segment carries an arrowhead at its end, pointing down into the node it enters,
    its tip moved back from the node's centre to just outside its marker."""
    def rounded(point):
        return round(point[0], 3), round(point[1], 3)

    ends = {(rounded(path[-2]), rounded(path[-1])) for path in pixels.paths}
    assert {(rounded(before), rounded(end)) for before, end, _, _ in pixels.arrows} == ends
    for before, end, size, standoff in pixels.arrows:
        head = pixels.node_at(end)
        assert np.hypot(*(pixels.centres[head] - end)) < 1e-6
        assert before[1] < end[1] and abs(before[0] - end[0]) < 1e-6  # enters from straight above
        assert size >= 10
        assert pixels.radii[head] <= standoff <= pixels.radii[head] + 3


def overlap(first, second) -> bool:
    """Whether two rectangles (left, top, right, bottom) share more than an edge."""
    return first[0] < second[2] and second[0] < first[2] and first[1] < second[3] and second[1] < first[3]


def within(inner, outer) -> bool:
    return outer[0] <= inner[0] and inner[2] <= outer[2] and outer[1] <= inner[1] and inner[3] <= outer[3]


def test_every_label_lies_whole_inside_the_frames_of_its_node_and_clear_of_the_others(pixels):
    for frame in pixels.frames:
        for (x, y, size), radius in zip(pixels.nodes, pixels.radii):
            marker = (x - radius, y - radius, x + radius, y + radius)
            inside = frame[0] < x < frame[2] and frame[1] < y < frame[3]
            assert within(marker, frame) if inside else not overlap(marker, frame), "a frame cuts a node"
        for left, top, right, bottom, owner in pixels.labels:
            x, y, _ = pixels.nodes[owner]
            label = (left, top, right, bottom)
            if frame[0] < x < frame[2] and frame[1] < y < frame[3]:
                assert within(label, frame), "a label runs over the side of its frame"
            else:
                assert not overlap(label, frame), "a label runs into a frame its node is not in"


def test_no_frame_title_covers_a_label_a_node_or_another_title(pixels):
    markers = [(x - radius, y - radius, x + radius, y + radius) for (x, y, _), radius in zip(pixels.nodes, pixels.radii)]
    for index, title in enumerate(pixels.titles):
        assert 0 <= title[0] and title[2] <= pixels.width, "a frame's title runs off the picture"
        assert not any(overlap(title, label[:4]) for label in pixels.labels), "a frame's title covers a label"
        assert not any(overlap(title, marker) for marker in markers), "a frame's title covers a node"
        assert not any(overlap(title, other) for other in pixels.titles[index + 1:]), "two frames' titles overlap"


def test_the_frame_tests_see_a_label_over_a_frame():
    frame = (0, 0, 100, 50)
    assert within((10, 10, 90, 20), frame) and not within((10, 10, 110, 20), frame)
    assert overlap((90, 10, 110, 20), frame) and not overlap((100, 10, 120, 20), frame)


def test_a_segment_crosses_the_boxes_it_passes_through_only():
    boxes = np.array([[10, 10, 20, 20], [40, 0, 50, 5]], float)
    assert segment_crosses_boxes((0, 15), (30, 15), boxes)  # straight through the first
    assert not segment_crosses_boxes((0, 25), (30, 25), boxes)  # below it
    assert not segment_crosses_boxes((0, 0), (5, 5), boxes[:0])  # no boxes


def crossings(pixels) -> int:
    """How many times two edges' paths cross (segments that touch or share an end do not count)."""
    segments = np.array([(number, *start, *end) for number, path in enumerate(pixels.paths)
                         for start, end in zip(path, path[1:]) if start != end], float)
    count = 0
    for index, (number, x0, y0, x1, y1) in enumerate(segments):
        others = segments[index + 1:]
        others = others[others[:, 0] != number]
        _, u0, v0, u1, v1 = others.T
        side_start = (x1 - x0) * (v0 - y0) - (y1 - y0) * (u0 - x0)
        side_end = (x1 - x0) * (v1 - y0) - (y1 - y0) * (u1 - x0)
        side_first = (u1 - u0) * (y0 - v0) - (v1 - v0) * (x0 - u0)
        side_last = (u1 - u0) * (y1 - v0) - (v1 - v0) * (x1 - u0)
        count += int(np.sum((side_start * side_end < -1e-6) & (side_first * side_last < -1e-6)))
    return count


def test_the_crossing_count_counts_crossings():
    class Drawn:
        paths = [[(0, 0), (10, 10)], [(0, 10), (10, 0)], [(0, 0), (0, 10)], [(10, 10), (20, 10), (20, 0)]]
    assert crossings(Drawn()) == 1  # the two diagonals; paths that only touch at an end do not cross


# Crossings measured (before the optimizer's rows wrapped in bands and edges were routed through the rows
# they pass by fewest crossings, in brackets): the transformer's main graph 0 at 960 and 630 px (37 and 23, a
# lattice of edges to the wrapped all-reduces and from them to their updates), its forward graph at 630 px 27
# (43), ResNet-50 0 (0), the MLP's pictures 23, 17, 132 and 244 (23, 17, 134 and 244), the 10,003-op program 0
# (0); the MLP's training step 137 since a run of edges keeps to one lane where it can (its pictures 8, 4 and 81
# since folded layers are placed by the pixels each node and its label take, as the extension wraps them, and
# edges pass a row at lanes of one grid); the transformer's main
# graph with its forward call expanded 36 (802, when a dashed edge entered the body for each weight passed in and
# left it for each activation saved for the backward pass; 55 since its frame holds its labels, which moves the
# caller's ops beside it further out), 66 in a 630-px output; grouped pictures with groups open 0, and a call
# inside a call 2; the transformer's backward graph grouped 0 (12 while its 24 gradient outputs were folded into
# rows by columns rather than by the pixels of their labels). A little slack above each.
CROSSINGS_AT_MOST = {"MLP backward graph, ops only": 10, "MLP backward graph, every tensor": 6,
                     "MLP training step": 85, "300-op backward graph": 250,
                     "transformer main graph, its 48 optimizer ops folded into rows": 2,
                     "10,003-op program grouped, a group open in an open group": 2,
                     "transformer main graph in a 630-px output": 2, "ResNet-50 op by op": 2,
                     "transformer forward graph in a 630-px output": 30,
                     "transformer main graph, its forward call expanded": 60,
                     "transformer main graph in a 630-px output, its forward call expanded": 70,
                     "transformer backward graph grouped": 2,
                     "transformer main graph as it opens, its optimizer one group": 0,
                     "transformer backward graph grouped, a layer open in its IPU's group": 2,
                     "ResNet-50 grouped, a stage and a block in it open": 2,
                     "a call inside a call, both expanded": 4, "a call inside a call, both expanded, every tensor": 4}


def test_the_edges_of_real_graphs_cross_no_more_than_measured(pixels, request):
    assert crossings(pixels) <= CROSSINGS_AT_MOST[request.node.callspec.params["pixels"]]


def reversals(path) -> int:
    """How often a path turns back horizontally (right then left, or left then right)."""
    steps = [end[0] - start[0] for start, end in zip(path, path[1:]) if abs(end[0] - start[0]) > 0.5]
    return sum(1 for before, after in zip(steps, steps[1:]) if before * after < 0)


# Most turns back of one edge, measured (before a run of edges through wrapped rows kept to one lane, in
# brackets): the transformer's main graph 1 at 960 and at 630 px (21 and 45: the gradient call's run to its 48
# optimizer ops zigzagged between the lanes beside labels of two lengths), its forward graph at 630 px 8 (8),
# the MLP's pictures 3, 4, 3 and 2 (the same), the others 1 (1); the main graph with its forward call expanded 1
# (8 before its call's edges entered the body at its top and left it at its bottom), and 1 at most in the
# pictures of expanded calls and open groups.
REVERSALS_AT_MOST = {"MLP backward graph, ops only": 3, "MLP backward graph, every tensor": 4,
                     "MLP training step": 3, "300-op backward graph": 2,
                     "transformer main graph, its 48 optimizer ops folded into rows": 1,
                     "10,003-op program grouped, a group open in an open group": 1,
                     "transformer main graph in a 630-px output": 1, "ResNet-50 op by op": 1,
                     "transformer forward graph in a 630-px output": 8,
                     "transformer main graph, its forward call expanded": 1,
                     "transformer main graph in a 630-px output, its forward call expanded": 1,
                     "transformer backward graph grouped": 1,
                     "transformer main graph as it opens, its optimizer one group": 0,
                     "transformer backward graph grouped, a layer open in its IPU's group": 1,
                     "ResNet-50 grouped, a stage and a block in it open": 1,
                     "a call inside a call, both expanded": 1, "a call inside a call, both expanded, every tensor": 1}


def test_the_reversal_count_counts_turns_back():
    assert reversals([(0, 0), (10, 5), (20, 10)]) == 0
    assert reversals([(0, 0), (10, 5), (5, 10), (10, 15), (10, 20)]) == 2


def test_no_edge_zigzags_through_the_rows_it_passes(pixels, request):
    assert max(reversals(path) for path in pixels.paths) <= REVERSALS_AT_MOST[request.node.callspec.params["pixels"]]


# Nodes named on the picture, measured: every node of every picture but the transformer's main graph with its
# forward call expanded, where 124 of 188 (113 while its frame did not hold its labels, 60 while labels went to
# the right only: ops side by side in the call's narrow column left theirs to the hover), 122 in a 630-px
# output; and its backward graph with a layer open, where 11 of 29 (its 12 gradient outputs of IPU 1 stand a
# column apart, in a row, with their names in the hover).
NAMED_AT_LEAST = {"transformer main graph, its forward call expanded": 120,
                  "transformer main graph in a 630-px output, its forward call expanded": 118,
                  "transformer backward graph grouped, a layer open in its IPU's group": 11}


def test_a_node_crowded_on_its_right_is_named_on_its_left(pixels, request):
    name = request.node.callspec.params["pixels"]
    assert len(pixels.labels) >= NAMED_AT_LEAST.get(name, len(pixels.nodes))
