"""What the workbench's PopART supports, and PopART's version and reserved names."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.onnx.lowering import supported

VERSION = (3, 4, 0)


@dataclass(frozen=True, slots=True)
class OperatorIdentifier:
    domain: str
    type: str
    version: int


def getSupportedOperations(includePrivate: bool = False) -> list[OperatorIdentifier]:
    """Every (domain, op type, version) a session can lower."""
    return [OperatorIdentifier(domain, op_type, version) for domain, op_type, version in supported()]


def getUnsupportedOperations(opsetVersion: int) -> list[OperatorIdentifier]:
    """The ai.onnx op versions in force at ``opsetVersion`` that a session cannot lower."""
    from .opsets import schemas

    have = {(op_type, version) for domain, op_type, version in supported() if domain == "ai.onnx"}
    return [OperatorIdentifier("ai.onnx", name, schema.since_version)
            for name, schema in sorted(schemas(opsetVersion).items()) if (name, schema.since_version) not in have]


def versionNumber() -> tuple[int, int, int]:
    return VERSION


def versionString() -> str:
    return ".".join(map(str, VERSION))


def packageHash() -> str:
    return "workbench"
