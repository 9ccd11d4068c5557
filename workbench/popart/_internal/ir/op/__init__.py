"""``_ir.op``: one class per PopART op class, made from the op registry (``OpDef.popart_class``).

Classes in PopART's sub-namespaces live in ``op.exchange``, ``op.collectives`` and ``op.dynamic``.
"""
from workbench.ops.registry import REGISTRY

from ..op_classes import IpuCopyBase, SubgraphOp, op_class
from ..op_view import Op as Op  # noqa: F401  (PopART binds the base class here too)
from enum import Enum


class MatMulPartialsType(Enum):
    """The type of a matmul's partial sums."""

    HALF = "HALF"
    FLOAT = "FLOAT"


def _populate() -> dict[str, dict[str, type]]:
    """The view classes by sub-namespace ('' for ``op`` itself), one per distinct PopART class."""
    spaces: dict[str, dict[str, type]] = {"": {}, "exchange": {}, "collectives": {}, "dynamic": {}}
    for definition in REGISTRY.values():
        if not definition.popart_class:
            continue
        space, _, name = definition.popart_class.rpartition(".")
        spaces.setdefault(space, {})[name] = op_class(definition.popart_class)
    return spaces


SPACES = _populate()
globals().update(SPACES[""])

from . import collectives, dynamic, exchange  # noqa: E402  (after the classes they read)

__all__ = sorted(SPACES[""]) + ["MatMulPartialsType", "collectives", "dynamic", "exchange", "SubgraphOp",
                                "IpuCopyBase"]
