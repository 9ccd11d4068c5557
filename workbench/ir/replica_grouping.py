"""Replica groupings: partitions of an Ir's replicas into equal groups."""
from __future__ import annotations

from functools import reduce
from math import gcd
from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:
    from .ir import Ir


def strided_assignment(replicas: int, stride: int, group_size: int) -> list[int]:
    """Group of each replica: group i starts at the lowest unassigned replica ``o`` and takes
    ``o, o+stride, ..., o+(group_size-1)*stride``."""
    assignment = [-1] * replicas
    group = 0
    for start in range(replicas):
        if assignment[start] != -1:
            continue
        for k in range(group_size):
            member = start + k * stride
            if member >= replicas or assignment[member] != -1:
                raise ValueError(f"stride {stride} and group_size {group_size} do not partition "
                                 f"{replicas} replicas into equal groups")
            assignment[member] = group
        group += 1
    return assignment


class ReplicaGrouping:
    """Which group each replica belongs to, for variable settings and collectives."""

    _ir: "Ir"
    _assignment: list[int]
    _stride: Optional[int]

    def __init__(self):
        raise RuntimeError("use ir.replica_grouping(stride, group_size) or "
                           "ir.replica_grouping_from_assignments(assignment)")

    @classmethod
    def _create(cls, ir: "Ir", assignment: Sequence[int]) -> "ReplicaGrouping":
        grouping = object.__new__(cls)
        grouping._ir = ir
        grouping._assignment = list(assignment)
        grouping._stride = _constant_stride(grouping._assignment)
        return grouping

    @classmethod
    def _strided(cls, ir: "Ir", stride: int = 1, group_size: Optional[int] = None) -> "ReplicaGrouping":
        replicas = ir.replication_factor
        for name, value in (("stride", stride), ("group_size", group_size)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise TypeError(f"{name} must be an int, got {value!r}")
        if not 0 < stride <= replicas or replicas % stride:
            raise ValueError(f"stride must divide the replication factor {replicas} and lie in "
                             f"1..{replicas}, got {stride}")
        if group_size is None:
            group_size = replicas // stride
        if not 0 < group_size <= replicas or replicas % group_size:
            raise ValueError(f"group_size must divide the replication factor {replicas} and lie in "
                             f"1..{replicas}, got {group_size}")
        if group_size == 1:
            stride = 1
        return cls._create(ir, strided_assignment(replicas, stride, group_size))

    @classmethod
    def _from_assignment(cls, ir: "Ir", assignment: Sequence[int]) -> "ReplicaGrouping":
        assignment = [int(a) for a in assignment]
        replicas = ir.replication_factor
        if len(assignment) != replicas:
            raise ValueError(f"the assignment has {len(assignment)} entries but the Ir has "
                             f"{replicas} replicas: give one group index per replica")
        seen: list[int] = []
        for group in assignment:
            if group not in seen:
                if group != len(seen):
                    raise ValueError(f"group indices must first appear in increasing order 0, 1, 2, ...; "
                                     f"got {assignment}")
                seen.append(group)
        sizes = {assignment.count(g) for g in seen}
        if len(sizes) != 1:
            raise ValueError(f"all groups must have the same size, got sizes "
                             f"{[assignment.count(g) for g in seen]} for {assignment}")
        return cls._create(ir, assignment)

    @property
    def assignment(self) -> list[int]:
        return list(self._assignment)

    @property
    def num_replicas(self) -> int:
        return len(self._assignment)

    @property
    def num_groups(self) -> int:
        return max(self._assignment) + 1

    @property
    def group_size(self) -> int:
        return self.num_replicas // self.num_groups

    @property
    def is_const(self) -> bool:
        """True when every group is evenly strided in the way ``ir.replica_grouping`` builds them."""
        return self._stride is not None

    @property
    def stride(self) -> int:
        if self._stride is None:
            raise NotImplementedError(f"{self!r} has no constant stride")
        return self._stride

    @property
    def const_rg(self) -> "ReplicaGrouping":
        """The coarsest grouping of constant stride that refines this one (each of its groups lies inside
        one group of this one); this one when it is constant. ``[0,0,1,1,0,0,1,1]`` gives ``[0,0,1,1,2,2,3,3]``."""
        if self.is_const:
            return self
        stride, group_size = _refining_stride_and_size(self._assignment)
        return ReplicaGrouping._strided(self._ir, stride, group_size)

    @property
    def to_device_map(self) -> Optional[list[int]]:
        """For each group of ``const_rg``, the group of this grouping it lies in (None when constant)."""
        if self.is_const:
            return None
        return _first_seen_pairs(self.const_rg._assignment, self._assignment)

    @property
    def to_host_map(self) -> Optional[list[int]]:
        """For each group of this grouping, the first group of ``const_rg`` inside it (None when constant)."""
        if self.is_const:
            return None
        return _first_seen_pairs(self._assignment, self.const_rg._assignment)

    def members(self, group: int) -> list[int]:
        """The replicas of ``group``, in increasing order."""
        return [r for r, g in enumerate(self._assignment) if g == group]

    def groups(self) -> list[list[int]]:
        return [self.members(g) for g in range(self.num_groups)]

    def transpose(self) -> "ReplicaGrouping":
        """The grouping whose group k holds the k-th member of every group of this one."""
        position = {r: k for members in self.groups() for k, r in enumerate(members)}
        raw = [position[r] for r in range(self.num_replicas)]
        order = list(dict.fromkeys(raw))
        return ReplicaGrouping._create(self._ir, [order.index(g) for g in raw])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReplicaGrouping):
            raise TypeError(f"cannot compare a ReplicaGrouping with {type(other).__name__}")
        return self._ir is other._ir and self._assignment == other._assignment

    def __hash__(self) -> int:
        return hash((self._ir.id, tuple(self._assignment)))

    def __repr__(self) -> str:
        if self._stride is None:
            return f"ReplicaGrouping(assignment={self._assignment})"
        return (f"ReplicaGrouping(num_replicas={self.num_replicas}, stride={self._stride}, "
                f"group_size={self.group_size}, num_groups={self.num_groups})")


def _constant_stride(assignment: list[int]) -> Optional[int]:
    """The stride that rebuilds ``assignment`` with ``strided_assignment``, or None."""
    replicas = len(assignment)
    groups = max(assignment) + 1
    size = replicas // groups
    first = [r for r, g in enumerate(assignment) if g == 0]
    stride = first[1] - first[0] if size > 1 else 1
    try:
        return stride if strided_assignment(replicas, stride, size) == assignment else None
    except ValueError:
        return None


def _member_gaps(assignment: list[int]) -> dict[int, list[int]]:
    """For each group, the distances between its consecutive members."""
    members: dict[int, list[int]] = {}
    for replica, group in enumerate(assignment):
        members.setdefault(group, []).append(replica)
    return {group: [b - a for a, b in zip(rs, rs[1:])] for group, rs in members.items()}


def _refining_stride_and_size(assignment: list[int]) -> tuple[int, int]:
    """Stride and group size of ``const_rg``: the smallest gap between members is the stride; each group
    is cut where a larger gap opens, and the group size is the gcd of the pieces' sizes."""
    gaps = _member_gaps(assignment)
    stride = min((g for group_gaps in gaps.values() for g in group_gaps), default=1)
    pieces: list[int] = []
    for group_gaps in gaps.values():
        size = 1
        for gap in group_gaps:
            if gap > stride:
                pieces.append(size)
                size = 0
            size += 1
        pieces.append(size)
    group_size = reduce(gcd, pieces)
    return (stride if group_size > 1 else 1), group_size


def _first_seen_pairs(keys: list[int], values: list[int]) -> list[int]:
    """Walking the replicas in order, the value at the first replica of each key, in key order."""
    found: dict[int, int] = {}
    for key, value in zip(keys, values):
        found.setdefault(key, value)
    return [found[key] for key in sorted(found)]
