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

    def __int__(self) -> int:  # as PopART's enums: int(CommGroupType.Consecutive) == 1
        return self.value


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
    """``VariableSettings(CommGroup(...), VariableRetrievalMode.X)``, either may be left out; or, as popxl's
    replica groupings give them, ``VariableSettings(stride, groupSize, VariableRetrievalMode.X)``."""

    def __init__(self, *args: Union[CommGroup, VariableRetrievalMode, int]):
        if len(args) >= 2 and all(isinstance(a, int) and not isinstance(a, bool) for a in args[:2]):
            self._init_strided(*args)
            return
        if any(not isinstance(a, (CommGroup, VariableRetrievalMode)) for a in args):
            raise TypeError(f"VariableSettings takes a CommGroup and a VariableRetrievalMode, or a stride, a group "
                            f"size and a VariableRetrievalMode; got {args!r}")
        self._stride_and_size = None
        self.commGroup = next((a for a in args if isinstance(a, CommGroup)), CommGroup())
        self.retrievalMode = next((a for a in args if isinstance(a, VariableRetrievalMode)),
                                  VariableRetrievalMode.OnePerGroup)

    def _init_strided(self, stride: int, group_size: int,
                      mode: VariableRetrievalMode = VariableRetrievalMode.OnePerGroup) -> None:
        if stride < 1 or group_size < 1:
            raise ValueError(f"VariableSettings: stride and group size must be at least 1, got {stride} and "
                             f"{group_size}")
        if not isinstance(mode, VariableRetrievalMode):
            raise TypeError(f"VariableSettings: expected a VariableRetrievalMode after the group size, got {mode!r}")
        self._stride_and_size = (stride, group_size)
        self.commGroup = None
        self.retrievalMode = mode

    def isUsingCommGroup(self) -> bool:
        return self._stride_and_size is None

    def getStride(self) -> int:
        return self._strided("getStride")[0]

    def getGroupSize(self) -> int:
        return self._strided("getGroupSize")[1]

    def _strided(self, method: str) -> tuple[int, int]:
        if self._stride_and_size is None:
            raise ValueError(f"VariableSettings.{method}: these settings are a CommGroup ({self.commGroup!r}); "
                             "read settings.commGroup instead")
        return self._stride_and_size

    def encode(self) -> str:
        if self._stride_and_size is not None:
            stride, group_size = self._stride_and_size
            if stride != 1:
                raise ValueError(f"VariableSettings(stride={stride}, groupSize={group_size}): the builder keeps "
                                 "weights' settings as a CommGroup, which has no stride; give "
                                 "VariableSettings(CommGroup(CommGroupType.Orthogonal, size), mode) instead")
            return replica_settings.encode("Consecutive", group_size, self.retrievalMode.name)
        return replica_settings.encode(self.commGroup.type.name, self.commGroup.replicaGroupSize,
                                       self.retrievalMode.name)

    def getGroupCount(self, replicas: int) -> int:
        if self._stride_and_size is not None:
            group_size = self._stride_and_size[1]
            if replicas % group_size:
                raise ValueError(f"groups of {group_size} replicas do not divide {replicas} replicas")
            return replicas // group_size
        return replica_settings.group_count(self.encode(), replicas)

    def numReplicasReturningVariable(self, replicas: int) -> int:
        return replicas if self.retrievalMode is VariableRetrievalMode.AllReplicas else self.getGroupCount(replicas)

    def __repr__(self) -> str:
        if self._stride_and_size is not None:
            stride, group_size = self._stride_and_size
            return f"VariableSettings(stride={stride}, groupSize={group_size}, {self.retrievalMode.name})"
        return f"VariableSettings({self.commGroup!r}, {self.retrievalMode.name})"
