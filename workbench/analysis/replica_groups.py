"""Replica groups in use: the grouping of each collective op and of each variable, and a variable's
host value split into the values its groups (or replicas) hold."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

from workbench.ir import Ir, Op, ReplicaGrouping, Variable


@dataclass(eq=False, slots=True)
class GroupingUse:
    """A collective op (``kind`` 'collective') or a variable (``kind`` 'variable') and its grouping."""

    item: Union[Op, Variable]
    grouping: ReplicaGrouping
    kind: str

    @property
    def label(self) -> str:
        """A collective's name, what it reduces or gathers and its graph; a variable's name."""
        if self.kind == "collective":
            of = f" of {self.item.inputs[0].name}" if self.item.inputs else ""
            return f"{self.item.name}{of} ({self.item.graph.label})"
        return f"variable {self.item.name}"

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
        first = self.uses[0]
        if len(self.uses) == 1:
            return first.label
        shown = ", ".join(use.label.removeprefix("variable ") for use in self.uses[:2])
        more = ", …" if len(self.uses) > 2 else ""
        return f"{len(self.uses)} {first.kind}s: {shown}{more}"


def fold_uses(uses: list[GroupingUse]) -> list[GroupingRow]:
    """One row per kind and grouping, in the order each first appears."""
    rows: dict[tuple, GroupingRow] = {}
    for use in uses:
        key = (use.kind, use.grouping)
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
    uses = [GroupingUse(op, value, "collective") for graph in ir.graphs for op in graph.ops
            for value in op.attrs.values() if isinstance(value, ReplicaGrouping)]
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
