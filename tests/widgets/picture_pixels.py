"""A graph figure measured in pixels, as a notebook of the assumed width shows it: its nodes, labels, edge paths,
arrowheads, frames and frames' titles, and the rectangle and segment tests the picture tests use on them."""
import html
import math

import numpy as np

from workbench.widgets.figures.graph_figure import ARROW_TRACE, OPENED_TRACE
from workbench.widgets.figures.picture_labels import CHAR_WIDTH, MARGIN
from workbench.widgets.style import PICTURE_WIDTH

LABEL_HEIGHT = 12  # pixels a 10 px label takes vertically
LABEL_GAP = 2  # pixels between a marker's edge and its label, as plotly draws "middle right" text


class Pixels:
    """Maps a figure's data coordinates to pixels of its plot area, and lists its nodes, labels and
    edge paths there."""

    def __init__(self, figure, width: int = PICTURE_WIDTH):
        layout = figure.layout
        self.width = width - 2 * MARGIN
        self.height = layout.height - layout.margin.t - layout.margin.b
        self.x_range, self.y_range = layout.xaxis.range, layout.yaxis.range
        self.nodes, self.labels, self.paths = [], [], []
        self.texts = []  # each label's text, as written
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
                lines = [html.unescape(line) for line in label.split("<br>")]  # a group's name, what it holds
                width = max(len(line) for line in lines) * CHAR_WIDTH
                height = LABEL_HEIGHT * len(lines)  # the lines centred on the marker
                left = x + size / 2 + LABEL_GAP if side == "middle right" else x - size / 2 - LABEL_GAP - width
                self.labels.append((left, y - height / 2, left + width, y + height / 2, len(self.nodes) - 1))
                self.texts.append(" ".join(lines))

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


def overlap(first, second) -> bool:
    """Whether two rectangles (left, top, right, bottom) share more than an edge."""
    return first[0] < second[2] and second[0] < first[2] and first[1] < second[3] and second[1] < first[3]


def within(inner, outer) -> bool:
    return outer[0] <= inner[0] and inner[2] <= outer[2] and outer[1] <= inner[1] and inner[3] <= outer[3]
