"""How a weight is shared between replicas, as PopART's VariableSettings says it, kept in the model's
metadata as text (``Consecutive:2:OnePerGroup``), and turned into popxl's replica grouping."""
from __future__ import annotations

KINDS = ("All", "Consecutive", "Orthogonal", "Ungrouped")
MODES = ("OnePerGroup", "AllReplicas")


def encode(kind: str, size: int, mode: str) -> str:
    return f"{kind}:{int(size)}:{mode}"


def decode(text: str) -> tuple[str, int, str]:
    kind, size, mode = text.split(":")
    if kind not in KINDS or mode not in MODES:
        raise ValueError(f"bad variable settings {text!r}: expected <{'|'.join(KINDS)}>:<size>:<{'|'.join(MODES)}>")
    return kind, int(size), mode


def stride_and_size(kind: str, size: int, replicas: int) -> tuple[int, int]:
    """popxl's ``replica_grouping(stride, group_size)`` of a CommGroup over ``replicas`` replicas."""
    if kind == "All":
        return 1, replicas
    if kind == "Ungrouped":
        return 1, 1
    if size <= 0 or replicas % size:
        raise ValueError(f"a {kind} CommGroup of size {size} does not divide {replicas} replicas")
    return (1, size) if kind == "Consecutive" else (replicas // size, size)


def group_count(text: str, replicas: int) -> int:
    kind, size, _ = decode(text)
    return replicas // stride_and_size(kind, size, replicas)[1]


def grouping(text: str, replicas: int) -> tuple[int, int, str]:
    """(stride, group size, popxl retrieval mode) of encoded settings over ``replicas`` replicas."""
    kind, size, mode = decode(text)
    stride, group_size = stride_and_size(kind, size, replicas)
    return stride, group_size, "all_replicas" if mode == "AllReplicas" else "one_per_group"
