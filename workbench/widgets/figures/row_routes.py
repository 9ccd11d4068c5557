"""Routes for the edges of a folded graph picture through the rows they pass: each edge bends at a free lane
of every row between two of its points (a column clear of nodes and labels), so that it crosses none of them.
Which lanes: for each edge in turn, of six routes the one that crosses the edges routed before it least,
ties going to the first: with the other edges from its node (a run that each leaves beside its head, instead
of a lattice of edges to wrapped rows), in the rows the run does not reach yet either by one lane free in all of
them (so that the run goes straight down rows whose labels differ in length, not zigzagging between them) or
by the lane nearest the row before; straight down from its lane in the row before; nearest the straight
line between its points; or by the one lane free in all its rows nearest its tail, or its head (a long edge
kept on the side of its ends, not jogging across the rows' edges to a far lane). Once all are routed, each
edge is routed again knowing all the others, its new route kept where it crosses fewer (``rerouted``)."""
from __future__ import annotations

from typing import Hashable

import numpy as np

Point = tuple[float, float]  # (column, -row)
WAYS = ("steady run", "run", "down", "straight", "by its tail", "by its head")


class RowRouter:
    """Routes edges through the rows of ``lanes`` (per row, the columns an edge may pass it at)."""

    def __init__(self, lanes: list[list[float]]):
        self.lanes = lanes
        self.shared: dict[tuple[Hashable, int], float] = {}  # (tail, row) -> the lane of the tail's run
        self.segments = np.zeros((0, 5))  # (edge's number, x0, y0, x1, y1)
        self.edges: list[tuple[Hashable, list[Point], list[Point]]] = []  # (tail, points, route) of each edge

    def route(self, tail: Hashable, points: list[Point]) -> list[Point]:
        """``points`` (an edge from ``tail``: its tail, bends and head) with a bend in each row passed."""
        chosen, lanes, shares = self._best(tail, points, self.segments)
        if shares:
            self.shared.update(((tail, row), x) for row, x in lanes.items())
        self._keep(len(self.edges), chosen, self.segments)
        self.edges.append((tail, points, chosen))
        return chosen

    def rerouted(self) -> list[list[Point]]:
        """Each edge's route, every edge routed again in turn knowing all the others (where the first
        round knew only those before it): the new route kept where it crosses fewer of them."""
        for number, (tail, points, route) in enumerate(self.edges):
            if len(route) == len(points):  # passes no row: no other way
                continue
            others = self.segments[self.segments[:, 0] != number]
            crossed = self._crossings(route, others)
            if crossed == 0:
                continue
            better = self._best(tail, points, others)[0]
            if self._crossings(better, others) < crossed:
                self._keep(number, better, others)
                self.edges[number] = (tail, points, better)
        return [route for _, _, route in self.edges]

    def _best(self, tail: Hashable, points: list[Point], segments: np.ndarray):
        """The route of fewest crossings with ``segments`` (the first of the ``WAYS`` that ties), the lane
        it takes in each row, and whether it is the tail's run."""
        routes = [self._through(tail, points, way) for way in WAYS]
        if all(route[0] == routes[0][0] for route in routes):  # one way through (none of its rows to pass)
            chosen, lanes = routes[0]
        else:
            chosen, lanes = min(routes, key=lambda route: self._crossings(route[0], segments))
        return chosen, lanes, chosen is routes[0][0] or chosen is routes[1][0]

    def _keep(self, number: int, route: list[Point], segments: np.ndarray) -> None:
        """``segments`` and the segments of edge ``number``'s ``route``."""
        ends = np.array(route)
        own = np.hstack([np.full((len(ends) - 1, 1), float(number)), ends[:-1], ends[1:]])
        self.segments = np.vstack([segments, own])

    def _through(self, tail: Hashable, points: list[Point], way: str) -> tuple[list[Point], dict[int, float]]:
        bent, lanes = [points[0]], {}
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            rows = range(int(-y0) + 1, int(-y1))
            column = self._steady_lane(tail, rows, bent, (x0, y0), (x1, y1)) if way == "steady run" else None
            if way.startswith("by its"):
                column = self._common_lane(list(rows), x0 if way.endswith("tail") else x1)
            for row in rows:
                if way.endswith("run") and (tail, row) in self.shared:
                    lane = self.shared[(tail, row)]
                elif column is not None:
                    lane = column
                else:
                    x = bent[-1][0] if way in ("run", "down", "steady run") and len(bent) > 1 else x0 + (x1 - x0) * (row + y0) / (y0 - y1)
                    lane = min(self.lanes[row], key=lambda each: abs(each - x))
                lanes[row] = lane
                bent.append((lane, -float(row)))
            bent.append((x1, y1))
        return bent, lanes

    def _steady_lane(self, tail: Hashable, rows: range, bent: list[Point], start: Point, end: Point):
        """The one lane a steady run takes through the ``rows`` it adds to the run (those between ``start``
        and ``end`` that its other edges do not pass yet), nearest where the edge is now; None where no lane
        is free in all of them. Rows of labels of different lengths would otherwise make the run zigzag."""
        added = [row for row in rows if (tail, row) not in self.shared]
        if not added:
            return None
        (x0, y0), (x1, y1) = start, end
        near = bent[-1][0] if len(bent) > 1 else x0 + (x1 - x0) * (rows.start + y0) / (y0 - y1)
        return self._common_lane(added, near)

    def _common_lane(self, rows: list[int], near: float):
        """The lane free in every one of ``rows`` nearest to column ``near`` (None if no lane is)."""
        if not rows:
            return None
        common = set(self.lanes[rows[0]]).intersection(*(self.lanes[row] for row in rows[1:]))
        return min(common, key=lambda each: (abs(each - near), each)) if common else None

    @staticmethod
    def _crossings(route: list[Point], segments: np.ndarray) -> int:
        """How many times ``route`` crosses ``segments`` (touching is no crossing)."""
        if len(segments) == 0:
            return 0
        _, u0, v0, u1, v1 = segments.T
        count = 0
        for (x0, y0), (x1, y1) in zip(route, route[1:]):
            side_start = (x1 - x0) * (v0 - y0) - (y1 - y0) * (u0 - x0)
            side_end = (x1 - x0) * (v1 - y0) - (y1 - y0) * (u1 - x0)
            side_first = (u1 - u0) * (y0 - v0) - (v1 - v0) * (x0 - u0)
            side_last = (u1 - u0) * (y1 - v0) - (v1 - v0) * (x1 - u0)
            count += int(np.sum((side_start * side_end < -1e-9) & (side_first * side_last < -1e-9)))
        return count
