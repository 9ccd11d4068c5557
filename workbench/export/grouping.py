"""The groups a graph picture opens with: ops grouped by IPU (pipeline stage), then by name scope, then,
where a level would still hold more than ``MAX_ITEMS`` boxes, into runs of consecutive ops, so that a
graph of any size opens as a few dozen labelled boxes.

Name scopes are read off op names (popxl's ``name_scope`` makes ``layer0/attention/matmul.1``). Ops
lowered from ONNX are scoped by the directories of their node name; a node name without any (an
exporter's ``n12``) gives way to the names of the node's weights (``gpu_0/res2_0_branch2a_w_0`` scopes
its conv under ``gpu_0/res2_0_branch2a``), and a node without weights (a relu) joins the scope of the
op that made its first input. Sibling scopes that share a leading ``_``-separated word (``res2_0``,
``res2_1``) are gathered under it when a level is too wide; consecutive sibling scopes that are still too
many go into runs of scopes alone, named by their first and last (``block0 … block19``), the ops between
them left in place. Where a group holds too many ops of its own, runs of repeated structure are folded first:
``N`` consecutive units of the same op types, none reading another (a transformer's optimizer: for each of 24
weights an all-reduce and the update it feeds), become one group saying ``24 × replicated_all_reduce →
accumulate_``, each unit a group named by the variables it reads (``layer0.qkv``), more than 8 in runs of
them (``layer0.qkv … layer1.ff2``); a scope made of one such run alone is that group, under its own name. Only where no scope or repeat is left to name them do runs hold
ops, of even length; a scope holding runs of ops keeps its box and name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from workbench.export.repeats import repeated_units
from workbench.ir import Graph, Op

MAX_ITEMS = 24  # boxes in one group's picture, beyond which it is split
UNITS_SIDE_BY_SIDE = 8  # units a repeat's picture holds, beyond which they go into runs (labelled by first and last)
GATHER_ABOVE = 8  # scopes in one group beyond which those sharing a leading word are gathered
_PARAMETER_WORD = re.compile(r"^(w|b|s|bn|rm|riv|weight|bias|gamma|beta|scale|mean|var|\d+)$", re.I)


@dataclass(eq=False, slots=True)
class OpGroup:
    """A box of the grouped picture: ``ops`` directly inside it and ``children`` groups, both in graph
    order; ``count`` is the number of ops below it at every level. ``kind`` is "graph", "ipu",
    "scope", "range", "repeat" (units of repeated structure) or "unit" (one of them); ``repeat`` says what
    a group of repeated units holds (``24 × replicated_all_reduce → accumulate_``), else it is empty."""

    id: str
    label: str
    kind: str
    ops: list[Op] = field(default_factory=list)
    children: list["OpGroup"] = field(default_factory=list)
    parent: Optional["OpGroup"] = None
    count: int = 0
    first: int = 0  # graph-order index of its first op
    repeat: str = ""

    def items(self, orders: dict[Op, int]) -> list:
        """Its child groups and direct ops, ordered by where each starts in the graph (``orders``: the
        graph-order index of each op)."""
        entries = [(child.first, child) for child in self.children] + [(orders[op], op) for op in self.ops]
        return [item for _, item in sorted(entries, key=lambda entry: entry[0])]

    def walk(self):
        """This group and every group below it, parents first."""
        yield self
        for child in self.children:
            yield from child.walk()


def op_scopes(graph: Graph) -> dict[Op, tuple[str, ...]]:
    """The name-scope path of each op of ``graph``. The ops lowered from one ONNX node share one."""
    scopes: dict[Op, tuple[str, ...]] = {}
    nodes: dict[str, list[Op]] = {}
    for op in graph.ops:
        if "onnx_node" in op.meta:
            nodes.setdefault(op.name.rpartition("/")[0], []).append(op)
        else:
            scopes[op] = tuple(op.name.split("/")[:-1])
    for op in graph.ops:
        if op in scopes:
            continue
        prefix = op.name.rpartition("/")[0]
        scope = _node_scope(prefix, nodes[prefix], scopes)
        for member in nodes[prefix]:
            scopes[member] = scope
    return scopes


def _node_scope(prefix: str, ops: list[Op], scopes: dict[Op, tuple[str, ...]]) -> tuple[str, ...]:
    """The scope of the ops lowered from one ONNX node, whose own name is the last part of ``prefix``:
    the directories of the node name, else those its weights share, else its first input's maker's."""
    directories = tuple(prefix.split("/")[:-1])
    if directories:
        return directories
    own = prefix + "/"  # constants made while lowering the node carry its scope
    parameters = [t.name[len(own):] if t.name.startswith(own) else t.name
                  for op in ops for t in op.inputs if t.kind in ("variable", "constant")]
    if parameters:
        return _parameter_scope(parameters)
    for op in ops:
        for tensor in op.inputs:
            producer = tensor.producer
            if producer is not None and producer not in ops and producer in scopes:
                return scopes[producer]
    return ()


def _parameter_scope(names: list[str]) -> tuple[str, ...]:
    """The scope that the weight names of one node share: their common prefix, less the words that name
    a parameter (``_w_0``, ``_bn_s_0``)."""
    common = names[0]
    for name in names[1:]:
        while not name.startswith(common):
            common = common[:-1]
    directories, _, leaf = common.rpartition("/")
    while directories and (len(leaf) <= 2 or _PARAMETER_WORD.match(leaf)):  # a weight's ``/t`` (transposed)
        directories, _, leaf = directories.rpartition("/")
    words = leaf.split("_")
    while words and (not words[-1] or _PARAMETER_WORD.match(words[-1])):
        words.pop()
    path = [part for part in directories.split("/") if part]
    if words:
        path.append("_".join(words))
    return tuple(path)


def group_graph(graph: Graph, max_items: int = MAX_ITEMS) -> OpGroup:
    """The group tree of ``graph``: its root is the graph itself."""
    root = OpGroup(graph.id, graph.label, "graph")
    scopes = op_scopes(graph)
    orders = {op: order for order, op in enumerate(graph.ops)}
    ipus = sorted({op.ipu for op in graph.ops})
    homes: dict[int, OpGroup] = {}
    for ipu in ipus:
        homes[ipu] = root if len(ipus) == 1 else _child(root, f"IPU {ipu}" + _stage(graph, ipu), "ipu", orders)
    index: dict[tuple, OpGroup] = {}
    for op in graph.ops:
        group = homes[op.ipu]
        for depth in range(len(scopes[op])):
            key = (op.ipu, scopes[op][:depth + 1])
            if key not in index:
                index[key] = _child(group, scopes[op][depth], "scope", orders)
            group = index[key]
        group.ops.append(op)
    _count(root, orders)
    for group in list(root.walk()):
        _merge_single_child(group)
        _open_lone_child(group, max_items)
    for group in list(root.walk()):
        if len(group.items(orders)) > max_items:
            _fold_repeats(group, orders)
    for group in list(root.walk()):
        _split_wide(group, max_items, orders)
    for group in list(root.walk()):
        _open_lone_child(group, max_items)
    _count(root, orders)
    _name(root)
    return root


def _stage(graph: Graph, ipu: int) -> str:
    stages = {op.meta.get("popart", {}).get("__pipeline_stage") for op in graph.ops if op.ipu == ipu} - {None}
    return f" · stage {', '.join(map(str, sorted(stages)))}" if stages else ""


def _child(parent: OpGroup, label: str, kind: str, orders) -> OpGroup:
    child = OpGroup("", label, kind, parent=parent)
    parent.children.append(child)
    return child


def _count(group: OpGroup, orders: dict[Op, int]) -> None:
    for child in group.children:
        _count(child, orders)
    group.count = len(group.ops) + sum(child.count for child in group.children)
    firsts = [orders[op] for op in group.ops] + [child.first for child in group.children]
    group.first = min(firsts, default=0)
    group.children.sort(key=lambda child: child.first)
    group.ops.sort(key=orders.__getitem__)


def _merge_single_child(group: OpGroup) -> None:
    """A scope holding only one scope and no ops is drawn as one box: ``gpu_0/res2``."""
    while group.kind == "scope" and not group.ops and len(group.children) == 1 \
            and group.children[0].kind == "scope":
        (only,) = group.children
        group.label = f"{group.label}/{only.label}"
        group.ops, group.children = only.ops, only.children
        for child in group.children:
            child.parent = group


def _open_lone_child(group: OpGroup, max_items: int) -> None:
    """A group holding one group and a few ops beside it (a host_load and a host_store around the
    model's one top scope) shows that group's contents in its place."""
    for child in list(group.children):  # a group of one op is drawn as that op
        if child.count == 1 and not child.children:
            group.children.remove(child)
            group.ops.extend(child.ops)
    if len(group.children) != 1 or len(group.ops) > max_items // 4:
        return
    (only,) = group.children
    if only.kind == "scope" and any(child.kind == "range" for child in only.children) or only.kind == "repeat":
        return  # its runs of ops would lose the scope's name, its units the count that names them
    if len(only.children) + len(only.ops) + len(group.ops) > max_items:
        return
    group.children = only.children
    group.ops = group.ops + only.ops
    for child in group.children:
        child.parent = group


def _fold_repeats(group: OpGroup, orders: dict[Op, int]) -> None:
    """Folds each run of repeated structure (``repeats.repeated_units``) among the ops of ``group``
    (consecutive in the picture, no child group between them) into a "repeat" group of "unit" groups; a
    scope that is one run alone takes its units itself."""
    runs: list[list[Op]] = [[]]
    for item in group.items(orders):
        if isinstance(item, OpGroup):
            runs.append([])
        else:
            runs[-1].append(item)
    folds = [fold for run in runs for fold in repeated_units(run)]
    if not folds:
        return
    if group.kind == "scope" and not group.children and len(folds) == 1 and len(folds[0][0]) * len(folds[0]) == \
            len(group.ops):
        units = folds[0]
        group.ops = []
        group.repeat = _repeat_label(units)
        _adopt_units(group, units, orders)
    else:
        for units in folds:
            folded = {op for unit in units for op in unit}
            group.ops = [op for op in group.ops if op not in folded]
            box = OpGroup("", _repeat_label(units), "repeat", parent=group, repeat=_repeat_label(units))
            _adopt_units(box, units, orders)
            group.children.append(box)
    _count(group, orders)


def _repeat_label(units: list[list[Op]]) -> str:
    return f"{len(units)} × {' → '.join(op.type for op in units[0])}"


def _adopt_units(group: OpGroup, units: list[list[Op]], orders: dict[Op, int]) -> None:
    """Puts each unit in ``group``: a unit of one op as that op, else a "unit" group named by the variables
    its ops read (the weights an optimizer's updates write), or by its first op; more than
    ``UNITS_SIDE_BY_SIDE`` go into runs of even length, so that a notebook's row of them has room for their
    names (24 updates: 3 runs of 8)."""
    items: list = []
    for unit in units:
        if len(unit) == 1:
            items.append(unit[0])
            continue
        variables = list(dict.fromkeys(tensor.name for op in unit for tensor in op.inputs if tensor.kind == "variable"))
        box = OpGroup("", ", ".join(variables) or _item_label(unit[0]), "unit", ops=list(unit))
        _count(box, orders)
        items.append(box)
    if len(items) <= UNITS_SIDE_BY_SIDE:
        for item in items:
            _adopt(group, item)
    else:
        runs = -(-len(items) // UNITS_SIDE_BY_SIDE)
        _adopt_runs(group, items, -(-len(items) // runs), orders)
        for run in (child for child in group.children if child.kind == "range"):
            run.repeat = f"{len(run.children) + len(run.ops)} × {' → '.join(op.type for op in units[0])}"
    _count(group, orders)


def _split_wide(group: OpGroup, max_items: int, orders: dict[Op, int]) -> None:
    """Gathers scopes under shared leading words, then runs of consecutive items, until ``group`` holds
    at most ``max_items`` boxes."""
    if sum(child.kind == "scope" for child in group.children) > GATHER_ABOVE:
        _gather_by_words(group, GATHER_ABOVE, orders, 1)
    items = group.items(orders)
    if len(items) > max_items:
        _split_scope_runs(group, items, max_items, orders)
        items = group.items(orders)
    while len(items) > max_items:
        size = max_items
        while (len(items) + size - 1) // size > max_items:
            size *= max_items
        count = -(-len(items) // size)
        size = -(-len(items) // count)  # runs of even length: 26 ops make two runs of 13, not 24 and 2
        group.ops, group.children = [], []
        _adopt_runs(group, items, size, orders)
        _count(group, orders)
        for child in group.children:
            if child.kind == "range":
                _split_wide(child, max_items, orders)
        items = group.items(orders)


def _split_scope_runs(group: OpGroup, items: list, max_items: int, orders: dict[Op, int]) -> None:
    """Where consecutive sibling scopes make ``group`` too wide, gathers them into runs of scopes alone,
    named by their first and last scope (``block0 … block19``), the ops between them left in place; does
    nothing where the runs would still leave more than ``max_items`` boxes."""
    segments: list[list] = [[]]
    for item in items:
        if isinstance(item, OpGroup) and item.kind == "scope":
            segments[-1].append(item)
        else:
            segments += [[item], []]
    segments = [segment for segment in segments if segment]
    scoped = [segment for segment in segments if isinstance(segment[0], OpGroup) and segment[0].kind == "scope"]
    loose = len(segments) - len(scoped)
    room = max_items - loose
    if not scoped or room < len(scoped):
        return
    runs_per_segment = [1] * len(scoped)  # share the room between the segments, the longest first
    while sum(runs_per_segment) < room:
        widest = max(range(len(scoped)), key=lambda n: len(scoped[n]) / runs_per_segment[n])
        if len(scoped[widest]) / runs_per_segment[widest] <= max_items:
            break
        runs_per_segment[widest] += 1
    if any(len(segment) / runs > max_items for segment, runs in zip(scoped, runs_per_segment)):
        return
    group.ops, group.children = [], []
    runs = iter(runs_per_segment)
    for segment in segments:
        if isinstance(segment[0], OpGroup) and segment[0].kind == "scope":
            _adopt_runs(group, segment, -(-len(segment) // next(runs)), orders)
        else:
            _adopt(group, segment[0])
    _count(group, orders)


def _adopt_runs(group: OpGroup, items: list, size: int, orders: dict[Op, int]) -> None:
    """Puts ``items`` into ``group`` in runs of ``size``, each run of two or more in a box of its own."""
    for start in range(0, len(items), size):
        run = items[start:start + size]
        if len(run) == 1:
            _adopt(group, run[0])
            continue
        box = OpGroup("", _run_label(run), "range", parent=group)
        for item in run:
            _adopt(box, item)
        _count(box, orders)
        group.children.append(box)


def _adopt(group: OpGroup, item) -> None:
    if isinstance(item, OpGroup):
        item.parent = group
        group.children.append(item)
    else:
        group.ops.append(item)


def _run_label(run: list) -> str:
    first, last = run[0], run[-1]
    return f"{_item_label(first)} … {_item_label(last)}"


def _item_label(item) -> str:
    return item.label if isinstance(item, OpGroup) else item.name.rsplit("/", 1)[-1]


def _gather_by_words(group: OpGroup, max_items: int, orders: dict[Op, int], words: int) -> None:
    scoped = [child for child in group.children if child.kind == "scope"]
    buckets: dict[str, list[OpGroup]] = {}
    for child in scoped:
        parts = child.label.split("_")
        if len(parts) > words:
            buckets.setdefault("_".join(parts[:words]), []).append(child)
    shared = {key: members for key, members in buckets.items() if len(members) > 1}
    if not shared or len(shared) == 1 and len(next(iter(shared.values()))) == len(scoped):
        if shared and words < 4:  # every scope shares the word: try the next one
            _gather_by_words(group, max_items, orders, words + 1)
        return
    for key, members in shared.items():
        box = OpGroup("", key, "scope", parent=group)
        for member in members:
            group.children.remove(member)
            member.parent = box
            box.children.append(member)
        _count(box, orders)
        group.children.append(box)
        if len(box.children) > max_items:
            _gather_by_words(box, max_items, orders, words + 1)
    _count(group, orders)


def _name(root: OpGroup) -> None:
    """Ids: the graph's id for the root, ``<graph id>#<n>`` below it, numbered parents first."""
    for number, group in enumerate(root.walk()):
        if number:
            group.id = f"{root.id}#{number}"
