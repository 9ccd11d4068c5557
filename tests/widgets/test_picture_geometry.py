"""The graph figure in pixels, as a notebook of the assumed width shows it: on realistic graphs no two
nodes or labels overlap, no edge runs through a node or label that is not one of its ends, and the
whole picture lies inside the width; every label lies whole inside the frames (expanded calls, opened
groups) of its node and outside the others, and no frame's title covers a label; and the edges of each
cross no more often than measured (the transformer's main graph, its optimizer's 48 ops wrapped into
rows, not at all)."""
import numpy as np
import pytest

from picture_cases import PICTURES, drawn
from picture_pixels import overlap, segment_crosses_boxes, segment_distances, within


@pytest.fixture(params=list(PICTURES), scope="module")
def pixels(request):
    return drawn(request.param)


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
# graph with its forward call expanded 16, 46 in a 630-px output (expanded before or after the output is
# fitted; 38 while the frame's rows did not wrap and 16 labels were cut to "transpose…": each layer's three
# attention reshapes and transposes now wrap in two bands, and their edges cross more), since frames are packed
# round their members' labels and the optimizer's ops below the frame wrap into rows of their own (36 and 66
# before; 802 when a dashed
# edge entered the body for each weight passed in and left it for each activation saved for the backward pass;
# 10 and 32 while edges could run along a frame's side); grouped pictures with groups open 0, and a call inside
# a call 8 (2 before the packing); the transformer's backward graph grouped 0 (12 while its 24 gradient outputs
# were folded into rows by columns rather than by the pixels of their labels), and 193 with all its 44 groups
# open, its residual edges running past the frames of a layer. Since the layout orders each open group as a
# block, its nodes as wide as their labels, counting long edges down the lanes they take (``framed_order``), and
# frames wrap their rows where too wide (labels were cut before): the 44 groups open 84, the main graph with its
# forward call expanded 15, and 45 in a 630-px output (16 and 38, its attention's reshapes and transposes
# wrapping in two bands), a call inside a call 7 (8), the backward graph with a layer open 2 (0: an edge from its rows of gradients, wrapped
# after the order is chosen, enters the frame past two edges), a run of 8 of the optimizer's units opened 1 (at
# 960 and 630 px), the main graph grouped at 630 px 0. Since each edge is routed again once all are known, and
# may keep to one lane nearest its tail or its head (``RowRouter``): the 44 groups open 61 (84: residual edges
# jogged across a row's edges to the far-left lane at each end), the MLP's training step 71 (81), the main graph
# with its forward call expanded at 630 px 40 (45), a call inside a call 6 (7). A little slack above each.
CROSSINGS_AT_MOST = {"MLP backward graph, ops only": 10, "MLP backward graph, every tensor": 6,
                     "MLP training step": 76, "300-op backward graph": 250,
                     "transformer main graph, its 48 optimizer ops folded into rows": 2,
                     "10,003-op program grouped, a group open in an open group": 2,
                     "transformer main graph in a 630-px output": 2, "ResNet-50 op by op": 2,
                     "transformer forward graph in a 630-px output": 30,
                     "transformer main graph, its forward call expanded": 20,
                     "transformer main graph in a 630-px output, its forward call expanded": 50,
                     "transformer main graph, its forward call expanded, then fitted to a 630-px output": 50,
                     "transformer backward graph grouped": 2,
                     "transformer main graph as it opens, its optimizer one group": 0,
                     "transformer backward graph grouped, a layer open in its IPU's group": 2,
                     "transformer backward graph, every one of its 44 groups open": 66,
                     "ResNet-50 grouped, a stage and a block in it open": 2,
                     "the transformer's main graph grouped in a 630-px output": 0,
                     "the transformer's optimizer, a run of 8 of its units open": 2,
                     "the transformer's optimizer, a run of 8 of its units open in a 630-px output": 2,
                     "a call inside a call, both expanded": 10, "a call inside a call, both expanded, every tensor": 10}


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
# pictures of expanded calls and open groups but a call inside a call, 2, and the transformer's backward graph
# with all its 44 groups open, 6 (a residual edge past a layer's frames, moving to the lanes left free in the rows
# it passes, clear of the frames' sides).
REVERSALS_AT_MOST = {"MLP backward graph, ops only": 3, "MLP backward graph, every tensor": 4,
                     "MLP training step": 3, "300-op backward graph": 2,
                     "transformer main graph, its 48 optimizer ops folded into rows": 1,
                     "10,003-op program grouped, a group open in an open group": 1,
                     "transformer main graph in a 630-px output": 1, "ResNet-50 op by op": 1,
                     "transformer forward graph in a 630-px output": 8,
                     "transformer main graph, its forward call expanded": 1,
                     "transformer main graph in a 630-px output, its forward call expanded": 1,
                     "transformer main graph, its forward call expanded, then fitted to a 630-px output": 1,
                     "transformer backward graph grouped": 1,
                     "transformer main graph as it opens, its optimizer one group": 0,
                     "transformer backward graph grouped, a layer open in its IPU's group": 1,
                     "transformer backward graph, every one of its 44 groups open": 7,
                     "ResNet-50 grouped, a stage and a block in it open": 1,
                     "the transformer's main graph grouped in a 630-px output": 1,
                     "the transformer's optimizer, a run of 8 of its units open": 1,
                     "the transformer's optimizer, a run of 8 of its units open in a 630-px output": 1,
                     "a call inside a call, both expanded": 2, "a call inside a call, both expanded, every tensor": 2}


def test_the_reversal_count_counts_turns_back():
    assert reversals([(0, 0), (10, 5), (20, 10)]) == 0
    assert reversals([(0, 0), (10, 5), (5, 10), (10, 15), (10, 20)]) == 2


def test_no_edge_zigzags_through_the_rows_it_passes(pixels, request):
    assert max(reversals(path) for path in pixels.paths) <= REVERSALS_AT_MOST[request.node.callspec.params["pixels"]]


# Nodes named on the picture: every node of every picture, since frames are packed round their members' labels
# (before: the transformer's main graph with its forward call expanded 124 of 188, 122 in a 630-px output, its 48
# optimizer ops under the frame a column apart; its backward graph with a layer open 11 of 29, its 12 gradient
# outputs of IPU 1 a column apart in a row; with all 44 groups open 23 of 462, its frames side by side).
def test_every_node_is_named(pixels):
    assert len(pixels.labels) == len(pixels.nodes)


def test_a_cut_label_keeps_enough_to_tell_its_node_apart(pixels):
    """Labels are cut only to eight characters or more (``reshape…``, ``Gradi…s_14``): the full name is in the
    hover, and what is written still says what the node is."""
    assert all("…" not in text or len(text) >= 8 for text in pixels.texts)
