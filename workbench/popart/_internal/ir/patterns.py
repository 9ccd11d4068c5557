"""``_ir.patterns``: PopART's graph rewrite patterns, as a level recorded on the Ir.

``Ir.setPatterns`` records a level and ``Ir.getPatterns`` reads it back. Of PopART's patterns, the
workbench has OpToIdentity (``Ir.applyPreAliasPatterns``, at the Default and All levels) and Inplace, which
``Ir.applyInplacePattern`` applies whatever the level, as PopART's does; ``isInPlaceEnabled`` says whether
PopART would apply it when it prepares an Ir (Default and All).
"""
from __future__ import annotations

from enum import Enum


class PatternsLevel(Enum):
    NoPatterns = "NoPatterns"
    Minimal = "Minimal"
    Default = "Default"
    All = "All"


class Patterns:
    """A set of patterns, by level (PopART's ``Patterns``)."""

    __slots__ = ("_level", "_inplace")

    def __init__(self, level: PatternsLevel = PatternsLevel.Default):
        names = None
        if isinstance(level, list):  # PopART also takes a list of pattern names
            level, names = PatternsLevel.Minimal, level
        if not isinstance(level, PatternsLevel):
            raise TypeError(f"Patterns takes a PatternsLevel (NoPatterns, Minimal, Default or All), got {level!r}")
        self._level = level
        self._inplace = "InPlace" in names if names is not None else level in (PatternsLevel.Default,
                                                                               PatternsLevel.All)

    @property
    def level(self) -> PatternsLevel:
        return self._level

    def isInPlaceEnabled(self) -> bool:
        return self._inplace

    def enableInPlace(self, value: bool) -> "Patterns":
        self._inplace = bool(value)
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Patterns) and (other._level, other._inplace) == (self._level, self._inplace)

    def __repr__(self) -> str:
        return f"Patterns({self._level.name})"
