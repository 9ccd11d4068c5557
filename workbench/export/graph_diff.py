"""The difference between two versions of a graph, as plain data: which ops were added, removed or
changed, aligned side by side. Versions are JSON exports (``to_json``), so a snapshot taken before a
transform that edits the Ir in place (autodiff, pipelining, PopART's patterns) can be compared with the
Ir after it.

Ops are aligned by a longest-matching-blocks diff (``difflib``) of their keys: the op type and the
op's name without its Ir-wide counter (``layer0/matmul.12`` -> ``layer0/matmul``), so that ops renamed
only by the counter still match. Aligned ops whose attributes or tensor shapes differ are "changed", and
so is an op that kept its whole name but changed its type (PopART's Inplace pattern turns ``add.16`` into
an ``add_`` named ``add.16``). ``diff_folds`` folds the rows for display.
"""
from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

_COUNTER = re.compile(r"\.\d+$")
STATUSES = ("same", "changed", "removed", "added")


@dataclass(slots=True)
class DiffRow:
    """One row of the side-by-side diff: ``status`` is "same", "changed", "removed" (only ``before``) or
    "added" (only ``after``); ``changes`` says what changed."""

    status: str
    before: Optional[dict] = None
    after: Optional[dict] = None
    changes: list[str] = field(default_factory=list)

    @property
    def scope(self) -> tuple[str, ...]:
        """The name scope the row's ops sit in (the scope both sides share for an aligned pair)."""
        return common_prefix(op_scope(op) for op in (self.before, self.after) if op is not None)


@dataclass(slots=True)
class GraphDiff:
    before_label: str
    after_label: str
    rows: list[DiffRow]

    def count(self, status: str) -> int:
        return sum(1 for row in self.rows if row.status == status)

    def type_changes(self) -> dict[str, int]:
        """Op types whose number of ops changed: type -> after minus before."""
        before = Counter(row.before["type"] for row in self.rows if row.before is not None)
        after = Counter(row.after["type"] for row in self.rows if row.after is not None)
        return {t: after[t] - before[t] for t in sorted(set(before) | set(after)) if after[t] != before[t]}

    def scope_changes(self) -> dict[str, Counter]:
        """Per outermost name scope ("" for ops outside every scope), in order of first appearance: how
        many of its ops were added, removed and changed (scopes with no change left out)."""
        counts: dict[str, Counter] = {}
        for row in self.rows:
            scope = row.scope[0] if row.scope else ""
            counts.setdefault(scope, Counter())
            if row.status != "same":
                counts[scope][row.status] += 1
        return {scope: count for scope, count in counts.items() if count}


def common_prefix(scopes: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    """The leading scope names all of ``scopes`` share."""
    shared: list[str] = []
    for parts in zip(*scopes):
        if len(set(parts)) > 1:
            break
        shared.append(parts[0])
    return tuple(shared)


def op_key(op: dict) -> tuple[str, str]:
    return op["type"], _COUNTER.sub("", op["name"])


def op_scope(op: dict) -> tuple[str, ...]:
    """``layer0/attention/matmul.1`` -> ``("layer0", "attention")``."""
    return tuple(op["name"].split("/")[:-1])


def _shapes(graph: dict) -> dict[str, list]:
    return {tensor["id"]: tensor["shape"] for tensor in graph["tensors"]}


def _changes(before: dict, after: dict, before_shapes: dict, after_shapes: dict) -> list[str]:
    changes = [f"type: {before['type']} → {after['type']}"] if before["type"] != after["type"] else []
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


def check_graph(graph: Any, side: str) -> None:
    """A clear error where ``graph`` is not one graph of a ``to_json`` export."""
    if not isinstance(graph, dict) or not isinstance(graph.get("ops"), list) or "tensors" not in graph:
        what = f"a dict with keys {sorted(graph)[:6]}" if isinstance(graph, dict) else type(graph).__name__
        raise ValueError(f"the {side} side of a diff must be one graph of workbench.export.to_json(ir)['graphs'] "
                         f"(with 'ops' and 'tensors'), got {what}")


def graph_diff(before: dict, after: dict) -> GraphDiff:
    """The diff of two exported graphs (``to_json(ir)["graphs"][i]``), one row per aligned op."""
    check_graph(before, "before")
    check_graph(after, "after")
    old, new = before["ops"], after["ops"]
    shapes = _shapes(before), _shapes(after)
    matcher = difflib.SequenceMatcher(a=[op_key(op) for op in old], b=[op_key(op) for op in new], autojunk=False)
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(_pair(a, b, shapes) for a, b in zip(old[i1:i2], new[j1:j2]))
        else:
            rows.extend(_renamed_in_place(old[i1:i2], new[j1:j2], shapes))
    return GraphDiff(before["label"], after["label"], rows)


def _pair(before: dict, after: dict, shapes: tuple[dict, dict]) -> DiffRow:
    changes = _changes(before, after, *shapes)
    return DiffRow("changed" if changes else "same", before, after, changes=changes)


def _renamed_in_place(old: list[dict], new: list[dict], shapes: tuple[dict, dict]) -> list[DiffRow]:
    """Rows for ops that did not align by key: those with the same whole name on both sides are one op
    whose type changed; the rest were removed or added."""
    matcher = difflib.SequenceMatcher(a=[op["name"] for op in old], b=[op["name"] for op in new], autojunk=False)
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(_pair(a, b, shapes) for a, b in zip(old[i1:i2], new[j1:j2]))
            continue
        rows.extend(DiffRow("removed", before=op) for op in old[i1:i2])
        rows.extend(DiffRow("added", after=op) for op in new[j1:j2])
    return rows


def find_graph(document: Any, graph: Optional[str]) -> dict:
    """The graph ``graph`` (an id or a label) of an exported document, by default its main graph."""
    if not isinstance(document, dict) or not isinstance(document.get("graphs"), list):
        raise ValueError("a diff compares popxl.Irs, Graphs or their workbench.export.to_json() exports; this dict "
                         f"has no 'graphs' list (its keys: {sorted(document)[:6] if isinstance(document, dict) else '-'})")
    for record in document["graphs"]:
        if graph is None and record["is_main"] or graph in (record["id"], record["label"]):
            return record
    raise ValueError(f"no graph {graph!r} in this Ir; its graphs are "
                     f"{', '.join(repr(g['label']) for g in document['graphs'])}")
