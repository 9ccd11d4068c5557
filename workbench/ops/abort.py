"""abort: stop the program, always (no input) or when its one-element input is non-zero, as Poplar's
Abort and AbortOnCondition programs do (the host sees a runtime error)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from workbench.ir import Tensor
from workbench.ir.errors import poplar_runtime_error

from .registry import OpDef, create_op, register

__all__: list[str] = []


def _infer(specs, attrs) -> list:
    if specs and int(np.prod(specs[0].shape)) > 1:
        raise ValueError(f"abort: the condition must hold one element, got shape {list(specs[0].shape)}")
    return []


def _kernel(op, env):
    def run(*condition):
        if not condition:
            raise poplar_runtime_error("Abort Program: the program aborted unconditionally")
        if np.any(condition[0]):
            raise poplar_runtime_error(f"Abort Program: the condition '{op.inputs[0].name}' is true")
    return run


register(OpDef("abort", _infer, _kernel, effect=True, popart_class="AbortOp"))


def abort(condition: Optional[Tensor] = None) -> None:
    """Abort the program when it reaches this op: always, or where ``condition`` (one element) is
    non-zero."""
    create_op("abort", [] if condition is None else [condition], {})
