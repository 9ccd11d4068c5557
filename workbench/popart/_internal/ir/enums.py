"""Small PopART value types that popxl and popxl-addons pass to the binding."""
from __future__ import annotations

from enum import Enum
from typing import Optional


class CollectiveOperator(Enum):
    """How a collective combines the replicas' values."""

    Add = "add"
    Mean = "mean"
    Mul = "mul"
    Min = "min"
    Max = "max"
    LogicalAnd = "and"
    LogicalOr = "or"
    SquareAdd = "square_add"
    Local = "local"


class OptionalFloat:
    """A float or nothing (PopART's ``OptionalFloat``)."""

    __slots__ = ("_value",)

    def __init__(self, value: Optional[float] = None):
        self._value = None if value is None else float(value)

    def __bool__(self) -> bool:
        return self._value is not None

    def value(self) -> float:
        if self._value is None:
            raise ValueError("this OptionalFloat is empty")
        return self._value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OptionalFloat) and other._value == self._value

    def __repr__(self) -> str:
        return f"OptionalFloat({self._value!r})"
