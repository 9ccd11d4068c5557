"""``_ir.ReplicaGrouping``: a view of a popxl replica grouping of constant stride, as PopART's binding has it."""
from __future__ import annotations

from workbench.ir.replica_grouping import ReplicaGrouping as WorkbenchReplicaGrouping


class ReplicaGrouping:
    """Groups of ``getGroupSize()`` replicas ``getStride()`` apart, of ``getNumReplicas()`` in all."""

    __slots__ = ("_grouping",)
    _grouping: WorkbenchReplicaGrouping

    def __init__(self, *args, **kwargs):
        raise TypeError("ReplicaGrouping cannot be constructed here: make one with ir.replica_grouping(...); "
                        "its view is grouping._pb_replica_grouping")

    @classmethod
    def _view(cls, grouping) -> "ReplicaGrouping":
        if not grouping.is_const:
            raise NotImplementedError(
                f"{grouping!r} has no constant stride, which PopART's ReplicaGrouping needs; only groupings made "
                "with ir.replica_grouping(stride, group_size) (or assignments of constant stride) have a view")
        view = object.__new__(cls)
        view._grouping = grouping
        return view

    def getNumReplicas(self) -> int:
        return self._grouping.num_replicas

    def getStride(self) -> int:
        return self._grouping.stride

    def getGroupSize(self) -> int:
        return self._grouping.group_size

    def getNumGroups(self) -> int:
        return self._grouping.num_groups

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReplicaGrouping) and other._grouping == self._grouping

    def __repr__(self) -> str:
        return (f"ReplicaGrouping(numReplicas={self.getNumReplicas()}, stride={self.getStride()}, "
                f"groupSize={self.getGroupSize()})")
