"""CommGroup and CommGroupType: PopART's older way to name the replicas a collective spans.

popxl keeps them in popxl.ops.collectives for compatibility; its collectives take a
``ReplicaGrouping`` (``ir.replica_grouping``) as ``group`` instead.
"""
from __future__ import annotations

from enum import Enum

__all__ = ["CommGroup", "CommGroupType"]


class CommGroupType(Enum):
    """``All``: every replica; ``Consecutive``: runs of ``replicaGroupSize`` neighbours;
    ``Orthogonal``: replicas ``replicaGroupSize`` apart; ``Ungrouped``: each replica alone."""

    All = 0
    Consecutive = 1
    Orthogonal = 2
    Ungrouped = 3


class CommGroup:
    """A group type and the number of replicas in each group (0 with ``All``: all of them)."""

    __slots__ = ("type", "replicaGroupSize")

    def __init__(self, type: CommGroupType = CommGroupType.All, replicaGroupSize: int = 0):  # noqa: A002
        if not isinstance(type, CommGroupType):
            raise TypeError(f"CommGroup type must be a CommGroupType, got {type!r}")
        if not isinstance(replicaGroupSize, int) or replicaGroupSize < 0:
            raise ValueError(f"replicaGroupSize must be a non-negative int, got {replicaGroupSize!r}")
        self.type = type
        self.replicaGroupSize = replicaGroupSize

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, CommGroup) and other.type is self.type
                and other.replicaGroupSize == self.replicaGroupSize)

    def __hash__(self) -> int:
        return hash((self.type, self.replicaGroupSize))

    def __repr__(self) -> str:
        return f"CommGroup(type={self.type}, replicaGroupSize={self.replicaGroupSize})"
