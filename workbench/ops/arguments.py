"""Argument checks shared by op front-ends that read a tensor's shape before building the op."""
from __future__ import annotations

from workbench.ir import Tensor


def expect_tensors(op_type: str, **arguments) -> None:
    """Raise popxl's TypeError when an argument that must be a Tensor is something else."""
    for name, value in arguments.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"{op_type}: {name} must be a Tensor, got {type(value).__name__} {value!r}")
