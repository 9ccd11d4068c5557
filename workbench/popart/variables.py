"""Variable settings: how a weight is shared between replicas (``CommGroup``) and how many of its
copies come back to the host (``VariableRetrievalMode``). A weight grouped into several groups gets
one value per group, stacked on a leading axis, as popxl's replica-grouped variables."""
from __future__ import annotations

import enum
from typing import Union

from workbench.onnx import replica_settings


class CommGroupType(enum.Enum):
    All = 0
    Consecutive = 1
    Orthogonal = 2
    Ungrouped = 3


class VariableRetrievalMode(enum.Enum):
    OnePerGroup = 0
    AllReplicas = 1


class CommGroup:
    """Replicas in groups: ``All`` (one group), ``Consecutive`` (runs of ``replicaGroupSize``),
    ``Orthogonal`` (``replicaGroupSize`` replicas spread evenly), ``Ungrouped`` (a group each)."""

    def __init__(self, type: CommGroupType = CommGroupType.All, replicaGroupSize: int = 0):  # noqa: A002
        self.type = type
        self.replicaGroupSize = int(replicaGroupSize)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CommGroup) and (self.type, self.replicaGroupSize) == (other.type,
                                                                                       other.replicaGroupSize)

    def __repr__(self) -> str:
        return f"CommGroup({self.type.name}, {self.replicaGroupSize})"


class VariableSettings:
    """``VariableSettings(CommGroup(...), VariableRetrievalMode.X)``; either may be left out."""

    def __init__(self, *args: Union[CommGroup, VariableRetrievalMode]):
        if any(not isinstance(a, (CommGroup, VariableRetrievalMode)) for a in args):
            raise TypeError(f"VariableSettings takes a CommGroup and a VariableRetrievalMode, got {args!r}")
        self.commGroup = next((a for a in args if isinstance(a, CommGroup)), CommGroup())
        self.retrievalMode = next((a for a in args if isinstance(a, VariableRetrievalMode)),
                                  VariableRetrievalMode.OnePerGroup)

    def encode(self) -> str:
        return replica_settings.encode(self.commGroup.type.name, self.commGroup.replicaGroupSize,
                                       self.retrievalMode.name)

    def getGroupCount(self, replicas: int) -> int:
        return replica_settings.group_count(self.encode(), replicas)

    def numReplicasReturningVariable(self, replicas: int) -> int:
        return replicas if self.retrievalMode is VariableRetrievalMode.AllReplicas else self.getGroupCount(replicas)

    def __repr__(self) -> str:
        return f"VariableSettings({self.commGroup!r}, {self.retrievalMode.name})"
