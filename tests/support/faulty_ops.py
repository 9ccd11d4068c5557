"""Op types whose kernels misbehave on purpose, for the tests of failures.

Each is a pytest fixture: the op type is registered for the test that asks for it and removed
afterwards, so that no later test (one that walks the whole registry) ever sees it."""
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import pytest

from workbench.ops.registry import REGISTRY, OpDef, register
from workbench.ops.rules import same_spec


@contextmanager
def registered(definition: OpDef) -> Iterator[str]:
    """``definition`` in the op registry while the block runs; its type name is yielded."""
    register(definition)
    try:
        yield definition.type
    finally:
        del REGISTRY[definition.type]


def _exploding_kernel(op, env):
    def run(x):
        if (x < 0).any():
            raise FloatingPointError("negative input")
        return x.copy()
    return run


@pytest.fixture
def exploding_op() -> Iterator[str]:
    """``test_explode``: fails where its input is negative, as a faulty kernel would."""
    with registered(OpDef("test_explode", same_spec, _exploding_kernel)) as op_type:
        yield op_type


@pytest.fixture
def widening_op() -> Iterator[str]:
    """``test_widen``: returns float64 for a float32 input, as a faulty kernel would."""
    with registered(OpDef("test_widen", same_spec, lambda op, env: lambda x: x.astype(np.float64))) as op_type:
        yield op_type
