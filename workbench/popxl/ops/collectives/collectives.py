"""popxl.ops.collectives.collectives: the reduction names of collectives and PopART's operator for each."""
from workbench.ops.collectives import CollectiveOps

_OPERATORS = {"add": "Add", "mean": "Mean", "mul": "Mul", "min": "Min", "max": "Max", "and": "LogicalAnd",
              "or": "LogicalOr", "square_add": "SquareAdd", "local": "Local"}


def to_collective_op(op: CollectiveOps):
    """PopART's ``CollectiveOperator`` for a reduction name (``'add'`` -> ``CollectiveOperator.Add``)."""
    from workbench.popart._internal.ir import CollectiveOperator

    try:
        return CollectiveOperator[_OPERATORS[op]]
    except (KeyError, TypeError):
        raise ValueError(f"unknown collective op {op!r}; expected one of {sorted(_OPERATORS)}") from None
