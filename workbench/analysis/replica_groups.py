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
        if self.kind == "collective":
            return f"{self.item.name} ({self.item.graph.label})"
        return f"variable {self.item.name}"

    @property
    def groups(self) -> list[list[int]]:
        return self.grouping.groups()


@dataclass(eq=False, slots=True)
class GroupValue:
    """One value of a variable after a run: ``replicas`` of ``group`` hold it."""

    group: int
    replicas: tuple[int, ...]
    value: np.ndarray


def grouping_uses(ir: Ir) -> list[GroupingUse]:
    """Collective ops of every graph (graph order, then op order), then the variables."""
    uses = [GroupingUse(op, value, "collective") for graph in ir.graphs for op in graph._ops
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
