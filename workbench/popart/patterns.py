"""``popart.Patterns``: the graph rewrites PopART would apply. The workbench lowers models as they
are, so patterns are recorded (and readable) but change nothing."""
from __future__ import annotations

from typing import Any, Iterable, Optional

from .options import PatternsLevel


class Patterns:
    """``Patterns()``, ``Patterns(PatternsLevel.X)`` or ``Patterns(["PatternName", ...])``."""

    def __init__(self, arg: Optional[Any] = None):
        self.level = arg if isinstance(arg, PatternsLevel) else PatternsLevel.Default
        self._enabled: dict[str, bool] = {name: True for name in (arg or ()) if isinstance(arg, Iterable)
                                          and not isinstance(arg, (str, PatternsLevel))}
        self.inplaceEnabled = True
        self.updateInplacePrioritiesForIpu = True

    def enablePattern(self, name: str, enabled: bool) -> "Patterns":
        self._enabled[name] = bool(enabled)
        return self

    def isPatternEnabled(self, name: str) -> bool:
        return self._enabled.get(name, self.level is not PatternsLevel.NoPatterns)

    def enableRuntimeAsserts(self, enabled: bool) -> "Patterns":
        return self

    def __repr__(self) -> str:
        return f"Patterns({self.level.name})"
