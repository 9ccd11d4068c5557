"""``popart.Patterns``: which of PopART's graph rewrites a session applies.

The workbench lowers each ONNX node straight to its ops, so no rewrite changes a program here; what
Patterns keeps is PopART's bookkeeping, with its names and checks: the patterns of each level
(``NoPatterns``, ``Minimal``: the mandatory ones, ``Default``, ``All``), toggles by name or property,
an error for an unknown name or for disabling a mandatory pattern, and, at session creation, an error
when a mandatory pattern is off unless ``enableRuntimeAsserts(False)``.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from .errors import popart_exception
from .node_attributes import EXCLUDE_PATTERNS
from .options import PatternsLevel

# PopART's pre-alias patterns: name -> (enabled by default, mandatory).
PATTERNS: dict[str, tuple[bool, bool]] = {
    "AbsGradOp": (True, True), "AllReduceToIdentity": (True, True), "Atan2Arg0GradOp": (True, True),
    "Atan2Arg1GradOp": (True, True), "ConvDataGrad": (True, True), "ConvFlipWeightsDoubleFlip": (True, False),
    "ConvFlipWeightsGradOp": (True, True), "ConvTranspose": (True, True), "CosGradOp": (True, True),
    "CoshOp": (True, True), "DecomposeBinaryConstScalar": (True, False), "DivArg0GradOp": (True, True),
    "DivArg1GradOp": (True, True), "ExpGradOp": (True, True), "ExpandCast": (True, False),
    "Expm1GradOp": (True, True), "FmodArg0GradOp": (True, True), "InitAccumulate": (True, False),
    "LSTMOp": (False, False), "LambSerialisedWeight": (True, False), "Log1pGradOp": (True, True),
    "LogGradOp": (True, True), "LoopScanOut": (True, True), "MatMulLhsGradOp": (True, True),
    "MatMulOp": (True, True), "MatMulRhsGradOp": (True, True), "MulArgGradOp": (True, True),
    "NegativeOneScale": (True, False), "NlllWithSoftmaxGradDirect": (True, False), "OpToIdentity": (True, False),
    "PackedDataBlock": (True, False), "PadSum": (True, False), "PostNRepl": (True, False),
    "PowArg0GradOp": (True, True), "PowArg1GradOp": (True, True), "PreUniRepl": (True, False),
    "RandomNormalLikeOpPattern": (True, True), "RandomUniformLikeOpPattern": (True, True),
    "ReciprocalGradOp": (True, True), "RemoveUnnecessaryLossGradCast": (True, False), "ScanToLoop": (True, True),
    "SinGradOp": (True, True), "Slice2SliceSubsample": (False, False), "SoftmaxGradDirect": (True, False),
    "SplitGather": (False, False), "SplitGradOpToConcat": (True, False), "SplitOp": (True, False),
    "SqrtGradOp": (True, True), "SubtractArg1GradOp": (True, True), "SumToAdd": (True, False),
    "TiedGather": (False, False), "TiedGatherAccumulate": (False, False),
    "TransposeToIdentityOrReshapePattern": (True, False), "UpsampleToResize": (True, False),
    "ZerosLikeOpPattern": (True, True),
}
# The patterns with a Python property of their own (the property's name, the pattern's).
_PROPERTIES = {"PreUniRepl": "PreUniRepl", "PostNRepl": "PostNRepl", "SoftMaxGradDirect": "SoftmaxGradDirect",
               "NlllWithSoftMaxGradDirect": "NlllWithSoftmaxGradDirect", "OpToIdentity": "OpToIdentity",
               "SubtractArg1GradOp": "SubtractArg1GradOp", "MulArgGradOp": "MulArgGradOp", "MatMulOp": "MatMulOp",
               "MatMulLhsGradOp": "MatMulLhsGradOp", "MatMulRhsGradOp": "MatMulRhsGradOp"}


class Patterns:
    """``Patterns()`` (the Default level), ``Patterns(PatternsLevel.X)`` or ``Patterns(["Name", ...])`` (those
    only); ``enablePattern(name, bool)``, ``isPatternEnabled(name)`` and a property per common pattern."""

    def __init__(self, arg: Optional[Any] = None):
        level = PatternsLevel.Default if arg is None else arg
        self._settings: dict[str, bool] = {}
        self._inplace = False
        self._update_priorities = False
        self._runtime_asserts = True
        self.level: Optional[PatternsLevel]  # None for a list of pattern names
        if isinstance(level, PatternsLevel):
            self.level = level
            if level is not PatternsLevel.NoPatterns:
                self._settings = {name: (mandatory if level is PatternsLevel.Minimal else
                                         True if level is PatternsLevel.All else default)
                                  for name, (default, mandatory) in PATTERNS.items()}
            self._inplace = level in (PatternsLevel.Default, PatternsLevel.All)
            return
        if isinstance(level, str) or not isinstance(level, Iterable):
            raise TypeError(f"Patterns takes a PatternsLevel or a list of pattern names, got {arg!r}")
        self.level = None
        for name in level:
            if name == "InPlace":
                self._inplace = True
            elif name == "UpdateInplacePrioritiesForIpu":
                self._update_priorities = True
            else:
                self._settings[_known(name)] = True

    def enablePattern(self, name: str, enabled: bool) -> "Patterns":
        if name == "InPlace":
            self._inplace = bool(enabled)
        elif name == "UpdateInplacePrioritiesForIpu":
            self._update_priorities = bool(enabled)
        else:
            if not enabled and PATTERNS[_known(name)][1]:
                raise popart_exception(f"Pattern '{name}' is mandatory and cannot be disabled")
            self._settings[_known(name)] = bool(enabled)
        return self

    def isPatternEnabled(self, name: str) -> bool:
        if name == "InPlace":
            return self._inplace
        if name == "UpdateInplacePrioritiesForIpu":
            return self._update_priorities
        return self._settings.get(_known(name), False)

    def enableInPlace(self, enabled: bool) -> "Patterns":
        self._inplace = bool(enabled)
        return self

    def isInPlaceEnabled(self) -> bool:
        return self._inplace

    InPlace = property(isInPlaceEnabled, enableInPlace)

    def enableUpdateInplacePrioritiesForIpu(self, enabled: bool) -> "Patterns":
        self._update_priorities = bool(enabled)
        return self

    def isUpdateInplacePrioritiesForIpuEnabled(self) -> bool:
        return self._update_priorities

    def enableRuntimeAsserts(self, enabled: bool) -> "Patterns":
        self._runtime_asserts = bool(enabled)
        return self

    def check_mandatory(self) -> None:
        """What a session checks: every mandatory pattern is on (unless runtime asserts are off)."""
        if not self._runtime_asserts:
            return
        off = [name for name, (_, mandatory) in PATTERNS.items() if mandatory and not self._settings.get(name)]
        if off:
            raise popart_exception(f"Pattern '{off[0]}' must be enabled (and {len(off) - 1} other mandatory "
                                   "patterns): use PatternsLevel.Minimal or higher, or "
                                   "patterns.enableRuntimeAsserts(False)")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Patterns) and (self._settings, self._inplace) == (other._settings, other._inplace)

    def __repr__(self) -> str:
        return "".join(f"{name} " for name in sorted(self._settings))


def session_patterns(patterns: Optional[Patterns]) -> Patterns:
    """The patterns a session is made with (Default when none are given), checked."""
    if patterns is None:
        return Patterns()
    if not isinstance(patterns, Patterns):
        raise TypeError(f"patterns must be a popart.Patterns, got {type(patterns).__name__}")
    patterns.check_mandatory()
    return patterns


def check_exclusions(nodes: Iterable[Any]) -> None:
    """Every pattern a node excludes (``builder.excludePatterns``) must be one of PopART's."""
    for node in nodes:
        for attribute in node.attribute:
            if attribute.name == EXCLUDE_PATTERNS:
                for name in (s.decode() for s in attribute.strings):
                    if name not in PATTERNS:
                        raise popart_exception(f"Invalid pattern name '{name}' in Op::excludePatterns of node "
                                               f"'{node.name}'; expected one of PopART's patterns, such as "
                                               "PreUniRepl or PostNRepl")


def _known(name: str) -> str:
    if name in PATTERNS:
        return name
    hint = ", did you mean InPlace?" if name == "Inplace" else ""
    raise popart_exception(f"Unknown pattern {name}{hint}")


def _pattern_property(pattern: str) -> property:
    return property(lambda self: self.isPatternEnabled(pattern),
                    lambda self, enabled: self.enablePattern(pattern, enabled))


for _property, _pattern in _PROPERTIES.items():
    setattr(Patterns, _property, _pattern_property(_pattern))
