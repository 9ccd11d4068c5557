"""The difference between two versions of a graph, as plain data: which ops were added, removed or
changed, aligned side by side. Versions are JSON exports (``to_json``), so a snapshot taken before a
transform that edits the Ir in place (autodiff, pipelining, PopART's patterns) can be compared with the
Ir after it.

Ops are aligned by a longest-matching-blocks diff (``difflib``) of their keys: the op type and the
op's name without its Ir-wide counter (``layer0/matmul.12`` -> ``layer0/matmul``), so that ops renamed
only by the counter still match. A key alone does not make two ops one (a forward graph and its gradient
graph share scopes and op types, but not ops): an aligned pair is kept only where what the ops read agrees
(``_Pairing``), else the two are reported removed and added. Kept pairs whose attributes or tensor shapes
differ are "changed", and so is an op that kept its whole name but changed its type (PopART's Inplace
pattern turns ``add.16`` into an ``add_`` named ``add.16``) and an op renamed whose inputs all agree.
``diff_folds`` folds the rows for display.
"""
from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence

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
    if _COUNTER.sub("", before["name"]) != _COUNTER.sub("", after["name"]):
        changes.append(f"name: {before['name']} → {after['name']}")
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
    pairing = _Pairing(before, after)
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in _aligned([pairing.signature(0, op) for op in old], [pairing.signature(1, op) for op in new]):
        if tag == "equal":
            for a, b in zip(old[i1:i2], new[j1:j2]):
                rows.extend(pairing.pair_if_related(a, b))
            continue
        for inner, k1, k2, l1, l2 in _aligned([op_key(op) for op in old[i1:i2]], [op_key(op) for op in new[j1:j2]]):
            if inner == "equal":
                for a, b in zip(old[i1 + k1:i1 + k2], new[j1 + l1:j1 + l2]):
                    rows.extend(pairing.pair_if_related(a, b))
            else:
                rows.extend(_renamed_in_place(old[i1 + k1:i1 + k2], new[j1 + l1:j1 + l2], pairing))
    return GraphDiff(before["label"], after["label"], rows)


def _aligned(old: list, new: list) -> Sequence[tuple[str, int, int, int, int]]:
    return difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()


class _Pairing:
    """Which op of the after side each op of the before side is, decided in graph order (an op's inputs are
    made before it, so their pairing is known when it is asked about). Input ``i`` of two ops *agrees* where
    both are made by ops paired with each other, or both are graph-level tensors (inputs, variables,
    constants) of one name; it *contradicts* where the makers are paired but not with each other, the
    names differ, or one side's tensor is made by an op and the other's is not; otherwise (a maker that
    is new on its side) it says nothing."""

    def __init__(self, before: dict, after: dict):
        self.shapes = _shapes(before), _shapes(after)
        self.tensors = ({t["id"]: t for t in before["tensors"]}, {t["id"]: t for t in after["tensors"]})
        self.names = ({op["id"]: op["name"] for op in before["ops"]}, {op["id"]: op["name"] for op in after["ops"]})
        self.keys = Counter(op_key(op) for op in before["ops"]), Counter(op_key(op) for op in after["ops"])
        self.forward: dict[str, str] = {}  # before op id -> after op id
        self.backward: dict[str, str] = {}

    def signature(self, side: int, op: dict) -> tuple:
        """An op's key with the names of what it reads (the makers' names without their counters, or the
        graph-level tensors' names): ops are aligned by it first, so that a run of alike ops is matched
        where it reads alike."""
        sources = []
        for tensor_id in op["inputs"]:
            kind, source = self._source(side, tensor_id)
            sources.append(_COUNTER.sub("", self.names[side].get(source, source)) if kind == "op" else source)
        return (*op_key(op), tuple(sources))

    def _source(self, side: int, tensor_id: str):
        tensor = self.tensors[side].get(tensor_id)
        if tensor is None or tensor["producer"] is None:
            return "tensor", _COUNTER.sub("", tensor["name"] if tensor is not None else tensor_id)
        return "op", tensor["producer"]

    def _input_verdicts(self, before: dict, after: dict) -> list[Optional[bool]]:
        """For each input both ops have: True (agrees), False (contradicts) or None (says nothing)."""
        verdicts: list[Optional[bool]] = []
        for old, new in zip(before["inputs"], after["inputs"]):
            (old_kind, old_source), (new_kind, new_source) = self._source(0, old), self._source(1, new)
            if old_kind != new_kind:
                verdicts.append(False)
            elif old_kind == "tensor":
                verdicts.append(old_source == new_source)
            elif self.forward.get(old_source) == new_source:
                verdicts.append(True)
            elif old_source in self.forward and new_source in self.backward:
                verdicts.append(False)
            else:
                verdicts.append(None)
        return verdicts

    def consistent(self, before: dict, after: dict) -> bool:
        """Whether no input of the two ops contradicts."""
        return False not in self._input_verdicts(before, after)

    def related(self, before: dict, after: dict) -> bool:
        """Whether two ops of one key are one op: no input contradicts, and an input agrees, or neither reads
        anything, or the key is each side's only op of it (its name alone says which op it is)."""
        verdicts = self._input_verdicts(before, after)
        if False in verdicts:
            return False
        key = op_key(before)
        unique = op_key(after) == key and self.keys[0][key] == self.keys[1][key] == 1
        return True in verdicts or not before["inputs"] and not after["inputs"] or unique

    def same_inputs(self, before: dict, after: dict) -> bool:
        """Whether every input of two ops of one type agrees (an op renamed, still reading the same tensors)."""
        verdicts = self._input_verdicts(before, after)
        return before["type"] == after["type"] and len(before["inputs"]) == len(after["inputs"]) > 0 \
            and all(verdicts)

    def pair(self, before: dict, after: dict) -> DiffRow:
        self.forward[before["id"]] = after["id"]
        self.backward[after["id"]] = before["id"]
        changes = _changes(before, after, *self.shapes)
        return DiffRow("changed" if changes else "same", before, after, changes=changes)

    def pair_if_related(self, before: dict, after: dict) -> list[DiffRow]:
        if self.related(before, after):
            return [self.pair(before, after)]
        return [DiffRow("removed", before=before), DiffRow("added", after=after)]


def _renamed_in_place(old: list[dict], new: list[dict], pairing: _Pairing) -> list[DiffRow]:
    """Rows for ops that did not align by key: those with the same whole name on both sides whose inputs do
    not contradict are one op whose type changed; of the rest, an op of the same type reading the same
    tensors is one op renamed; the others were removed or added."""
    matcher = difflib.SequenceMatcher(a=[op["name"] for op in old], b=[op["name"] for op in new], autojunk=False)
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for a, b in zip(old[i1:i2], new[j1:j2]):
                rows.extend([pairing.pair(a, b)] if pairing.consistent(a, b)
                            else [DiffRow("removed", before=a), DiffRow("added", after=b)])
            continue
        rows.extend(_renamed(old[i1:i2], new[j1:j2], pairing))
    return rows


def _renamed(old: list[dict], new: list[dict], pairing: _Pairing) -> list[DiffRow]:
    """Pairs each op of ``old`` with the first op of ``new`` after the last one paired that has its type and
    reads the same tensors; the ops left are removed or added, in graph order."""
    rows: list[DiffRow] = []
    start = 0
    for a in old:
        match = next((j for j in range(start, len(new)) if pairing.same_inputs(a, new[j])), None)
        if match is None:
            rows.append(DiffRow("removed", before=a))
            continue
        rows.extend(DiffRow("added", after=b) for b in new[start:match])
        rows.append(pairing.pair(a, new[match]))
        start = match + 1
    rows.extend(DiffRow("added", after=b) for b in new[start:])
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
