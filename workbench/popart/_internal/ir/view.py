"""``_ir.view``: regions of tensors, as PopART names the parts of a tensor an op reads or writes."""
from __future__ import annotations

from typing import Sequence


class Region:
    """A box of a tensor: ``lower`` inclusive to ``upper`` exclusive per dimension."""

    __slots__ = ("_lower", "_upper")

    def __init__(self, lower: Sequence[int], upper: Sequence[int]):
        if len(lower) != len(upper):
            raise ValueError(f"a Region needs one lower and one upper bound per dimension, got {len(lower)} "
                             f"lower and {len(upper)} upper bounds")
        self._lower, self._upper = tuple(int(v) for v in lower), tuple(int(v) for v in upper)

    @staticmethod
    def getFull(shape: Sequence[int]) -> "Region":
        return Region([0] * len(shape), list(shape))

    @staticmethod
    def getEmpty(rank: int) -> "Region":
        return Region([0] * rank, [0] * rank)

    def rank(self) -> int:
        return len(self._lower)

    def nelms(self) -> int:
        count = 1
        for lower, upper in zip(self._lower, self._upper):
            count *= max(upper - lower, 0)
        return count

    def isEmpty(self) -> bool:
        return self.nelms() == 0

    def getLower(self) -> list[int]:
        return list(self._lower)

    def getUpper(self) -> list[int]:
        return list(self._upper)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Region) and (other._lower, other._upper) == (self._lower, self._upper)

    def __hash__(self) -> int:
        return hash((self._lower, self._upper))

    def __repr__(self) -> str:
        return f"Region(lower={list(self._lower)}, upper={list(self._upper)})"
