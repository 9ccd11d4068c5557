"""Checks of a composed picture (``workbench.export.compose.Scene``): boxes apart unless a frame holds the
other, inside the picture and their frames, wide enough for their text; every edge made of vertical and
horizontal segments, each clear of the boxes that are neither its ends nor frames around them and of every
frame's title; every edge but those into a port ends in an arrow."""
from workbench.export.compose import CHAR_WIDTH, HEADER, PAD_X


def inside(inner: dict, outer: dict) -> bool:
    return (outer["x"] - outer["w"] / 2 <= inner["x"] - inner["w"] / 2 and inner["x"] + inner["w"] / 2 <= outer["x"] + outer["w"] / 2
            and outer["y"] <= inner["y"] and inner["y"] + inner["h"] <= outer["y"] + outer["h"])


def apart(a: dict, b: dict) -> bool:
    return (abs(a["x"] - b["x"]) * 2 >= a["w"] + b["w"]) or a["y"] >= b["y"] + b["h"] or b["y"] >= a["y"] + a["h"]


def crosses(segment, box: dict, slack: float = 1.0) -> bool:
    """Whether the segment passes through the inside of ``box`` (shrunk by ``slack``)."""
    (x0, y0), (x1, y1) = segment
    left, right = box["x"] - box["w"] / 2 + slack, box["x"] + box["w"] / 2 - slack
    top, bottom = box["y"] + slack, box["y"] + box["h"] - slack
    start, end = 0.0, 1.0
    for delta, low, high, origin in ((x1 - x0, left, right, x0), (y1 - y0, top, bottom, y0)):
        if delta == 0:
            if not low < origin < high:
                return False
            continue
        t0, t1 = (low - origin) / delta, (high - origin) / delta
        start, end = max(start, min(t0, t1)), min(end, max(t0, t1))
    return start < end


def title(frame: dict) -> dict:
    """The rectangle of a frame's title text (as a box: centre x, top y, width, height)."""
    width = len(frame["lines"][0]) * CHAR_WIDTH
    return {"x": frame["x"] - frame["w"] / 2 + PAD_X + width / 2, "y": frame["y"], "w": width, "h": HEADER}


def check_scene(scene, orthogonal: bool = True) -> None:
    boxes = scene.boxes
    frames = [box for box in boxes if box.get("expanded")]
    titles = [title(frame) for frame in frames]
    for box in boxes:
        assert 0 <= box["x"] - box["w"] / 2 and box["x"] + box["w"] / 2 <= scene.width, box["key"]
        assert 0 <= box["y"] and box["y"] + box["h"] <= scene.height, box["key"]
        assert all(len(line) * CHAR_WIDTH + 2 * PAD_X <= box["w"] + 0.01 for line in box["lines"]), box
    for number, a in enumerate(boxes):
        for b in boxes[number + 1:]:
            assert apart(a, b) or inside(a, b) or inside(b, a), (a["key"], b["key"])
    by_key = {box["key"]: box for box in boxes}
    for edge in scene.edges:
        points = edge["points"]
        assert len(points) >= 2 and all(0 <= x <= scene.width and 0 <= y <= scene.height for x, y in points)
        ends = [by_key[key] for key in (edge["tail"], edge["head"]) if key is not None]
        around = [frame for frame in frames if any(inside(end, frame) for end in ends)]
        for segment in zip(points, points[1:]):
            (x0, y0), (x1, y1) = segment
            assert not orthogonal or x0 == x1 or y0 == y1, (edge["label"], segment)  # no diagonal
            for text in titles:
                assert not crosses(segment, text), (edge["label"], edge["tail"], edge["head"], "a frame's title", segment)
            for box in boxes:
                if box in ends or box in around:
                    continue
                assert not crosses(segment, box), (edge["label"], edge["tail"], edge["head"], box["key"], segment)
        head = by_key.get(edge["head"])
        assert edge["arrow"] or edge["head"] is None or head.get("expanded"), edge  # only port edges have none
