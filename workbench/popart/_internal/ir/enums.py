"""Small PopART value types that popxl and popxl-addons pass to the binding: popxl's own, under PopART's names."""
from workbench.popxl.ops.collectives.collectives import CollectiveOperator
from workbench.popxl.ops.utils import OptionalFloat

__all__ = ["CollectiveOperator", "OptionalFloat"]
