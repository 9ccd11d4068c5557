"""The order of a layered picture with frames (``export/framed_order``): each frame's members keep together as a
block in every layer, blocks inside one frame keep one order in all their layers, nodes are set as wide as their
labels, and the edges cross no more often than in the order it began from, often much less."""
import random

import workbench.export.framed_order as framed_order
from workbench.export.framed_order import framed_columns
from workbench.export.layered import layered_layout


def straight_crossings(layers: dict, edges: list, columns: dict) -> int:
    """Crossings of the edges drawn straight from end to end, counted between each two neighbouring layers."""
    cuts: dict[int, list[tuple[float, float]]] = {}
    for tail, head in edges:
        if layers[tail] > layers[head]:
            tail, head = head, tail
        span = layers[head] - layers[tail]
        for row in range(layers[tail], layers[head]):
            part = row - layers[tail]
            x0, x1 = columns[tail], columns[head]
            cuts.setdefault(row, []).append((x0 + (x1 - x0) * part / span, x0 + (x1 - x0) * (part + 1) / span))
    return sum(1 for segments in cuts.values() for index, (a, b) in enumerate(segments)
               for c, d in segments[index + 1:] if (a - c) * (b - d) < -1e-9)


def spans(columns: dict, layers: dict, members) -> dict[int, tuple[float, float]]:
    """For each layer, the leftmost and rightmost column of ``members`` there."""
    found: dict[int, tuple[float, float]] = {}
    for key in members:
        low, high = found.get(layers[key], (columns[key], columns[key]))
        found[layers[key]] = (min(low, columns[key]), max(high, columns[key]))
    return found


def assert_blocks(columns: dict, layers: dict, groups: list) -> None:
    """Each group's members are side by side in each layer with no other node between them, and two groups that are
    not nested keep to one side of each other in every layer they share."""
    for group in groups:
        for layer, (low, high) in spans(columns, layers, group).items():
            between = [key for key in layers if layers[key] == layer and low < columns[key] < high]
            assert set(between) <= set(group), f"a node of another frame sits between members of {group}"
    for one in groups:
        for other in groups:
            if set(one) & set(other):
                continue
            shared = set(spans(columns, layers, one)) & set(spans(columns, layers, other))
            sides = {spans(columns, layers, one)[layer][1] < spans(columns, layers, other)[layer][0] for layer in shared}
            assert len(sides) <= 1, "two frames swap sides from one layer to another"


def crossed_picture():
    """Two frames side by side over three layers, begun in an order where every edge between them crosses: ``a``
    feeds the right frame and ``b`` the left one, each frame's nodes begun in the wrong order."""
    layers = {"a": 0, "b": 0, "l1": 1, "l2": 1, "r1": 1, "r2": 1, "l3": 2, "r3": 2}
    edges = [("a", "r1"), ("b", "l1"), ("l1", "l3"), ("l2", "r3"), ("r1", "l3"), ("r2", "r3"), ("a", "r2")]
    groups = [["l1", "l2", "l3"], ["r1", "r2", "r3"]]
    start = {"a": 0, "b": 1, "l1": 1, "l2": 0, "r1": 3, "r2": 2, "l3": 0.5, "r3": 2.5}
    return layers, edges, groups, start


def test_frames_keep_together_and_cross_less_than_where_they_began():
    layers, edges, groups, start = crossed_picture()
    columns = framed_columns(layers, edges, groups, start)
    assert_blocks(columns, layers, groups)
    assert straight_crossings(layers, edges, columns) < straight_crossings(layers, edges, start)
    assert straight_crossings(layers, edges, columns) <= 1  # only r1 -> l3 crosses, whichever side each frame takes


def test_random_framed_pictures_keep_their_blocks_and_never_cross_more(monkeypatch):
    rng = random.Random(7)
    for _ in range(40):
        depth = rng.randint(2, 6)
        layers = {f"n{index}": rng.randrange(depth) for index in range(rng.randint(4, 24))}
        keys = list(layers)
        edges = list({(tail, head) for tail in keys for head in keys
                      if layers[tail] + 1 == layers[head] and rng.random() < 0.3})
        shuffled = rng.sample(keys, len(keys))
        outer = shuffled[:len(keys) // 2]
        groups = [outer, outer[:len(outer) // 2], shuffled[len(keys) // 2:len(keys) * 3 // 4]]
        start = {key: rng.random() * 10 for key in keys}
        columns = framed_columns(layers, edges, groups, start)
        with monkeypatch.context() as unsearched:
            unsearched.setattr(framed_order, "MOST_PAIRS", -1)
            begun = framed_columns(layers, edges, groups, start)  # the start order, each frame's members together
        assert set(columns) == set(layers)
        assert_blocks(columns, layers, [group for group in groups if group])
        for layer in set(layers.values()):  # a column apart at least
            row = sorted(columns[key] for key in keys if layers[key] == layer)
            assert all(right - left >= 1 for left, right in zip(row, row[1:]))
        assert straight_crossings(layers, edges, columns) <= straight_crossings(layers, edges, begun)


def test_a_node_takes_the_width_of_its_label():
    layers = {"wide": 0, "next": 0}
    columns = framed_columns(layers, [], [["wide", "next"]], {"wide": 0, "next": 1}, {"wide": 6.0})
    assert columns["next"] - columns["wide"] >= 6.0


def test_a_picture_too_big_to_search_keeps_its_start_order(monkeypatch):
    layers, edges, groups, start = crossed_picture()
    monkeypatch.setattr(framed_order, "MOST_PAIRS", -1)
    columns = framed_columns(layers, edges, groups, start)
    assert_blocks(columns, layers, groups)
    for layer in set(layers.values()):
        row = [key for key in layers if layers[key] == layer]
        assert sorted(row, key=columns.get) == sorted(row, key=start.get)


def test_the_layered_layout_orders_groups_as_blocks_and_bends_long_edges_on_every_layer_between():
    layers, edges, groups, _ = crossed_picture()
    edges.append(("b", "r3"))
    layout = layered_layout(list(layers), edges, given=layers, groups=groups)
    columns = {key: x for key, (x, _) in layout.positions.items()}
    assert_blocks(columns, layers, groups)
    assert layout.bends
    for (tail, head), bends in layout.bends.items():
        assert [round(-y) for _, y in bends] == list(range(layers[tail] + 1, layers[head]))
