"""popxl.ops.collectives.collectives: the reduction names of collectives and PopART's operator for each."""
from enum import Enum

from workbench.ops.collectives import CollectiveOps


class CollectiveOperator(Enum):
    """How a collective combines the replicas' values (PopART's ``CollectiveOperator``)."""

    Add = "add"
    Mean = "mean"
    Mul = "mul"
    Min = "min"
    Max = "max"
    LogicalAnd = "and"
    LogicalOr = "or"
    SquareAdd = "square_add"
    Local = "local"


def to_collective_op(op: CollectiveOps) -> CollectiveOperator:
    """PopART's ``CollectiveOperator`` for a reduction name (``'add'`` -> ``CollectiveOperator.Add``)."""
    try:
        return CollectiveOperator(op)
    except ValueError:
        raise ValueError(f"unknown collective op {op!r}; expected one of "
                         f"{sorted(o.value for o in CollectiveOperator)}") from None
