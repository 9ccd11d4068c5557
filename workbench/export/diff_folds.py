"""Folding a graph diff for display, as code diffs do: runs of unchanged ops (and, in a big transform, runs
of added or removed ops) become one row that names how many ops it holds and the name scope they sit in,
with a little unchanged context kept around each change. Ops marked "changed" are never folded.

A fold opens one level at a time: into the folds of the next scope level down where its ops span several
scopes, else into its ops. ``DiffFolding`` holds the first view of a diff (folded until it fits a row
budget) and which folds are open.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Optional, Union

from .graph_diff import DiffRow, common_prefix

FIRST_VIEW_ROWS = 60  # the most rows a first view aims at (about 1,200 px of rows)
FEW = 3  # a run of this many ops or fewer is shown, not folded
# (context rows kept around each change, longest run of added or removed ops left open (None: all), whether a
# run is split by outermost scope): tried in turn until the first view fits FIRST_VIEW_ROWS.
FOLDINGS = ((2, None, True), (2, 8, True), (1, 8, True), (1, FEW, True), (0, FEW, True), (0, 1, True), (0, 1, False))


@dataclass(slots=True)
class DiffFold:
    """Consecutive rows of a diff drawn as one: ``start`` is the first one's index in the whole diff,
    ``depth`` how many scope levels its rows share with the folds around it."""

    rows: list[DiffRow]
    start: int
    depth: int

    @property
    def key(self) -> str:
        return f"fold {self.start}-{self.start + len(self.rows)} at {self.depth}"

    @property
    def scope(self) -> tuple[str, ...]:
        """The name scope all its ops sit in."""
        return common_prefix([row.scope for row in self.rows])

    def counts(self) -> Counter:
        return Counter(row.status for row in self.rows)

    def side_counts(self, side: str) -> Counter:
        """Op types on one side ("before" or "after") of the fold, most common first."""
        return Counter(getattr(row, side)["type"] for row in self.rows if getattr(row, side) is not None)

    def describe(self, status: str) -> str:
        """'⋯ 42 unchanged ops in layer3 ⋯' for the fold's ops of ``status``."""
        return f"⋯ {self.what(status)} ⋯"

    def what(self, status: str) -> str:
        """'42 unchanged ops in layer3' (or 'in layer0 … layer2' for ops of several scopes) for the fold's
        ops of ``status``."""
        count = self.counts()[status]
        scope, extra = self.scope, ""
        inner = [row.scope[len(scope)] if len(row.scope) > len(scope) else None for row in self.rows]
        named = [part for part in inner if part is not None]
        if len(scope) == self.depth and named and len(set(inner)) > 1:  # small parts folded together
            scope = scope + (named[0] if named[0] == named[-1] else f"{named[0]} … {named[-1]}",)
            extra = " and the top level" if None in inner and not self.scope else ""
        where = f" in {'/'.join(scope)}{extra}" if scope else ""
        noun = "op" if count == 1 else "ops"
        return f"{count:,} {'unchanged' if status == 'same' else status} {noun}{where}"


@dataclass(slots=True)
class OpenFold:
    """The row heading an open fold, above what it holds: a click on it folds it again."""

    fold: DiffFold

    @property
    def key(self) -> str:
        return self.fold.key


Shown = Union[DiffRow, DiffFold, OpenFold]


def fold_rows(rows: list[DiffRow], context: int = 2, open_run: Optional[int] = None, by_scope: bool = True) -> list[Shown]:
    """The rows with unchanged runs folded beyond ``context`` rows of any change, and runs of added or
    removed ops longer than ``open_run`` (if given) folded, each run split by outermost scope (``by_scope``)
    or folded whole."""
    changes = [index for index, row in enumerate(rows) if row.status != "same"]
    near: set[int] = set()
    for index in changes:
        near.update(range(max(0, index - context), min(len(rows), index + context + 1)))
    shown: list[Shown] = []
    run: list[int] = []

    def flush() -> None:
        if run:
            part = rows[run[0]:run[-1] + 1]
            longest = FEW if part[0].status == "same" else open_run
            if longest is None or len(part) <= max(longest, 1):
                shown.extend(part)
            else:
                shown.extend(_split(part, run[0], 0, longest) if by_scope else [DiffFold(part, run[0], 0)])
            run.clear()

    for index, row in enumerate(rows):
        pinned = row.status == "changed" or (row.status == "same" and index in near)
        if pinned or (run and (rows[run[-1]].status == "same") != (row.status == "same")):
            flush()
        if pinned:
            shown.append(row)
        else:
            run.append(index)
    flush()
    return shown


def _split(rows: list[DiffRow], start: int, depth: int, open_run: int = FEW, merge: bool = True) -> list[Shown]:
    """``rows`` as folds of consecutive rows sharing their scope at ``depth``; a part of ``open_run`` rows
    or fewer is shown whole, unless (with ``merge``) it and the small parts next to it make a longer run
    together, which folds as one."""
    parts: list[tuple[int, int]] = []
    begin = 0
    for end in range(1, len(rows) + 1):
        if end == len(rows) or _part(rows[end], depth) != _part(rows[begin], depth):
            parts.append((begin, end))
            begin = end
    shown: list[Shown] = []
    small: list[tuple[int, int]] = []

    def flush_small() -> None:
        if small:
            first, last = small[0][0], small[-1][1]
            if merge and len(small) > 1 and last - first > open_run:
                shown.append(DiffFold(rows[first:last], start + first, depth))
            else:
                shown.extend(rows[first:last])
            small.clear()

    for begin, end in parts:
        if end - begin <= open_run:
            small.append((begin, end))
            continue
        flush_small()
        shown.append(DiffFold(rows[begin:end], start + begin, depth))
    flush_small()
    return shown


def _part(row: DiffRow, depth: int):
    scope = row.scope
    return scope[depth] if len(scope) > depth else None


def opened(fold: DiffFold) -> list[Shown]:
    """What a fold shows when opened: the folds of the first scope level down where its rows differ,
    else its rows."""
    depth = len(fold.scope)  # its rows differ in the scope at this depth, where any has one
    if all(len(row.scope) <= depth for row in fold.rows):
        return list(fold.rows)
    return _split(fold.rows, fold.start, depth, merge=False)  # merged small parts open to those parts


def first_view(rows: list[DiffRow], budget: int = FIRST_VIEW_ROWS) -> list[Shown]:
    """The rows folded as little as fits ``budget`` rows (changed ops never fold, so a diff with more
    changed ops than that stays taller)."""
    shown: list[Shown] = list(rows)
    for context, open_run, by_scope in FOLDINGS:
        shown = fold_rows(rows, context, open_run, by_scope)
        if len(shown) <= budget:
            break
    return shown


class DiffFolding:
    """The first view of a diff and the folds opened since; ``shown()`` is what to draw: rows, folds, and
    each open fold's heading above what it holds."""

    def __init__(self, rows: list[DiffRow], budget: int = FIRST_VIEW_ROWS):
        self.rows = rows
        self.top = first_view(rows, budget)
        self.open: set[str] = set()
        self._children: dict[str, list[Shown]] = {}

    def shown(self) -> list[Shown]:
        return list(self._walk(self.top))

    def _walk(self, items: list[Shown]) -> Iterable[Shown]:
        for item in items:
            if isinstance(item, DiffFold) and item.key in self.open:
                yield OpenFold(item)
                yield from self._walk(self.children(item))
            else:
                yield item

    def children(self, fold: DiffFold) -> list[Shown]:
        if fold.key not in self._children:
            self._children[fold.key] = opened(fold)
        return self._children[fold.key]

    def folds(self) -> dict[str, DiffFold]:
        """Every fold drawn now or inside an open one, by key."""
        found: dict[str, DiffFold] = {}
        stack = list(self.top)
        while stack:
            item = stack.pop()
            if isinstance(item, DiffFold):
                found[item.key] = item
                if item.key in self.open:
                    stack.extend(self.children(item))
        return found

    def unfold(self, key: str) -> None:
        folds = self.folds()
        if key not in folds:
            shown = [k for k in folds if k not in self.open]
            raise ValueError(f"no fold {key!r} in this diff; the folds drawn are "
                             f"{', '.join(map(repr, shown[:6])) or 'none'}{' …' if len(shown) > 6 else ''}")
        self.open.add(key)

    def fold(self, key: str) -> None:
        """Close an open fold again (and every fold inside it)."""
        folds = self.folds()
        if key not in self.open or key not in folds:
            raise ValueError(f"fold {key!r} is not open; the open folds are {', '.join(map(repr, self.open)) or 'none'}")
        inside = folds[key]
        span = range(inside.start, inside.start + len(inside.rows))
        self.open = {k for k in self.open if k in folds and not (folds[k].start in span and folds[k].depth >= inside.depth)}

    def unfold_all(self) -> None:
        while True:
            closed = [key for key in self.folds() if key not in self.open]
            if not closed:
                return
            self.open.update(closed)
