"""``_ir.op.exchange``: PopART's op classes of that namespace, made from the op registry."""
from . import SPACES

globals().update(SPACES["exchange"])
__all__ = sorted(SPACES["exchange"])
