"""Replica groups in use: the grouping of each collective op and of each variable, and a variable's
host value split into the values its groups (or replicas) hold."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

from workbench.ir import Ir, Op, ReplicaGrouping, Variable

from .gradient_names import gradient_label, gradient_name, gradient_sources
from .name_ranges import gathered_endings, name_ranges


@dataclass(eq=False, slots=True)
class GroupingUse:
    """A collective op (``kind`` 'collective') or a variable (``kind`` 'variable') and its grouping.
    A remote variable lives in Streaming Memory; a replica-sharded (RTS) one is split over
    ``shards`` replicas of its group, each holding one slice. ``reads`` names what a collective reduces or
    gathers, a gradient by the variable it is the gradient of ('∂ layer0.qkv (Gradient___ws_0)'), and
    ``reads_short`` without the IR's name, for a row that gathers many."""

    item: Union[Op, Variable]
    grouping: ReplicaGrouping
    kind: str
    reads: str = ""
    reads_short: str = ""

    @property
    def storage(self) -> str:
        """Where a variable lives: '' on the IPU, 'remote' in Streaming Memory, 'RTS' in Streaming Memory
        sharded over replicas (each holds a slice); '' for a collective."""
        if not isinstance(self.item, Variable):
            return ""
        if self.item.shard_count > 1:
            return "RTS"
        return "remote" if self.item.remote_buffer is not None else ""

    @property
    def shards(self) -> int:
        """How many replicas share out a variable (1 unless replica-sharded)."""
        return self.item.shard_count if isinstance(self.item, Variable) else 1

    @property
    def noun(self) -> str:
        """'collective', 'variable', 'remote variable' or 'RTS variable'."""
        return f"{self.storage} {self.kind}".strip()

    @property
    def label(self) -> str:
        """A collective's name, what it reduces or gathers and its graph; a variable's kind and name,
        with its shard count when replica-sharded."""
        if self.kind == "collective":
            of = f" of {self.reads}" if self.reads else ""
            return f"{self.item.name}{of} ({self.item.graph.label})"
        sharded = f" ({self.shards} shards)" if self.shards > 1 else ""
        return f"{self.noun} {self.item.name}{sharded}"

    @property
    def name(self) -> str:
        """The label without the kind: a collective's label, a variable's name."""
        return self.label if self.kind == "collective" else self.item.name

    @property
    def groups(self) -> list[list[int]]:
        return self.grouping.groups()


@dataclass(eq=False, slots=True)
class GroupingRow:
    """Uses of one kind with equal groupings, drawn as one row (data parallel training has a
    collective per weight, all over the same replicas)."""

    uses: list[GroupingUse]

    @property
    def grouping(self) -> ReplicaGrouping:
        return self.uses[0].grouping

    @property
    def label(self) -> str:
        """'8 remote variables: w{0–7}' ('RTS variables (4 shards each)' when sharded); '24 collectives:
        replicated_all_reduce of ∂ layer{0–5}.{qkv,proj} (main)': every variable and every tensor reduced or
        gathered (a gradient by its variable), names alike but for their numbers, then their last parts, written
        once (``name_ranges``, ``gathered_endings``), and the first two of their op types and of their graphs (a
        collective's own name is long: the row's hover lists them)."""
        first = self.uses[0]
        if len(self.uses) == 1:
            return first.label
        if first.kind == "collective":
            ops = [use.item for use in self.uses if isinstance(use.item, Op)]  # a collective's item is its op
            types, graphs = (_first_two(list(dict.fromkeys(names))) for names in (
                [op.type for op in ops], [op.graph.label for op in ops]))
            reduced = ", ".join(gathered_endings(name_ranges([use.reads_short for use in self.uses
                                                              if use.reads_short])))
            return f"{len(ops)} collectives: {types}{f' of {reduced}' if reduced else ''} ({graphs})"
        sharded = f" ({first.shards} shards each)" if first.shards > 1 else ""
        names = gathered_endings(name_ranges([use.name for use in self.uses]))
        return f"{len(self.uses)} {first.noun}s{sharded}: {', '.join(names)}"


def _first_two(names: list[str]) -> str:
    """'a, b, …': the first two of ``names``, with an ellipsis for the rest."""
    return ", ".join(names[:2]) + (", …" if len(names) > 2 else "")


def fold_uses(uses: list[GroupingUse]) -> list[GroupingRow]:
    """One row per kind, storage (on the IPU, remote, sharded) and grouping, in the order each first
    appears."""
    rows: dict[tuple, GroupingRow] = {}
    for use in uses:
        key = (use.kind, use.storage, use.shards, use.grouping)
        if key in rows:
            rows[key].uses.append(use)
        else:
            rows[key] = GroupingRow([use])
    return list(rows.values())


@dataclass(eq=False, slots=True)
class GroupValue:
    """One value of a variable after a run: ``replicas`` of ``group`` hold it."""

    group: int
    replicas: tuple[int, ...]
    value: np.ndarray


def grouping_uses(ir: Ir) -> list[GroupingUse]:
    """Collective ops of every graph (graph order, then op order), then the variables."""
    collectives = [(op, value) for graph in ir.graphs for op in graph.ops
                   for value in op.attrs.values() if isinstance(value, ReplicaGrouping)]
    sources = gradient_sources(ir) if collectives else {}
    uses = [GroupingUse(op, value, "collective", *((gradient_label(op.inputs[0], sources),
                                                    gradient_name(op.inputs[0], sources)) if op.inputs else ()))
            for op, value in collectives]
    uses += [GroupingUse(variable, variable.replica_grouping, "variable") for variable in ir.variables]
    return uses


def group_values(variable: Variable, host_value: np.ndarray) -> list[GroupValue]:
    """Split ``host_value`` (laid out as ``Session.get_tensor_data`` returns it) by group: one entry
    per group for 'one_per_group' variables, one per replica for 'all_replicas' ones."""
    grouping = variable.replica_grouping
    host = np.asarray(host_value)
    if variable.retrieval_mode == "all_replicas":
        many = grouping.num_replicas > 1
        return [GroupValue(group, (replica,), host[replica] if many else host)
                for replica, group in enumerate(grouping.assignment)]
    many = grouping.num_groups > 1
    return [GroupValue(group, tuple(grouping.members(group)), host[group] if many else host)
            for group in range(grouping.num_groups)]
