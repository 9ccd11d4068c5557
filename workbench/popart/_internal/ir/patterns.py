"""``_ir.patterns``: PopART's graph rewrite patterns, as a level recorded on the Ir.

The workbench runs popxl programs as built (ops are in place only where popxl asked for it), so a level
changes no op; ``Ir.setPatterns`` records it and ``Ir.getPatterns`` reads it back.
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
        if isinstance(level, list):  # PopART also takes a list of pattern names
            level = PatternsLevel.Minimal
        if not isinstance(level, PatternsLevel):
            raise TypeError(f"Patterns takes a PatternsLevel (NoPatterns, Minimal, Default or All), got {level!r}")
        self._level = level
        self._inplace = level is not PatternsLevel.NoPatterns

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
