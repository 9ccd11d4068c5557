"""``_ir.op.collectives``: PopART's op classes of that namespace, made from the op registry."""
from . import SPACES

globals().update(SPACES["collectives"])
__all__ = sorted(SPACES["collectives"])
