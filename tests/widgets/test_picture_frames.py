"""Frames of a graph picture (an expanded call, an opened group) round their members' labels: where a layout
leaves another node inside a frame so drawn (the layered layout before ``pack_frames``), the frames go round their
members' markers alone and every label stops at every frame's side."""
from picture_cases import PICTURES
from workbench.export.layered import layered_layout
from workbench.widgets import GraphView
from workbench.widgets.figures.picture_frames import frame_extents, frame_plan, label_reach
from workbench.widgets.figures.picture_labels import CHAR_WIDTH, LABEL_GAP
from workbench.widgets.style import PICTURE_WIDTH


def test_frames_that_would_hold_another_node_go_round_their_members_markers_and_stop_every_label():
    (ir, graph), detail, *openers = PICTURES["transformer main graph, its forward call expanded"]()
    view = GraphView(ir, graph=graph, detail=detail, grouped=False, live=False)  # op by op, as it opens grouped
    for opens in openers:
        opens(view)
    picture = view.picture
    uncleared = layered_layout(list(picture.nodes), [(tail, head) for tail, head, _ in picture.edges])
    plan = frame_plan(picture, uncleared, PICTURE_WIDTH)
    (box, (x0, x1, y0, y1)), = plan.frames
    members = set(box.members)
    strangers = [key for key, (x, y) in uncleared.positions.items() if key not in members and x0 < x < x1 and y0 < y < y1]
    assert strangers, "the layered layout alone leaves a caller's op inside the call's frame"
    column, half = plan.sizes.column, plan.sizes.call / 2
    captions = {key: node.caption for key, node in picture.nodes.items()}
    markers = frame_extents(picture, uncleared, plan.sizes, label_reach(uncleared, plan.sizes, {}, captions))
    assert plan.frames == markers  # round the members' markers, not their labels
    for key, (x, y) in uncleared.positions.items():
        room, side = plan.places[key]
        drawn = min(room, len(picture.nodes[key].caption)) * CHAR_WIDTH
        if drawn and y0 <= y <= y1:
            left, right = ((x * column + half + LABEL_GAP, x * column + half + LABEL_GAP + drawn) if side == "right"
                           else (x * column - half - LABEL_GAP - drawn, x * column - half - LABEL_GAP))
            for wall in (x0 * column, x1 * column):
                assert not left < wall < right, f"the label of {key} crosses a frame's side"
