"""The difference between two versions of a graph, as plain data: which ops were added, removed or
changed, aligned side by side. Versions are JSON exports (``to_json``), so a snapshot taken before a
transform that edits the Ir in place (autodiff, pipelining, PopART's patterns) can be compared with the
Ir after it.

Ops are aligned by a longest-matching-blocks diff (``difflib``) of their keys: the op type and the
op's name without its Ir-wide counter (``layer0/matmul.12`` -> ``layer0/matmul``), so that ops renamed
only by the counter still match. Aligned ops whose attributes or tensor shapes differ are "changed".
"""
from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

_COUNTER = re.compile(r"\.\d+$")


@dataclass(slots=True)
class DiffRow:
    """One row of the side-by-side diff: ``status`` is "same", "changed", "removed" (only ``before``),
    "added" (only ``after``) or "folded" (``count`` unchanged ops left out)."""

    status: str
    before: Optional[dict] = None
    after: Optional[dict] = None
    count: int = 0
    changes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class GraphDiff:
    before_label: str
    after_label: str
    rows: list[DiffRow]

    def count(self, status: str) -> int:
        return sum(1 for row in self.rows if row.status == status)

    def type_changes(self) -> dict[str, int]:
        """Op types whose number of ops changed: type -> after minus before (folded runs, the same on
        both sides, cancel)."""
        before = Counter(row.before["type"] for row in self.rows if row.before is not None)
        after = Counter(row.after["type"] for row in self.rows if row.after is not None)
        return {t: after[t] - before[t] for t in sorted(set(before) | set(after)) if after[t] != before[t]}


def op_key(op: dict) -> tuple[str, str]:
    return op["type"], _COUNTER.sub("", op["name"])


def _shapes(graph: dict) -> dict[str, list]:
    return {tensor["id"]: tensor["shape"] for tensor in graph["tensors"]}


def _changes(before: dict, after: dict, before_shapes: dict, after_shapes: dict) -> list[str]:
    changes = []
    for name in sorted(set(before["attrs"]) | set(after["attrs"])):
        if name in ("graph_inputs", "then_inputs", "else_inputs"):
            continue
        old, new = before["attrs"].get(name), after["attrs"].get(name)
        if old != new and not (isinstance(old, str) and isinstance(new, str) and _COUNTER.sub("", old) == _COUNTER.sub("", new)):
            changes.append(f"{name}: {old!r} → {new!r}")
    for side, key in (("inputs", "inputs"), ("outputs", "outputs")):
        old = [before_shapes.get(t) for t in before[key]]
        new = [after_shapes.get(t) for t in after[key]]
        if old != new:
            changes.append(f"{side} shapes: {old} → {new}")
    if before["ipu"] != after["ipu"]:
        changes.append(f"ipu: {before['ipu']} → {after['ipu']}")
    return changes


def graph_diff(before: dict, after: dict, context: int = 2) -> GraphDiff:
    """The diff of two exported graphs (``to_json(ir)["graphs"][i]``); runs of more than ``2 * context + 1``
    unchanged ops are folded to their first and last ``context`` ops around one "folded" row."""
    old, new = before["ops"], after["ops"]
    old_shapes, new_shapes = _shapes(before), _shapes(after)
    matcher = difflib.SequenceMatcher(a=[op_key(op) for op in old], b=[op_key(op) for op in new], autojunk=False)
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs = []
            for a, b in zip(old[i1:i2], new[j1:j2]):
                changes = _changes(a, b, old_shapes, new_shapes)
                pairs.append(DiffRow("changed" if changes else "same", a, b, changes=changes))
            rows.extend(_fold(pairs, context))
            continue
        rows.extend(DiffRow("removed", before=op) for op in old[i1:i2])
        rows.extend(DiffRow("added", after=op) for op in new[j1:j2])
    return GraphDiff(before["label"], after["label"], rows)


def _fold(pairs: list[DiffRow], context: int) -> list[DiffRow]:
    """Runs of unchanged rows longer than ``2 * context + 1`` keep ``context`` rows at each end."""
    result: list[DiffRow] = []
    run: list[DiffRow] = []

    def flush():
        if len(run) > 2 * context + 1:
            result.extend(run[:context])
            result.append(DiffRow("folded", count=len(run) - 2 * context))
            result.extend(run[len(run) - context:])
        else:
            result.extend(run)
        run.clear()
    for row in pairs:
        if row.status == "same":
            run.append(row)
        else:
            flush()
            result.append(row)
    flush()
    return result


def find_graph(document: dict, graph: Optional[str]) -> dict:
    """The graph ``graph`` (an id or a label) of an exported document, by default its main graph."""
    for record in document["graphs"]:
        if graph is None and record["is_main"] or graph in (record["id"], record["label"]):
            return record
    raise ValueError(f"no graph {graph!r} in this Ir; its graphs are "
                     f"{', '.join(repr(g['label']) for g in document['graphs'])}")
