"""``popart.DebugContext``: the name (and parent) an op or tensor is created under."""
from __future__ import annotations

from typing import Optional


class DebugContext:
    """``DebugContext("name")`` or ``DebugContext(parent, "name")``; builders take it for ``debugContext``."""

    def __init__(self, *args: object):
        parent: Optional[DebugContext] = next((a for a in args if isinstance(a, DebugContext)), None)
        names = [a for a in args if isinstance(a, str)]
        own = names[0] if names else ""
        self.name = f"{parent.name}/{own}" if parent is not None and parent.name and own else (own or
                                                                                              (parent.name if parent else ""))

    def __repr__(self) -> str:
        return f"DebugContext({self.name!r})"
