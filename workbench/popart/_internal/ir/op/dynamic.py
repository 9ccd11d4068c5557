"""``_ir.op.dynamic``: PopART's op classes of that namespace, made from the op registry."""
from . import SPACES

globals().update(SPACES["dynamic"])
__all__ = sorted(SPACES["dynamic"])
