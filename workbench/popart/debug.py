"""``popart.DebugContext``: the name (and parent) an op or tensor is created under, and where in the
program it was made (the debug info's location)."""
from __future__ import annotations

import sys
from typing import Optional


class DebugContext:
    """``DebugContext("name")``, ``DebugContext(parent, "name")`` with a parent DebugContext or
    DebugInfo; builders take it for ``debugContext``."""

    def __init__(self, *args: object):
        from .debug_info import DebugInfo

        parent_info: Optional[DebugInfo] = next((a for a in args if isinstance(a, DebugInfo)), None)
        parent: Optional[DebugContext] = next((a for a in args if isinstance(a, DebugContext)), None)
        if parent is None and parent_info is not None:
            parent = parent_info.context
        names = [a for a in args if isinstance(a, str)]
        own = names[0] if names else ""
        self.own_name = own
        self.parent_info = parent_info
        if parent is not None and parent.name and own:
            self.name = f"{parent.name}/{own}"
        else:
            self.name = own or (parent.name if parent is not None else "")
        caller = sys._getframe(1)
        self.location: tuple[str, str, int] = (caller.f_code.co_filename, caller.f_code.co_name, caller.f_lineno)

    def getPathName(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DebugContext({self.name!r})"
