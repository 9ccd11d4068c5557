"""Small PopART value types that popxl and popxl-addons pass to the binding: popxl's own, under PopART's names."""
from typing import Optional

from workbench.popxl.ops.collectives.collectives import CollectiveOperator
from workbench.popxl.ops.utils import OptionalFloat

__all__ = ["CollectiveOperator", "OptionalFloat", "NumInputs", "OperatorIdentifier"]


class NumInputs:
    """How many inputs an op type takes: from ``min`` to ``max`` (-1: no limit)."""

    __slots__ = ("min", "max")

    def __init__(self, min: int = 0, max: int = 0):  # noqa: A002 - PopART's names
        self.min, self.max = int(min), int(max)


class OperatorIdentifier:
    """PopART's identifier of an op type: its domain, type and version (and its input and output counts)."""

    __slots__ = ("domain", "type", "version", "numInputs", "numOutputs")

    def __init__(self, domain: str, type: str, version: int,  # noqa: A002 - PopART's names
                 numInputs: Optional[NumInputs] = None, numOutputs: int = 0):
        self.domain, self.type, self.version = str(domain), str(type), int(version)
        self.numInputs = numInputs if numInputs is not None else NumInputs()
        self.numOutputs = int(numOutputs)

    def __repr__(self) -> str:
        return f"{self.domain}.{self.type}:{self.version}"
